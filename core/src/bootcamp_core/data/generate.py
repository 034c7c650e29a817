"""Dataset generation: instruction configs → JSONL (and Parquet) files of records.

Record *i* of a split is a pure function of (config, seed, split, *i*): its ``random.Random`` is seeded from those
alone, so shuffling and the worker count never change the bytes. Splits are streamed: a shuffle permutes indices,
never records, and nothing holds a whole split in memory. Every file is written under a temporary name and renamed
when complete.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import hashlib
import json
import logging
import multiprocessing
import os
import pickle
import random
import shutil
import signal
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from bootcamp_core.data.config import (
    InstructionConfig,
    allocate,
    config_stem,
    load_component_config,
    load_instruction_config,
    load_registry_file,
    parse_instruction_config,
)
from bootcamp_core.data.io import (
    PARQUET_BATCH_ROWS,
    AtomicFile,
    JsonlWriter,
    ParquetWriter,
    dumps,
    no_space_error,
    parquet_tool_names,
)
from bootcamp_core.data.records import GeneratedSample, data_source_for
from bootcamp_core.plugin.errors import BootcampError, ConfigError, GenerationError
from bootcamp_core.plugin.loader import Registry, get_registry
from bootcamp_core.plugin.runtime import frozen_heap

logger = logging.getLogger("bootcamp_core")

__all__ = [
    "GroupPlan",
    "GenerationReport",
    "plan_groups",
    "iter_records",
    "generate",
    "generate_many",
    "default_config_for",
    "config_for_bootcamp",
]

#: A generator that raises is retried this many times in all, each time with a fresh rng derived from the seed.
MAX_ATTEMPTS = 5
#: Rows per chunk of work handed to a pool worker.
CHUNK_ROWS = 20_000

ProgressCallback = Callable[[int], None]


@attrs.frozen
class GroupPlan:
    """What every record of one group names: its generator, tools, interaction, reward and their versions."""

    group_name: str
    generator: str
    config: dict = attrs.field(eq=False)
    data_source: str = ""
    tools: tuple[str, ...] = ()
    tool_names: tuple[str, ...] = ()
    interaction: str | None = None
    reward: str = ""
    versions: dict[str, str] = attrs.field(factory=dict, eq=False)


def _one_generator(registry: Registry, namespace: str | None) -> str | None:
    if namespace is None:
        return None
    ids = registry.ids("generator", namespace=namespace)
    return ids[0] if len(ids) == 1 else None


def plan_groups(config: InstructionConfig, registry: Registry | None = None) -> list[GroupPlan]:
    """Resolve every group's generator, tools, interaction and reward to installed ids (clear errors otherwise)."""
    registry = registry or get_registry()
    plans = []
    for group in config.groups:
        ref = group.class_name or config.class_name or _one_generator(registry, config.namespace)
        if not ref:
            raise ConfigError(
                f"group {group.name!r} names no generator: set global_config.class_name or the group's class_name "
                "to a generator id (`bootcamp plugins` lists them)"
            )
        generator_id = registry.resolve("generator", ref, config.namespace)
        cls = registry.get_class("generator", generator_id)
        namespace = generator_id.split("/", 1)[0]

        tool_config = group.tool_config_path or config.tool_config_path
        if config.no_tool:
            tool_refs: Sequence[str] = ()
        elif tool_config is not None:
            tool_refs = [entry.class_name for entry in load_component_config(tool_config, "tool")]
        else:
            tool_refs = tuple(cls.tools or ())
        tools = tuple(registry.resolve("tool", tool_ref, namespace) for tool_ref in tool_refs)
        tool_names = tuple(registry.get_class("tool", tool_id).name for tool_id in tools)
        if len(set(tool_names)) != len(tool_names):
            clashes = sorted({name for name in tool_names if tool_names.count(name) > 1})
            raise ConfigError(
                f"group {group.name!r}: a record's tool names must be distinct, but {', '.join(clashes)} "
                f"is the name of more than one of {', '.join(tools)}. Drop one of them from the tool config"
            )

        interaction_config = group.interaction_config_path or config.interaction_config_path
        interaction_ref: str | None
        if config.no_interaction:
            interaction_ref = None
        elif interaction_config is not None:
            entries = load_component_config(interaction_config, "interaction")
            if len(entries) > 1:
                logger.warning("%s: several interactions listed; records name the first", interaction_config)
            interaction_ref = entries[0].class_name if entries else None
        else:
            interaction_ref = cls.interaction
        interaction = registry.resolve("interaction", interaction_ref, namespace) if interaction_ref else None

        reward_ref = getattr(cls, "reward", None)
        if not reward_ref:
            raise ConfigError(f"generator {generator_id} names no reward: set the class attribute `reward`")
        reward = registry.resolve("reward", reward_ref, namespace)
        used = [("generator", generator_id), ("reward", reward), *(("tool", tool) for tool in tools)]
        if interaction:
            used.append(("interaction", interaction))
        plans.append(
            GroupPlan(
                group_name=group.name,
                generator=generator_id,
                config=dict(group.config),
                data_source=data_source_for(namespace),
                tools=tools,
                tool_names=tool_names,
                interaction=interaction,
                reward=reward,
                versions=registry.versions_for(used),
            )
        )
    return plans


