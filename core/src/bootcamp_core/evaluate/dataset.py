"""The evaluation's dataset: records read from a file, the selection of a run, and the check that each can run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from bootcamp_core.data.io import jsonl_lines, read_jsonl, read_parquet
from bootcamp_core.data.records import GeneratedSample, normalize_record
from bootcamp_core.plugin.errors import BootcampError, ConfigError, UnknownIdError

__all__ = ["MAX_LISTED_PROBLEMS", "DatasetCheck", "check_dataset", "check_record", "load_dataset", "lone_surrogate",
           "registry_filter", "select_records"]

#: Problems listed by a failed dataset check before "... and N more".
MAX_LISTED_PROBLEMS = 20


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


def check_dataset(selected: Iterable[tuple[int, dict]], registry: Any, where: Any, *,
                  served: dict[str, set[str]] | None = None, remote: set[str] | None = None) -> DatasetCheck:
    """Check that every selected record runs with the installed plugins (and tool backends) before any episode
    starts; a :class:`ConfigError` lists the first :data:`MAX_LISTED_PROBLEMS` that do not, naming ``where``."""
    cache: dict = {}
    problems: list[str] = []
    problem_count = 0
    representatives: dict[str, dict] = {}
    generators: dict[str, int] = {}
    count = 0
    for position, record in selected:
        count += 1
        invalid = lone_surrogate(record)
        if invalid is not None:  # no request could send it, no results line could hold it
            raise ConfigError(f"{where}: record {position}: {invalid}, which is not valid Unicode; fix or drop the "
                              "record")
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
