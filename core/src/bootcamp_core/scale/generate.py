"""``bootcamp generate --ray``: ranges of records generated as Ray tasks, written by the driver in order.

Record *i* of a split is a pure function of (config, seed, split, *i*) (:mod:`bootcamp_core.data.generate`), so a
task needs only the config and its range. The driver keeps a bounded window of tasks in flight and writes each range
as soon as every range before it is written, through the same JSONL and Parquet writers a local run uses: the files
are byte-identical to a local run's, and the driver holds at most ``in_flight`` ranges at a time, whatever the size.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bootcamp_core.data import generate as gen
from bootcamp_core.data.config import InstructionConfig
from bootcamp_core.data.io import JsonlWriter, ParquetWriter
from bootcamp_core.plugin.errors import BootcampError, ConfigError, GenerationError
from bootcamp_core.plugin.loader import Registry, get_registry
from bootcamp_core.scale.cluster import LOCAL, cluster_cpus, connected

#: Records per Ray task: large enough that a task's overhead is small beside its work.
RANGE_ROWS = 5_000


def _emit_range(config: InstructionConfig, split: str, start: int, stop: int) -> tuple[int, list[tuple]]:
    """In a Ray worker: (the worker's process id, the emitted records of positions ``start`` to ``stop``)."""
    registry = get_registry()
    producer = gen._SplitProducer(config, gen.plan_groups(config, registry), registry, split)
    return os.getpid(), [tuple(producer.emit(position)) for position in range(start, stop)]


class RayGeneration:
    """What a Ray generation run used beyond its reports: the worker processes that generated records."""

    def __init__(self) -> None:
        self.worker_pids: set[int] = set()
        self.tasks = 0


def generate_many(
    configs: Sequence[InstructionConfig],
    output_dir: str | os.PathLike,
    *,
    address: str | None = LOCAL,
    in_flight: int | None = None,
    range_rows: int = RANGE_ROWS,
    continue_on_error: bool = False,
    registry: Registry | None = None,
    progress: Callable[[int], None] | None = None,
    used: RayGeneration | None = None,
) -> list[gen.GenerationReport]:
    """:func:`bootcamp_core.data.generate.generate_many` on a Ray cluster (``address`` as ``--ray`` takes it).

    ``in_flight`` ranges are generated at a time (default: twice the cluster's CPUs)."""
    if range_rows < 1:
        raise ConfigError("range_rows must be at least 1")
    if in_flight is not None and in_flight < 1:
        raise ConfigError("--ray-tasks must be at least 1")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    registry = registry or get_registry()
    used = used if used is not None else RayGeneration()
    reports = [gen.GenerationReport(config.name) for config in configs]
    names = [config.name for config in configs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"several configs would write the same files: {', '.join(duplicates)}; give them distinct names")
    plans: dict[int, list[gen.GroupPlan]] = {}
    for number, config in enumerate(configs):
        try:
            if config.error:
                raise ConfigError(config.error)
            plans[number] = gen.plan_groups(config, registry)
        except BootcampError as error:
            reports[number].error = f"{config.name}: {error}"
            if not continue_on_error:
                raise
    with connected(address) as ray:
        window = in_flight or 2 * cluster_cpus(ray)
        emit = ray.remote(num_cpus=1, max_retries=3)(_emit_range)
        for number, group_plans in plans.items():
            config = configs[number]
            try:
                for split, count in config.split_samples.items():
                    jsonl, parquet = gen._output_paths(config, output_dir, split)
                    _write_split(ray, emit, config, group_plans, split, count, jsonl, parquet, window, range_rows,
                                 progress, used)
                    gen._record_files(reports[number], split, count, jsonl, parquet)
            except BootcampError as error:
                reports[number].error = f"{config.name}: {error}"
                if not continue_on_error:
                    raise
    return reports


def _write_split(ray: Any, emit: Any, config: InstructionConfig, plans: list[gen.GroupPlan], split: str, count: int,
                 jsonl_path: Path, parquet_path: Path | None, window: int, range_rows: int,
                 progress: Callable[[int], None] | None, used: RayGeneration) -> None:
    splits = list(config.split_samples)
    offset = sum(config.split_samples[name] for name in splits[: splits.index(split)])
    ranges = deque((start, min(count, start + range_rows)) for start in range(0, count, range_rows))
    pending: deque = deque()
    with contextlib.ExitStack() as stack:
        write_line = stack.enter_context(JsonlWriter(jsonl_path)).write_line
        columns = None
        if parquet_path:
            writer = ParquetWriter(parquet_path, tool_names=sorted({name for plan in plans for name in plan.tool_names}))
            columns = gen._ParquetColumns(stack.enter_context(writer), plans, split)
        try:
            while ranges or pending:
                while ranges and len(pending) < window:
                    start, stop = ranges.popleft()
                    pending.append((start, emit.remote(config, split, start, stop)))
                start, ref = pending.popleft()
                try:
                    pid, rows = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    cause = error.cause if isinstance(getattr(error, "cause", None), BaseException) else None
                    if isinstance(cause, BootcampError):
                        raise cause from None
                    raise GenerationError(f"{config.name} {split}: a Ray task failed: {error}") from None
                used.worker_pids.add(pid)
                used.tasks += 1
                for position, row in enumerate(rows, start):
                    emitted = gen._Emitted(*row)
                    write_line(emitted.line)
                    if columns:
                        columns.add(emitted, offset + position)
                if progress:
                    progress(len(rows))
                del rows
            if columns:
                columns.flush()
        except BaseException:
            for _, ref in pending:
                ray.cancel(ref)
            raise