# -------------------------------------------------------------------------------------------- the hot path
_PROMPT, _IDENTITY, _INDEX = "\x00prompt\x00", "\x00identity\x00", "\x00index\x00"


def _template_record(plan: GroupPlan, split: str) -> dict:
    """The group's record with sentinels where the prompt, the identity and the index go: laid out by
    :meth:`GeneratedSample.to_record`, the one layout of a generated record."""
    return GeneratedSample(
        data_source=plan.data_source, prompt=[{"role": "user", "content": _PROMPT}], identity=_IDENTITY,  # type: ignore[arg-type]
        index=_INDEX, split=split, generator_name=plan.group_name, generator=plan.generator,  # type: ignore[arg-type]
        reward=plan.reward, tools=plan.tools, tool_names=plan.tool_names, interaction=plan.interaction,
        versions=plan.versions,
    ).to_record()


def _line_template(plan: GroupPlan, split: str) -> str:
    """The record's JSON line as a %-template, made by ``json.dumps`` itself so the bytes always match it.

    Only the prompt, the identity and the index are encoded per record: this is the hot path behind
    bench/bench_generate.py's throughput figure (52-55k records/s to JSONL, about 3x its dict-per-record baseline).
    """
    text = dumps(_template_record(plan, split)).replace("%", "%%")
    for sentinel, slot in ((_PROMPT, "%(p)s"), (_IDENTITY, "%(i)s"), (_INDEX, "%(n)d")):
        text = text.replace(dumps(sentinel), slot)
    return text


