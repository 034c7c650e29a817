"""The evaluation's dataset: records read from a file, the selection of a run, and the check that each can run.

:class:`DatasetSelection` reads a run's selection once where it can: its check keeps the records it parsed, up to
:data:`READ_ONCE_BYTES` of the file, and the run takes them from there; the run reads only the rest of a larger
file again, from the byte after the kept part (a ``.jsonl`` file; a JSON array or Parquet file larger than that is
read again from its start). Every selected record is checked before any episode starts either way, and a file that
changes after its check is refused when the run reads from it again, so no record runs unchecked.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core.data.io import jsonl_lines, read_jsonl, read_parquet
from bootcamp_core.data.records import GeneratedSample, normalize_record
from bootcamp_core.plugin.errors import BootcampError, ConfigError, UnknownIdError

__all__ = ["MAX_LISTED_PROBLEMS", "READ_ONCE_BYTES", "DatasetCheck", "DatasetSelection", "check_dataset", "check_record",
           "load_dataset", "lone_surrogate", "registry_filter", "select_records"]

#: Problems listed by a failed dataset check before "... and N more".
MAX_LISTED_PROBLEMS = 20

#: Bytes of a dataset file whose selected records its check keeps, parsed, for the run to take (about 4.5 times as
#: much memory as parsed JSON). Small, so that a run's peak memory is the same for 2,000 records (2.5 MB of
#: bootcamp-example's) as for 1,000,000; ``DatasetSelection(buffer_bytes=...)`` sets another bound.
READ_ONCE_BYTES = 2 * 1024 * 1024


def load_dataset(path: str | os.PathLike, *, normalize: bool = True) -> Iterator[dict]:
    """Records of a ``.jsonl``, ``.json`` (a JSON array, or one object per line) or ``.parquet`` file, streamed.

    Identities come back as objects whatever the file held. A broken line (not JSON, not UTF-8), a JSON file that is
    not UTF-8 and a Parquet file that is not a records file are errors naming the file (and line).
    ``normalize=False`` leaves JSON records as parsed, for a reader that normalizes them itself
    (``GeneratedSample.from_record``, the engine): the evaluation's, which would otherwise normalize each twice.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"dataset_path {path}: no such file", field="dataset_path")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _checked(read_parquet(path), path)
    if suffix not in {".jsonl", ".json", ".ndjson"}:
        raise ConfigError(f"dataset_path {path}: expected a .jsonl, .json or .parquet file", field="dataset_path")
    return _read_json_records(path, normalize)


def _checked(records: Iterable[Any], path: Path) -> Iterator[dict]:
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict):
            raise ConfigError(f"{path}: record {number} is not a JSON object")
        yield record


def _read_json_records(path: Path, normalize: bool = True) -> Iterator[dict]:
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"["):  # a JSON array; it has to be read whole
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise ConfigError(f"{path}:{line}: not valid UTF-8 (byte 0x{raw[error.start]:02x})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}:{error.lineno}:{error.colno}: not valid JSON ({error.msg})") from None
        for number, record in enumerate(data, 1):
            if not isinstance(record, dict):
                raise ConfigError(f"{path}: element {number} of the array is not a JSON object")
            yield normalize_record(record) if normalize else record
        return
    if not normalize:
        for line in jsonl_lines(path):
            if line.error is not None:
                raise ConfigError(f"{path}:{line.number}: {line.error}")
            yield line.value
        return
    try:
        yield from read_jsonl(path)
    except ValueError as error:  # names the file and line already
        raise ConfigError(str(error)) from None


def _select(
    records: Iterable[tuple[int, dict, int | None, int]],
    limit: int | None,
    shard: tuple[int, int] | None,
    keep: Callable[[dict], bool] | None,
    kept: int = 0,
) -> Iterator[tuple[int, dict, int | None, int, int, bool]]:
    """:func:`select_records` over (position, record, end offset, next line) of :meth:`DatasetSelection._raw`,
    ``kept`` records kept before them: (position, record, end, next line, kept before it, selected) of each record
    read, until the limit is reached."""
    for position, record, end, line in records:
        before = kept
        if keep is not None and not keep(record):
            yield position, record, end, line, before, False
            continue
        if limit is not None and kept >= limit:
            return
        kept += 1
        yield position, record, end, line, before, shard is None or position % shard[1] == shard[0]


def select_records(
    records: Iterable[dict],
    *,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    keep: Callable[[dict], bool] | None = None,
) -> Iterator[tuple[int, dict]]:
    """(position in the file, record) of the selected records: ``keep`` filter → first ``limit`` → shard."""
    kept = 0
    for position, record in enumerate(records):
        if keep is not None and not keep(record):
            continue
        if limit is not None and kept >= limit:
            return
        kept += 1
        if shard is not None and position % shard[1] != shard[0]:
            continue
        yield position, record


