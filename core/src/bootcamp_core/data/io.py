"""JSONL and Parquet files of generated records, lossless both ways.

Writers stream (nothing holds a whole split) and are atomic: they write ``<name>.tmp-<pid>`` beside the target and
rename it into place only when complete, so an interrupted run never leaves a half-written file under the real name.

In Parquet every copy of the identity is a JSON string (DESIGN.md). A prompt message's text goes in ``content``; a
list of content parts (vision tasks) goes, as JSON text, in ``content_parts`` with ``content`` null, so the two
never mix up on the way back.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from bootcamp_core.data.records import normalize_record

__all__ = [
    "AtomicFile",
    "JsonlWriter",
    "ParquetWriter",
    "read_jsonl",
    "read_parquet",
    "read_records",
    "write_records",
    "parquet_schema",
    "record_to_row",
    "row_to_record",
]

PARQUET_BATCH_ROWS = 4096


class AtomicFile:
    """A file written under a temporary name and renamed into place on success (removed on failure)."""

    def __init__(self, path: str | os.PathLike, mode: str = "w") -> None:
        self.path = Path(path)
        self.temporary = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        self.mode = mode
        self.handle: IO[Any] | None = None

    def __enter__(self) -> IO[Any]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        encoding = None if "b" in self.mode else "utf-8"
        self.handle = open(self.temporary, self.mode, encoding=encoding, newline=None if encoding is None else "\n")
        return self.handle

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self.handle is not None
        self.handle.close()
        if exc_type is None:
            os.replace(self.temporary, self.path)
        else:
            self.temporary.unlink(missing_ok=True)


_encode = json.JSONEncoder(ensure_ascii=False).encode
# Raw line and paragraph separators are valid JSON but split lines for readers that use str.splitlines()
_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def dumps(value: Any) -> str:
    """The one JSON spelling used in every record line: UTF-8 text, one physical line whatever the reader."""
    text = _encode(value)
    if "\u2028" in text or "\u2029" in text or "\x85" in text:
        return text.translate(_SEPARATORS)
    return text


class JsonlWriter:
    """Streams records (dicts or pre-serialised lines) to a JSONL file, atomically."""

    def __init__(self, path: str | os.PathLike) -> None:
        self._atomic = AtomicFile(path, "w")
        self._handle: IO[str] | None = None
        self.count = 0

    def __enter__(self) -> JsonlWriter:
        self._handle = self._atomic.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._atomic.__exit__(*exc)

    def write(self, record: dict) -> None:
        self.write_line(dumps(record))

    def write_line(self, line: str) -> None:
        assert self._handle is not None, "use JsonlWriter as a context manager"
        self._handle.write(line)
        self._handle.write("\n")
        self.count += 1


def read_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Records of a JSONL file, identities as objects. A broken line is an error naming file and line."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not valid JSON ({error.msg}, column {error.colno})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object")
            yield normalize_record(record)


# ----------------------------------------------------------------------------------------------------- parquet
def parquet_schema():
    import pyarrow as pa

    string = pa.string()
    return pa.schema(
        [
            ("data_source", string),
            ("prompt", pa.list_(pa.struct([("role", string), ("content", string), ("content_parts", string)]))),
            ("reward_model", pa.struct([("ground_truth", string), ("style", string)])),
            (
                "extra_info",
                pa.struct(
                    [
                        ("index", pa.int64()),
                        ("split", string),
                        ("generator_name", string),
                        (
                            "tools_kwargs",
                            pa.map_(string, pa.struct([("create_kwargs", pa.struct([("identity", string)]))])),
                        ),
                        ("need_tools_kwargs", pa.bool_()),
                        ("interaction_kwargs", pa.struct([("name", string), ("identity", string)])),
                        (
                            "bootcamp",
                            pa.struct(
                                [
                                    ("generator", string),
                                    ("tools", pa.list_(string)),
                                    ("interaction", string),
                                    ("reward", string),
                                    ("versions", pa.map_(string, string)),
                                ]
                            ),
                        ),
                    ]
                ),
            ),
        ]
    )


def _message_to_parquet(message: dict) -> dict:
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return {"role": message.get("role"), "content": content, "content_parts": None}
    return {"role": message.get("role"), "content": None, "content_parts": dumps(content)}


def _message_from_parquet(message: dict) -> dict:
    parts = message.get("content_parts")
    return {"role": message["role"], "content": message["content"] if parts is None else json.loads(parts)}


def record_to_row(record: dict) -> dict:
    """A record in Parquet form: identities as JSON strings, maps as (key, value) lists."""
    extra = record.get("extra_info") or {}
    tools_kwargs = []
    for name, kwargs in (extra.get("tools_kwargs") or {}).items():
        create = dict((kwargs or {}).get("create_kwargs") or {})
        unknown = set(create) - {"identity"}
        if unknown or set(kwargs or {}) - {"create_kwargs"}:
            raise ValueError(f"tools_kwargs[{name!r}] holds more than create_kwargs.identity; Parquet keeps only that")
        tools_kwargs.append((name, {"create_kwargs": {"identity": dumps(create.get("identity"))}}))
    interaction = extra.get("interaction_kwargs")
    bootcamp = extra.get("bootcamp")
    return {
        "data_source": record.get("data_source"),
        "prompt": [_message_to_parquet(message) for message in record.get("prompt") or []],
        "reward_model": {
            "ground_truth": dumps((record.get("reward_model") or {}).get("ground_truth")),
            "style": (record.get("reward_model") or {}).get("style"),
        },
        "extra_info": {
            "index": extra.get("index"),
            "split": extra.get("split"),
            "generator_name": extra.get("generator_name"),
            "tools_kwargs": tools_kwargs,
            "need_tools_kwargs": extra.get("need_tools_kwargs"),
            "interaction_kwargs": None
            if interaction is None
            else {"name": interaction.get("name"), "identity": dumps(interaction.get("identity"))},
            "bootcamp": None
            if bootcamp is None
            else {**bootcamp, "versions": list((bootcamp.get("versions") or {}).items())},
        },
    }


def _pairs(value: Any) -> dict:
    """A map column as we write it (a list of pairs), or as other writers do (a struct, or JSON text): a dict."""
    if not value:
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value.items() if isinstance(value, dict) else value)


def row_to_record(row: dict) -> dict:
    """Inverse of :func:`record_to_row`."""
    extra = dict(row["extra_info"] or {})
    extra["tools_kwargs"] = _pairs(extra.get("tools_kwargs"))
    if extra.get("interaction_kwargs") is None:
        extra.pop("interaction_kwargs", None)
        order = ["index", "split", "generator_name", "tools_kwargs", "need_tools_kwargs", "bootcamp"]
    else:
        order = ["index", "split", "generator_name", "tools_kwargs", "need_tools_kwargs", "interaction_kwargs", "bootcamp"]
    bootcamp = extra.get("bootcamp")
    if bootcamp is None:
        extra.pop("bootcamp", None)
    else:
        bootcamp["versions"] = _pairs(bootcamp.get("versions"))
    record = {
        "data_source": row["data_source"],
        "prompt": [_message_from_parquet(message) for message in row["prompt"]],
        "reward_model": row["reward_model"],
        # our keys in our order, then whatever other writers added (verl's tool_selection)
        "extra_info": {**{key: extra[key] for key in order if key in extra},
                       **{key: value for key, value in extra.items() if key not in order}},
    }
    return normalize_record(record)


class ParquetWriter:
    """Streams records to a Parquet file in batches of ``batch_rows``, atomically."""

    def __init__(self, path: str | os.PathLike, batch_rows: int = PARQUET_BATCH_ROWS) -> None:
        self._atomic = AtomicFile(path, "wb")
        self.batch_rows = batch_rows
        self._rows: list[dict] = []
        self._writer = None
        self.count = 0

    def __enter__(self) -> ParquetWriter:
        import pyarrow.parquet as pq

        self.schema = parquet_schema()
        handle = self._atomic.__enter__()
        try:
            # identities repeat within a row, rarely across rows: zstd finds that, a dictionary does not (measured
            # faster)
            self._writer = pq.ParquetWriter(handle, self.schema, compression="zstd", use_dictionary=False)
        except BaseException:
            # __exit__ never runs for a failed __enter__: a Ctrl-C or SIGTERM here must not leave the temporary file
            self._atomic.__exit__(*sys.exc_info())
            raise
        return self

    def write(self, record: dict) -> None:
        self.write_row(record_to_row(record))

    def write_row(self, row: dict) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.batch_rows:
            self.flush()

    def write_table(self, table) -> None:
        """Append an Arrow table of rows already in Parquet form (same schema)."""
        self.flush()
        assert self._writer is not None
        self._writer.write_table(table)
        self.count += table.num_rows

    def flush(self) -> None:
        if not self._rows:
            return
        import pyarrow as pa

        assert self._writer is not None
        self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
        self.count += len(self._rows)
        self._rows = []

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.flush()
            if self._writer is not None:
                self._writer.close()
        finally:
            self._atomic.__exit__(exc_type, exc, tb)


def read_parquet(path: str | os.PathLike, batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[dict]:
    """Records of a Parquet file, identities as objects, streamed batch by batch."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=batch_rows):
        for row in batch.to_pylist():
            yield row_to_record(row)


def read_records(path: str | os.PathLike) -> Iterator[dict]:
    """Records of a ``.jsonl`` or ``.parquet`` file."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path)
    if suffix in {".jsonl", ".json", ".ndjson"}:
        return read_jsonl(path)
    raise ValueError(f"{path}: expected a .jsonl or .parquet file")


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write records to ``.jsonl`` or ``.parquet`` (by suffix); returns how many."""
    suffix = Path(path).suffix.lower()
    writer: JsonlWriter | ParquetWriter
    if suffix == ".parquet":
        writer = ParquetWriter(path)
    elif suffix in {".jsonl", ".ndjson"}:
        writer = JsonlWriter(path)
    else:
        raise ValueError(f"{path}: expected a .jsonl or .parquet file")
    with writer:
        for record in records:
            writer.write(record)
    return writer.count