def _stream_seed(seed: int, split: str, purpose: str) -> int:
    digest = hashlib.blake2b(f"{seed}\x1f{split}\x1f{purpose}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def permutation(seed: int, split: str, count: int) -> array:
    """The shuffle order of a split: a permutation of indices (8 bytes each), never of records."""
    order = array("q", range(count))
    random.Random(_stream_seed(seed, split, "shuffle")).shuffle(order)
    return order


class _Emitted(NamedTuple):
    line: str
    prompt: Any
    identity_json: str
    group: int


class _SplitProducer:
    """Produces the records of one split of one config, by output position."""

    def __init__(self, config: InstructionConfig, plans: list[GroupPlan], registry: Registry, split: str) -> None:
        self.config, self.plans, self.split = config, plans, split
        count = config.split_samples[split]
        counts = allocate(count, [group.ratio for group in config.groups])
        self.bounds = list(_cumulative(counts))
        self.generators = [registry.component("generator", plan.generator, plan.config) for plan in plans]
        self.templates = [_line_template(plan, split) for plan in plans]
        self.base_seed = _stream_seed(config.seed, split, "records")
        self.order = permutation(config.seed, split, count) if config.shuffle else None
        splits = list(config.split_samples)
        self.offset = sum(config.split_samples[name] for name in splits[: splits.index(split)])

    def emit(self, position: int) -> _Emitted:
        source = self.order[position] if self.order is not None else position
        group = bisect.bisect_right(self.bounds, source)
        plan, generator = self.plans[group], self.generators[group]
        identity_json, prompt = self._draw(generator, plan, source)
        line = self.templates[group] % {"p": dumps(prompt), "i": identity_json, "n": self.offset + position}
        return _Emitted(line, prompt, identity_json, group)

    def _draw(self, generator: Any, plan: GroupPlan, source: int) -> tuple[str, Any]:
        """(identity as JSON, prompt) of the record at ``source``, retrying a generator that raises."""
        last_error: BaseException | None = None
        for attempt in range(MAX_ATTEMPTS):
            rng = random.Random(self.base_seed + source if attempt == 0 else
                                _stream_seed(self.base_seed + source, self.split, f"retry{attempt}"))
            try:
                identity = generator.case_generator(rng)
                if not isinstance(identity, dict):
                    raise TypeError(f"case_generator returned {type(identity).__name__}, not a dict")
                prompt = generator.prompt_func(identity, rng)
                if not isinstance(prompt, (str, list)) or not prompt:
                    raise TypeError(f"prompt_func returned {type(prompt).__name__} {prompt!r:.40}, not a non-empty str or list")
                return dumps(identity), prompt
            except Exception as error:  # the plugin's bug: retried, then reported with everything needed to replay
                last_error = error
        raise GenerationError(
            f"generator {plan.generator} (group {plan.group_name!r}) failed {MAX_ATTEMPTS} times for seed "
            f"{self.config.seed}, split {self.split!r}, index {source}: {type(last_error).__name__}: {last_error}"
        ) from last_error


def _cumulative(counts: list[int]) -> Iterator[int]:
    total = 0
    for count in counts[:-1]:
        total += count
        yield total


def iter_records(
    config: InstructionConfig, split: str, registry: Registry | None = None, start: int = 0, stop: int | None = None
) -> Iterator[dict]:
    """The records of one split as dicts (a documented, scriptable view of what ``generate`` writes)."""
    registry = registry or get_registry()
    producer = _SplitProducer(config, plan_groups(config, registry), registry, split)
    stop = config.split_samples[split] if stop is None else stop
    for position in range(start, stop):
        yield json.loads(producer.emit(position).line)


class _ParquetColumns:
    """Buffers emitted records and writes them to Parquet column by column.

    Everything but the prompt, the identity and the index is constant within a group, so each column is the group's
    template row (the record schema's row of :func:`_template_record`) taken per record, with those three filled in
    wherever the template holds their sentinel: the layout comes from the record schema, not from this class.
    """

    def __init__(self, writer: ParquetWriter, plans: list[GroupPlan], split: str) -> None:
        self.writer = writer
        schema = writer.record_schema
        self.fields = schema.fields
        self.templates = [schema.to_row(_template_record(plan, split), writer.tool_names) for plan in plans]
        self.rows: list[tuple[_Emitted, int]] = []

    def add(self, emitted: _Emitted, index: int) -> None:
        self.rows.append((emitted, index))
        if len(self.rows) >= PARQUET_BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        import pyarrow as pa

        emitted = [row[0] for row in self.rows]
        count = len(emitted)
        string = pa.string()
        text = [row.prompt if isinstance(row.prompt, str) else None for row in emitted]
        parts = [None if isinstance(row.prompt, str) else dumps(row.prompt) for row in emitted]
        user = pa.StructArray.from_arrays(
            [pa.array(["user"] * count, string), pa.array(text, string), pa.array(parts, string)],
            names=["role", "content", "content_parts"],
        )
        filled = {
            dumps(_IDENTITY): pa.array([row.identity_json for row in emitted], string),
            _INDEX: pa.array([row[1] for row in self.rows], pa.int64()),
            "prompt": pa.ListArray.from_arrays(pa.array(range(count + 1), pa.int32()), user),
        }
        groups = pa.array([row.group for row in emitted], pa.int32())
        schema = self.writer.schema
        columns = [_column(schema.field(name), [template.get(name) for template in self.templates], groups, filled)
                   for name in schema.names]
        self.writer.write_table(pa.Table.from_arrays(columns, schema=schema))
        self.rows = []


def _column(field, templates: list, groups, filled: dict):
    """One Arrow column: per record, its group's template value, or the per-record array its sentinel names."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow_type = field.type
    if pa.types.is_struct(arrow_type):
        children = [_column(child, [None if value is None else value.get(child.name) for value in templates],
                            groups, filled) for child in arrow_type]
        mask = pa.array([value is None for value in templates]).take(groups)
        return pa.StructArray.from_arrays(children, fields=list(arrow_type), mask=mask if pc.any(mask).as_py() else None)
    sentinel = next((key for key in filled if any(_holds(value, key) for value in templates)), None)
    if sentinel is None:
        return pa.array(templates, arrow_type).take(groups)
    values = filled[sentinel]
    present = [_holds(value, sentinel) for value in templates]
    if all(present):
        return values
    return pc.if_else(pa.array(present).take(groups), values, pa.scalar(None, arrow_type))


def _holds(value: Any, sentinel: str) -> bool:
    if sentinel == "prompt":  # the prompt column: its template is the one user message with the prompt sentinel
        return (isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)
                and value[0].get("content") == _PROMPT)
    return value == sentinel


def _write_range(
    config: InstructionConfig,
    split: str,
    start: int,
    stop: int,
    jsonl_path: Path,
    parquet_path: Path | None,
    registry: Registry | None = None,
    progress: ProgressCallback | None = None,
    *,
    in_place: str | None = None,
) -> int:
    """Write rows ``start:stop`` of ``split``: to ``jsonl_path`` under a temporary name renamed when done, or, with
    ``in_place`` (``"w"`` or ``"a"``), straight into ``jsonl_path``, itself a temporary (a pool split's file)."""
    registry = registry or get_registry()
    plans = plan_groups(config, registry)
    producer = _SplitProducer(config, plans, registry, split)
    step = 2048
    with contextlib.ExitStack() as stack:
        sink = _InPlace(jsonl_path, in_place) if in_place else JsonlWriter(jsonl_path)
        write_line = stack.enter_context(sink).write_line
        parquet = None
        if parquet_path:
            writer = ParquetWriter(parquet_path, tool_names=sorted({name for plan in plans for name in plan.tool_names}))
            parquet = _ParquetColumns(stack.enter_context(writer), plans, split)
        offset = producer.offset
        for position in range(start, stop):
            emitted = producer.emit(position)
            write_line(emitted.line)
            if parquet:
                parquet.add(emitted, offset + position)
            if progress and (position - start + 1) % step == 0:
                progress(step)
        if parquet:
            parquet.flush()
    if progress:
        progress((stop - start) % step)
    return stop - start


class _InPlace:
    """Lines written straight into an open file (``mode`` ``"w"`` or ``"a"``), with a full disk as one clear error."""

    def __init__(self, path: Path, mode: str) -> None:
        self.path = path
        self.mode = mode
        self.handle: Any = None

    def __enter__(self) -> _InPlace:
        self.handle = open(self.path, self.mode, encoding="utf-8", newline="\n")
        return self

    def write_line(self, line: str) -> None:
        self.handle.write(line)
        self.handle.write("\n")

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.handle.close()  # flushes: a full disk may only show here
        except OSError as error:
            if exc is None:
                exc = error
        if isinstance(exc, OSError) and (full := no_space_error(self.path, exc)) is not None:
            raise full from None
        if exc is not None and exc_type is None:  # the close failed for another reason
            raise exc


#: The registry of the pool being run; forked workers inherit it, so they resolve ids exactly as the caller did.
_pool_registry: Registry | None = None


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Delay SIGINT and SIGTERM for the block (where the platform can), delivering them after it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _INTERRUPTS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _worker_signals() -> None:
    """In a pool worker: Ctrl-C is the parent's to handle (it stops the pool); SIGTERM ends the worker at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _INTERRUPTS)


class _PoolSplit(NamedTuple):
    """One split of a pool run, as its workers and its parent see it: where its chunks of rows go.

    The split's JSONL file is built under ``temporary`` (renamed to ``target`` once the whole config has succeeded);
    a chunk that cannot go there yet is a part file under ``parts``, as is every chunk's Parquet."""

    number: int  # the config's position in the run
    config: InstructionConfig
    split: str
    count: int
    chunk: int  # rows per chunk
    target: Path
    temporary: Path
    parts: Path

    @property
    def chunks(self) -> int:
        return max(1, -(-self.count // self.chunk))  # an empty split is one empty chunk: its file is written too

    def rows(self, index: int) -> tuple[int, int]:
        return index * self.chunk, min(self.count, (index + 1) * self.chunk)

    def part(self, index: int, suffix: str) -> Path:
        return self.parts / f"{self.number}_{self.split}_{index * self.chunk:012d}{suffix}"


class _Claims:
    """Which chunks of each split of a pool run are taken, and how many are in the split's file, in shared memory.

    Per split three numbers: the next chunk not taken from the front, one past the last chunk not taken from the back,
    and ``joined``, the count of chunks from the split's start that are in its file. A chunk taken while ``joined``
    equals its index goes straight into the file (nothing before it is missing, and nothing can be appended while it
    is written); any other chunk is a part file, appended by the parent once the chunks before it are in.

    A worker goes through one split from the front, so its chunks go straight into the file one after the other. A
    free worker takes the largest chunk on offer: the first of a split not started, or the last of a split another
    worker goes through (a part), so the run ends on small chunks. Most chunks are then neither written twice nor
    copied (a part and its append cost the pool 4-15% of its CPU: bench/bench_generate.py's pool figure).
    """

    def __init__(self, shared: Any, splits: Sequence[_PoolSplit]) -> None:
        self.shared = shared  # a multiprocessing Array of 3 integers per split, with its lock
        self.splits = splits
        self.mine: int | None = None  # in a worker: the split it goes through from the front

    @classmethod
    def create(cls, context: Any, splits: Sequence[_PoolSplit]) -> _Claims:
        return cls(context.Array("q", [value for split in splits for value in (0, split.chunks, 0)]), splits)

    def take(self) -> tuple[int, int, bool] | None:
        """In a worker: the next chunk to write, as (split, chunk index, straight into the file), or None."""
        with self.shared.get_lock():
            state = self.shared.get_obj()
            key = self.mine
            if key is None or state[3 * key] >= state[3 * key + 1]:
                # the largest chunks first, so that the run ends on small ones and no worker waits long for the other;
                # of equal ones, a split not started (its chunks go straight into its file), else the most rows left
                offers = [key for key in range(len(self.splits)) if state[3 * key] < state[3 * key + 1]]
                if not offers:
                    self.mine = None
                    return None
                key = max(offers, key=lambda offer: (
                    self.splits[offer].chunk, state[3 * offer] == 0,
                    (state[3 * offer + 1] - state[3 * offer]) * self.splits[offer].chunk, -offer))
                if state[3 * key]:  # started: the last chunk of a split another worker goes through
                    self.mine = None
                    index = state[3 * key + 1] = state[3 * key + 1] - 1
                    return key, index, state[3 * key + 2] == index
            self.mine = key
            index = state[3 * key]
            state[3 * key] = index + 1
            return key, index, state[3 * key + 2] == index

    def joined(self, key: int) -> int:
        return self.shared[3 * key + 2]

    def set_joined(self, key: int, count: int) -> None:
        self.shared[3 * key + 2] = count

    def abandon(self, key: int) -> None:
        """In the parent: no chunk of this split is taken from now on (its config has failed)."""
        with self.shared.get_lock():
            self.shared[3 * key] = self.shared[3 * key + 1] = 0


#: In a pool worker: the run's claims, set by :func:`_pool_worker_start`.
_pool_claims: _Claims | None = None

#: The attribute naming the split of a chunk whose writing raised, on the exception that reaches the parent.
_FAILED_SPLIT = "_bootcamp_pool_split"


def _pool_worker_start(shared: Any, splits: Sequence[_PoolSplit]) -> None:
    global _pool_claims
    _pool_claims = _Claims(shared, splits)
    _worker_signals()


def _pool_job() -> tuple[int, int, int, bool] | None:
    """Pool entry point: take a chunk and write it → (split, chunk index, rows, whether it went straight into the
    split's file), or None when none is left."""
    assert _pool_claims is not None
    taken = _pool_claims.take()
    if taken is None:
        return None
    key, index, straight = taken
    split = _pool_claims.splits[key]
    start, stop = split.rows(index)
    try:
        _write_range(split.config, split.split, start, stop,
                     split.temporary if straight else split.part(index, ".jsonl"),
                     split.part(index, ".parquet") if split.config.gen_parquet else None,
                     _pool_registry, in_place=("a" if index else "w") if straight else None)
    except Exception as error:
        failure = error
        try:
            pickle.dumps(error)
        except Exception:  # noqa: BLE001 (the parent gets what it can read: the error's type and message)
            failure = GenerationError(f"{type(error).__name__}: {error}")
        setattr(failure, _FAILED_SPLIT, key)
        raise failure  # with its traceback, which the pool sends to the parent
    if straight:
        _pool_claims.set_joined(key, index + 1)
    return key, index, stop - start, straight


# ----------------------------------------------------------------------------------------------- reports
@attrs.define
class GenerationReport:
    """What one config produced: its files and per-split counts, or its error."""

    name: str
    files: list[Path] = attrs.field(factory=list)
    counts: dict[str, int] = attrs.field(factory=dict)
    error: str | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "files": [str(f) for f in self.files], "counts": self.counts, "error": self.error}


def _output_paths(config: InstructionConfig, output_dir: Path, split: str) -> tuple[Path, Path | None]:
    jsonl = output_dir / f"{config.name}_{split}.jsonl"
    return jsonl, (jsonl.with_suffix(".parquet") if config.gen_parquet else None)


def generate(
    config: InstructionConfig,
    output_dir: str | os.PathLike,
    *,
    max_workers: int = 1,
    registry: Registry | None = None,
    progress: ProgressCallback | None = None,
) -> GenerationReport:
    """Generate every split of ``config`` into ``output_dir`` (``<name>_<split>.jsonl`` and ``.parquet``)."""
    reports = generate_many([config], output_dir, max_workers=max_workers, registry=registry, progress=progress)
    if reports[0].error:
        raise GenerationError(reports[0].error)
    return reports[0]


def generate_many(
    configs: Sequence[InstructionConfig],
    output_dir: str | os.PathLike,
    *,
    max_workers: int = 1,
    continue_on_error: bool = False,
    registry: Registry | None = None,
    progress: ProgressCallback | None = None,
) -> list[GenerationReport]:
    """Generate several configs; with ``max_workers > 1`` chunks of every split run in a process pool.

    A config whose plan fails (unknown id, bad tool config) or whose generator keeps raising gets its error in its
    report; without ``continue_on_error`` the first failure stops the run and is raised.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    registry = registry or get_registry()
    reports = [GenerationReport(config.name) for config in configs]
    names = [config.name for config in configs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"several configs would write the same files: {', '.join(duplicates)}; give them distinct names")
    runnable: list[int] = []
    for number, config in enumerate(configs):
        try:
            if config.error:
                raise ConfigError(config.error)
            plan_groups(config, registry)
            runnable.append(number)
        except BootcampError as error:
            reports[number].error = f"{config.name}: {error}"
            if not continue_on_error:
                raise
    if max_workers <= 1:
        for number in runnable:
            config = configs[number]
            try:
                for split, count in config.split_samples.items():
                    jsonl, parquet = _output_paths(config, output_dir, split)
                    _write_range(config, split, 0, count, jsonl, parquet, registry, progress)
                    _record_files(reports[number], split, count, jsonl, parquet)
            except BootcampError as error:
                reports[number].error = f"{config.name}: {error}"
                if not continue_on_error:
                    raise
        return reports
    _generate_in_pool(configs, runnable, output_dir, max_workers, continue_on_error, reports, progress, registry)
    return reports


def _record_files(report: GenerationReport, split: str, count: int, jsonl: Path, parquet: Path | None) -> None:
    report.counts[split] = count
    report.files.append(jsonl)
    if parquet:
        report.files.append(parquet)


class _SplitJoin:
    """The parent's side of one split of a pool run: it appends the part files to the split's file in order.

    A part is appended, and removed, as soon as every chunk before it is in the file (written there by a worker, or
    appended), while the workers run. The file is renamed into place by :meth:`commit`, once the whole config has
    succeeded.

    Measured and not taken: each worker holding its chunk's lines in memory and writing them into the split's file
    when the chunks before it were written (no part files, nothing copied). The kernel's copy of those megabytes, cold,
    from the worker's memory into the page cache cost more CPU than lines written in small pieces, and the pool's
    speed-up did not rise in alternated runs. Chunks are written straight into the file only when nothing before them
    is missing (:class:`_Claims`).
    """

    def __init__(self, split: _PoolSplit, key: int, claims: _Claims) -> None:
        self.split = split
        self.key = key
        self.claims = claims
        self.waiting: set[int] = set()  # parts written, not yet appended
        self.handle: Any = None

    def chunk_done(self, index: int, straight: bool) -> None:
        if not straight:
            self.waiting.add(index)
        joined = self.claims.joined(self.key)
        while joined in self.waiting:
            part = self.split.part(joined, ".jsonl")
            try:
                if self.handle is None:
                    self.handle = open(self.split.temporary, "r+b")  # noqa: SIM115 (closed when the split is whole)
                self.handle.seek(0, os.SEEK_END)  # workers may have written since
                _append(part, self.handle)
            except OSError as error:
                raise no_space_error(self.split.target, error) or error from None
            part.unlink(missing_ok=True)
            self.waiting.discard(joined)
            joined += 1
            # only now may a worker write the next chunk straight into the file
            self.claims.set_joined(self.key, joined)
        if self.whole:
            self.close()

    @property
    def whole(self) -> bool:
        return self.claims.joined(self.key) == self.split.chunks

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def commit(self) -> None:
        assert self.whole
        os.replace(self.split.temporary, self.split.target)

    def discard(self) -> None:
        self.close()
        self.split.temporary.unlink(missing_ok=True)


def _append(source: Path, target: Any) -> None:
    """Append the bytes of ``source`` to the open binary file ``target``, in the kernel where the platform can."""
    with open(source, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        copied = 0
        if hasattr(os, "copy_file_range"):
            target.flush()
            try:
                while copied < size:
                    step = os.copy_file_range(handle.fileno(), target.fileno(), size - copied)
                    if step == 0:
                        break
                    copied += step
            except OSError as error:
                if copied or error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP,
                                                 errno.EBADF):
                    raise
            target.seek(0, os.SEEK_END)
        if copied < size:
            handle.seek(copied)
            shutil.copyfileobj(handle, target, 1 << 20)
            target.flush()


def _pool_splits(configs, runnable, output_dir: Path, max_workers: int, parts: Path) -> list[_PoolSplit]:
    """The splits of a pool run, the largest first (so that the last chunks of the run are small ones)."""
    splits = []
    for number in runnable:
        config = configs[number]
        for split, count in config.split_samples.items():
            target = _output_paths(config, output_dir, split)[0]
            # several chunks per worker keep both busy when configs differ in cost
            chunk = max(1, min(CHUNK_ROWS, -(-count // (4 * max_workers))))
            splits.append(_PoolSplit(number, config, split, count, chunk, target,
                                     target.with_name(f"{target.name}.tmp-{os.getpid()}"), parts))
    return sorted(splits, key=lambda split: -split.count)


def _generate_in_pool(configs, runnable, output_dir, max_workers, continue_on_error, reports, progress,
                      registry=None) -> None:
    global _pool_registry
    parts_dir = output_dir / f".parts-{os.getpid()}"
    splits = _pool_splits(configs, runnable, output_dir, max_workers, parts_dir)
    # fork: workers inherit the loaded plugins (and a registry passed in) instead of loading them again
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    claims = _Claims.create(context, splits)
    joins = [_SplitJoin(split, key, claims) for key, split in enumerate(splits)]
    _pool_registry = registry
    committed: set[int] = set()
    heap = contextlib.ExitStack()
    try:
        parts_dir.mkdir(exist_ok=True)  # inside the try: an interrupt from here on removes it again
        # frozen objects are skipped by the children's garbage collector, which would otherwise touch (and so copy)
        # every page of the parent's heap
        heap.enter_context(frozen_heap())
        # Ctrl-C / SIGTERM must not land while a worker is being forked (an interrupt inside fork's handlers
        # leaves a broken pool that never finishes): hold them until every worker exists; one that arrived
        # meanwhile is raised as the block ends, inside the try, so the pool is still shut down
        pool = None
        try:
            with _signals_held():
                pool = ProcessPoolExecutor(max_workers=max_workers, mp_context=context,
                                           initializer=_pool_worker_start, initargs=(claims.shared, splits))
                # one job per chunk: each takes whichever chunk is best to write when it starts
                pending = {pool.submit(_pool_job) for split in splits for _ in range(split.chunks)}
            failed: set[int] = set()
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    error = future.exception()
                    key = None
                    if error is None:
                        result = future.result()
                        if result is None:  # nothing was left to take
                            continue
                        key, index, rows, straight = result
                        if splits[key].number not in failed:
                            try:
                                joins[key].chunk_done(index, straight)
                            except BootcampError as join_error:
                                error = join_error
                        if error is None:
                            if progress:
                                progress(rows)
                            continue
                    else:
                        key = getattr(error, _FAILED_SPLIT, None)
                    if isinstance(error, BrokenProcessPool):
                        error = GenerationError(
                            "a generation worker process died (killed, or out of memory) while writing; nothing of the "
                            "unfinished configs is kept: run again (with fewer --max-workers if memory is short)")
                    # the config of the chunk that failed; a failure of the pool itself: every unfinished one
                    numbers = {splits[key].number} if key is not None else {
                        split.number for split, join in zip(splits, joins) if not join.whole}
                    message = str(error) if isinstance(error, BootcampError) else f"{type(error).__name__}: {error}"
                    for number in sorted(numbers - failed):
                        failed.add(number)
                        reports[number].error = f"{configs[number].name}: {message}"
                        for other, split in enumerate(splits):
                            if split.number == number:
                                claims.abandon(other)
                    if not continue_on_error:
                        raise error
        finally:
            # an error or an interrupt: chunks not started never start; running ones finish, then all is removed
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        for key, split in enumerate(splits):
            if reports[split.number].error is None:
                joins[key].commit()
                committed.add(key)
        for number in runnable:
            if reports[number].error:
                continue
            config = configs[number]
            for split_name, count in config.split_samples.items():
                jsonl, parquet = _output_paths(config, output_dir, split_name)
                if parquet:
                    split = next(split for split in splits if split.number == number and split.split == split_name)
                    _concat_parquet([split.part(index, ".parquet") for index in range(split.chunks)], parquet)
                _record_files(reports[number], split_name, count, jsonl, parquet)
    finally:
        _pool_registry = None
        heap.close()
        for key, join in enumerate(joins):
            if key not in committed:
                join.discard()
        shutil.rmtree(parts_dir, ignore_errors=True)


def _concat_parquet(parts: Sequence[Path], target: Path) -> None:
    """Concatenate part files into row groups of exactly the size one process writes, so the bytes match.

    Parts over different tools (several bootcamps) become rows over the union of their tool names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tool_names = sorted({name for part in parts for name in parquet_tool_names(part)})
    with ParquetWriter(target, tool_names=tool_names) as writer:
        pending: pa.Table | None = None
        for part in parts:
            table = writer.record_schema.conform(pq.read_table(part), tool_names)
            pending = table if pending is None else pa.concat_tables([pending, table])
            while pending.num_rows >= PARQUET_BATCH_ROWS:
                writer.write_table(pending.slice(0, PARQUET_BATCH_ROWS).combine_chunks())
                pending = pending.slice(PARQUET_BATCH_ROWS)
        if pending is not None and pending.num_rows:
            writer.write_table(pending.combine_chunks())


def concat_outputs(reports: Sequence[GenerationReport], output_dir: str | os.PathLike, name: str = "all") -> list[Path]:
    """Concatenate the JSONL (and Parquet) files of successful reports split by split into ``<name>_<split>.*``."""
    output_dir = Path(output_dir)
    by_split: dict[tuple[str, str], list[Path]] = {}
    for report in reports:
        if report.error:
            continue
        for path in report.files:
            split = path.stem[len(report.name) + 1:]
            by_split.setdefault((split, path.suffix), []).append(path)
    written = []
    for (split, suffix), paths in by_split.items():
        target = output_dir / f"{name}_{split}{suffix}"
        if suffix == ".parquet":
            _concat_parquet(paths, target)
        else:
            with AtomicFile(target, "wb") as handle:
                for path in paths:
                    with open(path, "rb") as source:
                        shutil.copyfileobj(source, handle, 1 << 20)
        written.append(target)
    return sorted(written)


# ------------------------------------------------------------------------------------- configs of bootcamps
def default_config_for(namespace: str, registry: Registry | None = None) -> tuple[Any, Path | None]:
    """The parsed ``configs/default.yaml`` a bootcamp ships (with its path), or one group per generator."""
    from importlib import resources

    from bootcamp_core.data.config import load_yaml

    registry = registry or get_registry()
    info = registry.namespace_plugin(namespace)
    if info.package:
        try:
            candidate = resources.files(info.package) / "configs" / "default.yaml"
            if candidate.is_file():
                path = Path(str(candidate))
                return load_yaml(path), path
        except (ModuleNotFoundError, TypeError):
            pass
    generators = registry.ids("generator", namespace=namespace)
    if not generators:
        raise ConfigError(f'bootcamp "{namespace}" registers no generator, so there is nothing to generate')
    return {
        "instruction_generators": {gid.split("/", 1)[1]: {"class_name": gid, "config": {}} for gid in generators}
    }, None


def config_for_bootcamp(
    namespace: str, registry: Registry | None = None, overrides: dict | None = None, name: str | None = None
) -> InstructionConfig:
    """The instruction config ``bootcamp generate --bootcamp NAMESPACE`` uses."""
    data, path = default_config_for(namespace, registry)
    return parse_instruction_config(data, path=path, name=name or namespace, namespace=namespace, overrides=overrides)


def configs_from_registry_file(path: str | os.PathLike, registry: Registry | None = None, overrides: dict | None = None
                               ) -> list[InstructionConfig]:
    """One instruction config per line of a batch registry (CLI ``overrides`` win over the line's own).

    A line whose config cannot be built (unknown namespace, broken config file) becomes a config carrying its
    ``error``: :func:`generate_many` reports it, so ``continue_on_error`` still generates every other line.
    """
    configs = []
    for entry in load_registry_file(path):
        merged = {**entry.overrides, **{k: v for k, v in (overrides or {}).items() if v is not None}}
        try:
            if entry.config_path is not None:
                config = load_instruction_config(entry.config_path, name=entry.name, namespace=entry.namespace,
                                                 overrides=merged)
            else:
                config = config_for_bootcamp(entry.namespace, registry, merged, name=entry.name)
        except BootcampError as error:
            name = entry.name or entry.namespace or config_stem(entry.config_path)
            config = InstructionConfig(name=name, groups=(), split_samples={}, error=f"{path}:{entry.line}: {error}")
        configs.append(config)
    return configs