def registry_filter(path: Path, registry: Any) -> Callable[[dict], bool]:
    """A predicate keeping records of the bootcamps a registry JSONL lists (the original ``bootcamp_registry``).

    A line naming a ``namespace`` (or only a ``bootcamp_name``) admits that namespace; a line naming a
    ``config_file`` admits the namespaces of the generators that config uses. A record is kept when its
    ``data_source`` is ``bootcamp/<admitted namespace>`` (or a listed ``bootcamp_name`` itself, as in the original
    framework's records), or its generator id is in an admitted namespace.
    """
    from bootcamp_core.data.config import load_instruction_config, load_registry_file
    from bootcamp_core.data.generate import plan_groups

    namespaces: set[str] = set()
    names: set[str] = set()
    for entry in load_registry_file(path):
        if entry.name:
            names.add(entry.name)
        if entry.namespace:
            namespaces.add(entry.namespace)
        if entry.config_path is not None:
            try:
                config = load_instruction_config(entry.config_path, name=entry.name, namespace=entry.namespace)
                namespaces.update(plan.generator.split("/", 1)[0] for plan in plan_groups(config, registry))
            except BootcampError as error:
                raise ConfigError(f"{path}:{entry.line}: {error}") from None
    sources = {f"bootcamp/{namespace}" for namespace in namespaces} | names

    def keep(record: dict) -> bool:
        if record.get("data_source") in sources:
            return True
        bootcamp = (record.get("extra_info") or {}).get("bootcamp") or {}
        generator = bootcamp.get("generator") if isinstance(bootcamp, dict) else None
        return isinstance(generator, str) and generator.split("/", 1)[0] in namespaces

    return keep


def check_record(record: dict, registry: Any, cache: dict, served: dict[str, set[str]] | None = None,
                 remote: set[str] | None = None) -> tuple[GeneratedSample | None, str | None]:
    """The record's typed view, or why it cannot run with the installed plugins (and tool backends).

    ``served``: {where: tool ids served there}; the key ``"*"`` holds the tool server every tool runs on.
    ``remote``: the tool ids a tool config routes to a backend (checked to be served already).
    """
    try:
        # no copy: from_record only normalizes the record in place, which every reader of a dataset has done already
        sample = GeneratedSample.from_record(record, copy_record=False)
    except (ValueError, KeyError, TypeError) as error:
        return None, f"not a generated record: {error}"
    key = (sample.generator, sample.tools, sample.interaction, sample.reward)
    if key not in cache:
        problem = None
        try:
            registry.resolve("generator", sample.generator)
            for tool in sample.tools:
                if served and "*" in served:
                    if tool not in served["*"]:
                        raise UnknownIdError(f"tool {tool} is not served by the tool server")
                elif not (remote and tool in remote):
                    registry.resolve("tool", tool)
            if sample.interaction:
                registry.resolve("interaction", sample.interaction)
            registry.resolve("reward", sample.reward)
        except BootcampError as error:
            problem = str(error)
        cache[key] = problem
    return sample, cache[key]


