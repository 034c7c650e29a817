"""JSONL and Parquet files of generated records, lossless both ways.

Writers stream (nothing holds a whole split) and are atomic: they write ``<name>.tmp-<pid>`` beside the target and
rename it into place only when complete, so an interrupted run never leaves a half-written file under the real name.
A full disk (or quota) is a :class:`~bootcamp_core.plugin.errors.ConfigError` naming the file; the target keeps what
it held before.

Every layout comes from one value, :data:`~bootcamp_core.data.schema.RECORD_SCHEMA` (or an extension of it, passed as
``schema``): the Arrow schema, Parquet rows and the normalisation of what was read. In Parquet every copy of the
identity is a JSON string and there is no Arrow map column, so pyarrow, pandas and HF ``datasets`` all read the files.
A prompt message's text goes in ``content``; a list of content parts (vision tasks) goes, as JSON text, in
``content_parts`` with ``content`` null, so the two never mix up on the way back.

:func:`jsonl_lines` is the one reader of JSON lines: records, results and re-scoring all read through it, each deciding
what an unreadable line means for it. A file that is not UTF-8, or not Parquet, or a Parquet file without the
columns of records, is a ``ConfigError`` naming the file (and the line).
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

from bootcamp_core.data.schema import RECORD_SCHEMA, RecordSchema, dumps
from bootcamp_core.plugin.errors import ConfigError

__all__ = [
    "AtomicFile",
    "JsonLine",
    "JsonlWriter",
    "ParquetWriter",
    "dumps",
    "jsonl_lines",
    "read_jsonl",
    "read_parquet",
    "read_records",
    "write_records",
    "parquet_schema",
    "parquet_tool_names",
    "record_to_row",
    "row_to_record",
]

PARQUET_BATCH_ROWS = 4096

#: errno values of a write that found no room: the disk is full or the user's quota is spent
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def no_space_error(path: str | os.PathLike, error: OSError) -> ConfigError | None:
    """The one-line error for a write to ``path`` that failed for want of space, or None for another failure."""
    if error.errno not in _NO_SPACE:
        return None
    return ConfigError(f"cannot write {path}: {error.strerror or os.strerror(error.errno)}; free some space and "
                       "run again")


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
        try:
            self.handle.close()  # flushes: a full disk may only show here
        except OSError as error:
            if exc is None:
                exc = error
        if exc is None:
            os.replace(self.temporary, self.path)
            return
        self.temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError) and (full := no_space_error(self.path, exc)) is not None:
            raise full from None
        if exc_type is None:  # the close failed for another reason
            raise exc


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


@attrs.frozen
class JsonLine:
    """One non-blank line of a JSONL file: its number, its text as read, and its value, or why it has none."""

    number: int
    text: str
    value: Any = None
    error: str | None = None
    end: int = 0  # the byte offset in the file just after the line (where reading on starts)

    @property
    def raw(self) -> str:
        """The line as written, with its newline (a line cut by a kill gets one)."""
        return self.text if self.text.endswith("\n") else self.text + "\n"


def jsonl_lines(path: str | os.PathLike, *, offset: int = 0, first_line: int = 1) -> Iterator[JsonLine]:
    """Every non-blank line of a JSONL file, parsed; a line that is not a JSON object carries its ``error`` instead.

    The one reader of JSON lines: record files raise on such a line, results files skip it (a kill cuts the last
    line), re-scoring keeps it byte for byte. A line that is not UTF-8 carries the error ``not valid UTF-8 ...`` (its
    ``text`` decoded with replacement characters), so one cut character never makes a whole file unreadable.
    ``offset`` and ``first_line`` read on from a line's :attr:`JsonLine.end` (the next line's number), as when the
    evaluation reads the rest of a dataset its check kept the start of.
    """
    with open(path, "rb") as handle:
        if offset:
            handle.seek(offset)
        end = offset
        for number, data in enumerate(handle, first_line):
            end += len(data)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                yield JsonLine(number, data.decode("utf-8", "replace"),
                               error=f"not valid UTF-8 (byte 0x{data[error.start]:02x} at column {error.start + 1})",
                               end=end)
                continue
            if text.endswith("\r\n"):  # as text mode reads it
                text = text[:-2] + "\n"
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                yield JsonLine(number, text, error=f"not valid JSON ({error.msg}, column {error.colno})", end=end)
                continue
            if not isinstance(value, dict):
                yield JsonLine(number, text, error="expected a JSON object", end=end)
                continue
            yield JsonLine(number, text, value, end=end)


def read_jsonl(path: str | os.PathLike, schema: RecordSchema = RECORD_SCHEMA) -> Iterator[dict]:
    """Records of a JSONL file, identities as objects. A broken line (not JSON, not UTF-8) is a
    :class:`~bootcamp_core.plugin.errors.ConfigError` naming file and line."""
    for line in jsonl_lines(path):
        if line.error is not None:
            raise ConfigError(f"{path}:{line.number}: {line.error}")
        yield schema.normalize(line.value)


# ----------------------------------------------------------------------------------------------------- parquet
def parquet_schema(tool_names: Sequence[str] = (), schema: RecordSchema = RECORD_SCHEMA):
    """The Arrow schema of a record file whose records name ``tool_names``."""
    return schema.arrow(tool_names)


def parquet_tool_names(path: str | os.PathLike, schema: RecordSchema = RECORD_SCHEMA) -> list[str]:
    """The tool names a record file's ``tools_kwargs`` struct has fields for (from its footer; an earlier version's
    map column names none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pq.read_schema(path)
    names: set[str] = set()
    for path_names in schema.per_tool_paths():
        node = arrow.field(path_names[0]).type if path_names[0] in arrow.names else None
        for name in path_names[1:]:
            node = node.field(name).type if node is not None and pa.types.is_struct(node) and node.get_field_index(
                name) >= 0 else None
        if node is not None and pa.types.is_struct(node):
            names.update(node.field(index).name for index in range(node.num_fields))
    return sorted(names)


def record_to_row(record: dict, tool_names: Sequence[str] | None = None, schema: RecordSchema = RECORD_SCHEMA) -> dict:
    """A record in Parquet form (identities as JSON strings), over ``tool_names`` (default: the record's own)."""
    return schema.to_row(record, schema.tool_names([record]) if tool_names is None else tool_names)


def row_to_record(row: dict, schema: RecordSchema = RECORD_SCHEMA) -> dict:
    """Inverse of :func:`record_to_row`; also reads rows of earlier versions (Arrow map columns)."""
    return schema.from_row(row)


class ParquetWriter:
    """Streams records to a Parquet file in batches of ``batch_rows``, atomically.

    ``tool_names`` are every tool name the file's records use (its ``tools_kwargs`` struct has one field each).
    """

    def __init__(self, path: str | os.PathLike, batch_rows: int = PARQUET_BATCH_ROWS, *,
                 tool_names: Sequence[str] = (), schema: RecordSchema = RECORD_SCHEMA) -> None:
        self._atomic = AtomicFile(path, "wb")
        self.batch_rows = batch_rows
        self.tool_names = tuple(tool_names)
        self.record_schema = schema
        self._rows: list[dict] = []
        self._writer = None
        self.count = 0

    def __enter__(self) -> ParquetWriter:
        import pyarrow.parquet as pq

        self.schema = self.record_schema.arrow(self.tool_names)
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
        self.write_row(self.record_schema.to_row(record, self.tool_names))

    def write_row(self, row: dict) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.batch_rows:
            self.flush()

    def write_table(self, table) -> None:
        """Append an Arrow table of rows already in Parquet form (of this schema, over a subset of the tool names)."""
        self.flush()
        assert self._writer is not None
        self._writer.write_table(self.record_schema.conform(table, self.tool_names))
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
        except BaseException as error:
            if exc is not None:  # the first failure is the one to report; the file goes either way
                self._atomic.__exit__(exc_type, exc, tb)
                return
            # a failed last write (a full disk) must not rename an incomplete file into place
            self._atomic.__exit__(type(error), error, error.__traceback__)
            raise
        self._atomic.__exit__(exc_type, exc, tb)


def read_parquet(path: str | os.PathLike, batch_rows: int = PARQUET_BATCH_ROWS,
                 schema: RecordSchema = RECORD_SCHEMA) -> Iterator[dict]:
    """Records of a Parquet file (ours, an earlier version's, or a verl export), identities as objects, streamed.

    A file that is not Parquet, or whose columns are not those of records, is a
    :class:`~bootcamp_core.plugin.errors.ConfigError` naming it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ConfigError(f"{path}: not a Parquet file ({_first_line(error)})") from None
    columns = parquet.schema_arrow.names
    missing = [name for name in _RECORD_COLUMNS if name in {field.name for field in schema.fields}
               and name not in columns]
    if missing:
        shown = ", ".join(columns[:8]) + (", ..." if len(columns) > 8 else "")
        raise ConfigError(f"{path}: not a records file: no column {' or '.join(missing)} (its columns: "
                          f"{shown or 'none'})")
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                yield schema.from_row(row)
    except pa.ArrowException as error:
        raise ConfigError(f"{path}: unreadable Parquet data ({_first_line(error)})") from None


#: Columns without which a Parquet file holds no records (the rest may be missing in other writers' files)
_RECORD_COLUMNS = ("prompt", "extra_info")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def read_records(path: str | os.PathLike, schema: RecordSchema = RECORD_SCHEMA) -> Iterator[dict]:
    """Records of a ``.jsonl`` or ``.parquet`` file."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path, schema=schema)
    if suffix in {".jsonl", ".json", ".ndjson"}:
        return read_jsonl(path, schema)
    raise ValueError(f"{path}: expected a .jsonl or .parquet file")


def write_records(path: str | os.PathLike, records: Iterable[dict], *, schema: RecordSchema = RECORD_SCHEMA,
                  tool_names: Sequence[str] | None = None) -> int:
    """Write records to ``.jsonl`` or ``.parquet`` (by suffix); returns how many.

    Parquet needs the file's tool names before its first row: give ``tool_names`` to stream, else the records are
    read into memory first to find them.
    """
    suffix = Path(path).suffix.lower()
    writer: JsonlWriter | ParquetWriter
    if suffix == ".parquet":
        if tool_names is None:
            records = list(records)
            tool_names = schema.tool_names(records)
        writer = ParquetWriter(path, tool_names=tool_names, schema=schema)
    elif suffix in {".jsonl", ".ndjson"}:
        writer = JsonlWriter(path)
    else:
        raise ValueError(f"{path}: expected a .jsonl or .parquet file")
    with writer:
        for record in records:
            writer.write(record)
    return writer.count