def lone_surrogate(value: Any) -> str | None:
    """Where a JSON value holds a lone surrogate (``"\\ud800"`` in a JSON file decodes to one), as
    ``"prompt[0].content has a lone surrogate (\\ud800 at character 5)"``; None when it holds none."""
    try:  # the common case, in C: a value that encodes holds none (the walk below costs 30 times as much)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return None
    except (UnicodeEncodeError, TypeError, ValueError):  # one to find, or not JSON data (the walk handles any)
        pass
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if item.isascii():
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                return (f"{where or 'the record'} has a lone surrogate (\\u{ord(item[error.start]):04x} at character "
                        f"{error.start + 1})")
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if isinstance(key, str) and lone_surrogate(key) is not None:
                    return f"a key in {where or 'the record'} has a lone surrogate"
                stack.append((f"{where}.{key}" if where else str(key), child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", child) for index, child in reversed(list(enumerate(item))))
    return None


@attrs.frozen
class DatasetCheck:
    """What the check of a selection found: its size, the generators in it and one record of each."""

    count: int
    generators: dict[str, int]  # generator id -> selected records
    representatives: list[dict]  # the first record of each generator
    tool_ids: list[str]  # every tool the selected records use


def refuse_lone_surrogate(record: dict, where: Any, position: int) -> None:
    """A :class:`ConfigError` naming ``where`` and the record's position when ``record`` holds a lone surrogate:
    no request could send it, no results line could hold it."""
    invalid = lone_surrogate(record)
    if invalid is not None:
        raise ConfigError(f"{where}: record {position}: {invalid}, which is not valid Unicode; fix or drop the record")


def check_dataset(selected: Iterable[tuple[int, dict]], registry: Any, where: Any, *,
                  served: dict[str, set[str]] | None = None, remote: set[str] | None = None,
                  unicode_checked: bool = False) -> DatasetCheck:
    """Check that every selected record runs with the installed plugins (and tool backends) before any episode
    starts; a :class:`ConfigError` lists the first :data:`MAX_LISTED_PROBLEMS` that do not, naming ``where``.

    ``unicode_checked``: whoever read the records refused those with a lone surrogate already."""
    cache: dict = {}
    problems: list[str] = []
    problem_count = 0
    representatives: dict[str, dict] = {}
    generators: dict[str, int] = {}
    count = 0
    for position, record in selected:
        count += 1
        if not unicode_checked:
            refuse_lone_surrogate(record, where, position)
        sample, problem = check_record(record, registry, cache, served, remote)
        if problem is not None:
            problem_count += 1
            if len(problems) < MAX_LISTED_PROBLEMS:
                problems.append(f"record {position}: {problem}")
            continue
        assert sample is not None
        generators[sample.generator] = generators.get(sample.generator, 0) + 1
        representatives.setdefault(sample.generator, record)
    if problems:
        more = f"\n  ... and {problem_count - len(problems)} more" if problem_count > len(problems) else ""
        raise ConfigError(f"{where}: {problem_count} record(s) cannot run with the installed plugins:\n  "
                          + "\n  ".join(problems) + more)
    tool_ids = sorted({tool for (_, tools, _, _) in cache for tool in tools})
    return DatasetCheck(count=count, generators=generators, representatives=list(representatives.values()),
                        tool_ids=tool_ids)


@attrs.frozen
class _Resume:
    """Where reading a selection on starts: the byte and line number of a ``.jsonl`` file (0 and 1 elsewhere), the
    position of the next record and the records kept by the selection before it."""

    offset: int = 0
    line: int = 1
    position: int = 0
    kept: int = 0


def _stamp(path: Path) -> tuple[int, int, int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev


class DatasetSelection:
    """The records a run selects from a dataset file (:func:`select_records`), read once where the file allows.

    :meth:`check` reads the file, checks every selected record (:func:`check_dataset`) and keeps those within the
    file's first ``buffer_bytes`` bytes (:data:`READ_ONCE_BYTES`), as the check left them (``from_record``
    normalizes a record in place). :meth:`records` yields those, then the selected records of the rest of the file
    as parsed (``load_dataset(normalize=False)``), read again from the byte after the kept part in a ``.jsonl`` file;
    a JSON array or Parquet file is kept whole or not at all (by its size, or its data's size uncompressed) and its
    rest is read again from its start, the kept records skipped. Either form is what the engine runs: it normalizes
    its own copy of each record, and normalizing a normalized record changes nothing (except a ``json`` field
    holding the JSON text of JSON text, which each normalization decodes once more).

    The file's size, modification time and inode are taken before the check reads it; the check refuses a file that
    changed while it read, and reading the rest refuses one that changed since (before its first record, at a line
    past the size checked, and after its last), so a record added or rewritten after the check does not run
    unchecked (a :class:`ConfigError`; the episodes written so far stay, resume goes on). A file rewritten in place
    to the same size and modification time is not noticed: nothing short of reading it again would.
    """

    def __init__(self, path: str | os.PathLike, *, limit: int | None = None, shard: tuple[int, int] | None = None,
                 keep: Callable[[dict], bool] | None = None, buffer_bytes: int = READ_ONCE_BYTES,
                 record_keys: bool = False) -> None:
        self.path = Path(path)
        self.limit, self.shard, self.keep = limit, shard, keep
        self.buffer_bytes = buffer_bytes
        #: with ``record_keys`` (a resumed run), the check's read also notes the record part of each record's episode
        #: keys: of every record it read (all of the file's unless ``limit`` stopped it: ``all_keys``) and, with their
        #: number, of the selected ones, so resuming reads the dataset no second time
        self.record_keys: set[str] | None = set() if record_keys else None
        self.selected_keys: dict[str, int] = {}
        self.all_keys = limit is None
        self._kept: list[tuple[int, dict]] = []
        self._rest: _Resume | None = _Resume()  # None: the kept records are the whole selection
        self._stamp: tuple[int, int, int, int] | None = None

    def check(self, registry: Any, where: Any = None, *, served: dict[str, set[str]] | None = None,
              remote: set[str] | None = None) -> DatasetCheck:
        """:func:`check_dataset` over the selection, ``where`` (default: the file) naming it in errors; keeps the
        records of the file's first ``buffer_bytes`` bytes for :meth:`records`."""
        where = self.path if where is None else where
        return check_dataset(self._first_read(where), registry, where, served=served, remote=remote,
                             unicode_checked=True)

    def records(self, *, release: bool = False) -> Iterator[tuple[int, dict]]:
        """(position in the file, record) of every selected record, as :func:`select_records` yields them.

        ``release``: the kept records are let go as they are yielded (a later call reads the whole file again)."""
        kept, rest = self._kept, self._rest
        if release:
            self._kept, self._rest = [], _Resume()
            buffer = deque(kept)
            del kept
            while buffer:
                yield buffer.popleft()
        else:
            yield from kept
        if rest is None:
            return
        self._unchanged()
        checked_size = self._stamp[0] if self._stamp is not None else None
        for position, record, end, _, _, selected in _select(self._raw(rest), self.limit, self.shard, self.keep,
                                                             rest.kept):
            if end is not None and checked_size is not None and end > checked_size:  # written while we read
                self._changed()
            if selected:
                yield position, record
        self._unchanged()

    __iter__ = records

    def _first_read(self, where: Any) -> Iterator[tuple[int, dict]]:
        """The selected records; one with a lone surrogate is refused, naming ``where``."""
        self._stamp = _stamp(self.path) if self.path.is_file() else None
        self._kept, self._rest = [], _Resume()
        kept: list[tuple[int, dict]] = []
        jsonl = self._jsonl()
        budget = self.buffer_bytes if jsonl else (0 if self._whole_size() <= self.buffer_bytes else -1)
        resume: _Resume | None = None
        offset, line = 0, 1
        keys, selected_keys = self.record_keys, self.selected_keys
        if keys is not None:
            from bootcamp_core.episode.engine import episode_id

            keys.clear()
            selected_keys.clear()
        unchecked: set[int] = set()
        for position, record, end, next_line, before, selected in _select(self._raw(_Resume(), unchecked),
                                                                          self.limit, self.shard, self.keep):
            if position in unchecked:
                unchecked.discard(position)
                if selected:
                    refuse_lone_surrogate(record, where, position)
            if keys is not None:  # before the check normalizes it (a key is the same either way)
                record_key = episode_id(record, 0).rpartition(":")[0]
                keys.add(record_key)
                if selected:
                    selected_keys[record_key] = selected_keys.get(record_key, 0) + 1
            if resume is None and ((end if end is not None else 0) > budget):  # the rest is read again
                resume = _Resume(offset=offset, line=line, position=position, kept=before)
            if resume is None and selected:
                kept.append((position, record))
            if selected:
                yield position, record
            if end is not None:
                offset, line = end, next_line
        self._unchanged()
        self._kept, self._rest = kept, resume

    def _unchanged(self) -> None:
        if self._stamp is None:
            return
        try:
            now = _stamp(self.path)
        except OSError:  # removed, or not readable any more
            now = None
        if now != self._stamp:
            self._changed()

    def _changed(self) -> None:
        raise ConfigError(f"dataset_path {self.path} changed after its records were checked; leave it as it is "
                          "while the evaluation runs, and run again (resume_from continues)", field="dataset_path")

    def _jsonl(self) -> bool:
        """Whether the file is JSON lines (it can be read on from a line), not a JSON array or Parquet."""
        suffix = self.path.suffix.lower()
        if suffix not in {".jsonl", ".json", ".ndjson"} or not self.path.is_file():
            return False
        with open(self.path, "rb") as handle:
            return not handle.read(4096).lstrip().startswith(b"[")

    def _whole_size(self) -> int:
        """The bytes a JSON array or Parquet file's records take as data (a Parquet file's uncompressed)."""
        if not self.path.is_file():
            return 0
        if self.path.suffix.lower() == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                metadata = pq.ParquetFile(self.path).metadata
                return sum(metadata.row_group(index).total_byte_size for index in range(metadata.num_row_groups))
            except (pa.ArrowException, OSError):  # not Parquet: load_dataset says why
                return self.buffer_bytes + 1
        return self.path.stat().st_size

    def _raw(self, start: _Resume, unchecked: set[int] | None = None) -> Iterator[tuple[int, dict, int | None, int]]:
        """(position, record as parsed, end offset, next line number) of the file's records from ``start``; the
        end is None where the file cannot be read on from a record (it is read from its start, ``start`` skipped).

        ``unchecked`` gets the position of each record that may hold a lone surrogate, added before it is yielded:
        a line of a ``.jsonl`` file is decoded from UTF-8, which holds none, so only one with a ``\\uD...`` escape
        may; any record of another form may."""
        if self._jsonl():
            position = start.position
            for line in jsonl_lines(self.path, offset=start.offset, first_line=start.line):
                if line.error is not None:
                    raise ConfigError(f"{self.path}:{line.number}: {line.error}")
                if unchecked is not None and ("\\ud" in line.text or "\\uD" in line.text):
                    unchecked.add(position)
                yield position, line.value, line.end, line.number + 1
                position += 1
            return
        for position, record in enumerate(load_dataset(self.path, normalize=False)):
            if position >= start.position:
                if unchecked is not None:
                    unchecked.add(position)
                yield position, record, None, 1
