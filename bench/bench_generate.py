"""Generation benchmark: records/s to JSONL and Parquet, process-pool scaling, peak memory.

Every number is printed next to a baseline measured in the same run:

- throughput: our streaming writer vs a naive generator that builds each record as a dict, keeps the split in a
  list, shuffles the list and dumps it (the shape of the original framework's generator);
- Parquet: JSONL + Parquet time over JSONL-only time (target ≤ 1.5);
- pool: 2 workers over 1 worker on a registry of several configs, two runs of each alternated (1 2 2 1 workers)
  so that a drift in the machine's speed weighs on both (target ≥ 1.8 on 2 free cores), next to the machine's own
  two-process capacity before and after them (``bench/machine.py``: 2.0 where the two cores are free; the ceiling of
  any pool);
- memory: peak RSS of a fresh process generating N shuffled records, ours vs the naive baseline (target < 200 MB
  for 1,000,000 records).

Run: ``python bench/bench_generate.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import parallel_capacity

LEVEL_1 = {"min_value": 100, "max_value": 10000, "min_operands": 2, "max_operands": 8, "tolerance": 1e-8}


def level_1_config(count: int, shuffle: bool = False, parquet: bool = False):
    from bootcamp_core.data.config import parse_instruction_config

    data = {
        "instruction_generators": {"level_1": {"config": LEVEL_1}},
        "global_config": {"class_name": "example/arithmetic", "default_seed": 7},
    }
    return parse_instruction_config(
        data, name="level_1", overrides={"split_samples": {"train": count}, "shuffle": shuffle, "gen_parquet": parquet}
    )


def naive_generate(count: int, path: Path, shuffle: bool = True) -> None:
    """The baseline: every record built as a dict and held in memory until the split is written."""
    from bootcamp_core.data.records import GeneratedSample
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    generator = registry.component("generator", "example/arithmetic", LEVEL_1)
    records = []
    for index in range(count):
        rng = random.Random(index)
        identity = generator.case_generator(rng)
        prompt = generator.prompt_func(identity, rng)
        sample = GeneratedSample(
            data_source="bootcamp/example", prompt=[{"role": "user", "content": prompt}], identity=identity,
            index=index, split="train", generator_name="level_1", generator="example/arithmetic",
            reward="example/arithmetic", tools=["example/calculator"], tool_names=["calculator"],
            interaction="example/feedback", versions={"bootcamp-example": "0.1.0"},
        )
        records.append(sample.to_record())
    if shuffle:
        random.Random(0).shuffle(records)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def cpu_seconds() -> float:
    """User and system CPU of this process and of its children that have ended (the pool's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, *args, **kwargs) -> float:
    start = time.perf_counter()
    function(*args, **kwargs)
    return time.perf_counter() - start


def throughput(count: int, folder: Path) -> None:
    from bootcamp_core.data.generate import generate
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    # imports (pyarrow too) and the first build of components stay out of the timings
    generate(level_1_config(1000, parquet=True), folder / "warm", registry=registry)
    naive = timed(naive_generate, count, folder / "naive.jsonl", shuffle=False)
    jsonl = timed(generate, level_1_config(count), folder / "jsonl", registry=registry)
    both = timed(generate, level_1_config(count, parquet=True), folder / "parquet", registry=registry)
    print(f"\n== throughput, one process, {count:,} level-1 records of bootcamp-example ==")
    print(f"baseline (dict per record, in memory) : {count / naive:>10,.0f} records/s")
    print(f"ours, JSONL                           : {count / jsonl:>10,.0f} records/s   "
          f"ratio vs baseline {naive / jsonl:.2f}x   (target >= 25,000 records/s)")
    print(f"ours, JSONL + Parquet                 : {count / both:>10,.0f} records/s   "
          f"time vs JSONL only {both / jsonl:.2f}x   (target <= 1.5x)")


#: The order of the pool's runs: the number of workers of each.
POOL_ORDER = (1, 2, 2, 1)


def pool_scaling(per_entry: int, folder: Path) -> None:
    from bootcamp_core.data.config import parse_instruction_config
    from bootcamp_core.data.generate import default_config_for, generate_many
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    data, path = default_config_for("example", registry)
    configs = []
    for group_name, group in data["instruction_generators"].items():
        single = {"instruction_generators": {group_name: group}, "global_config": data["global_config"]}
        configs.append(parse_instruction_config(single, path=path, name=group_name, namespace="example",
                                                overrides={"split_samples": {"train": per_entry, "test": per_entry // 10}}))
    total = sum(sum(config.split_samples.values()) for config in configs)
    load_before = os.getloadavg()[0]
    capacity_before = parallel_capacity()
    # Alternated runs, 1 2 2 1 workers: this machine's speed drifts within minutes, and one run of each, the one
    # after the other, read from 1.64x to 1.96x on the same code within the same quarter hour; in this order a steady
    # drift weighs on both sides alike.
    seconds: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, float] = {1: 0.0, 2: 0.0}
    for run, workers in enumerate(POOL_ORDER):
        before = cpu_seconds()
        seconds[workers].append(timed(generate_many, configs, folder / f"pool{workers}-{run}", max_workers=workers,
                                      registry=registry))
        cpu[workers] += cpu_seconds() - before
    one, two = sum(seconds[1]), sum(seconds[2])
    capacity_after = parallel_capacity()
    same = all(
        (folder / "pool1-0" / name).read_bytes() == (folder / f"pool2-{run}" / name).read_bytes()
        for run, workers in enumerate(POOL_ORDER) if workers == 2
        for name in os.listdir(folder / "pool1-0")
    )
    print(f"\n== process pool, registry of {len(configs)} configs, {total:,} records (all five levels), runs of 1 and 2 "
          f"workers alternated ({' '.join(map(str, POOL_ORDER))}) ==")
    print(f"1 worker : {total * len(seconds[1]) / one:>10,.0f} records/s   "
          f"(runs: {', '.join(f'{value:.2f}' for value in seconds[1])} s)")
    speedup = one / two
    print(f"2 workers: {total * len(seconds[2]) / two:>10,.0f} records/s   "
          f"(runs: {', '.join(f'{value:.2f}' for value in seconds[2])} s)   speed-up {speedup:.2f}x   "
          f"(target >= 1.8x on 2 free cores)   identical bytes: {same}")
    # On a shared machine the wall-clock ratio measures the other load as much as the pool; the CPU seconds say
    # what the pool itself costs: the parent's joining plus the workers' work over one process doing it all.
    print(f"CPU seconds (parent and workers): 1 worker {cpu[1]:.2f} s, 2 workers {cpu[2]:.2f} s = "
          f"{cpu[2] / cpu[1]:.2f}x the work; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"on {os.cpu_count()} cpus")
    print(f"the machine's own two-process capacity (a tight loop, 1 and 2 processes, 2.0 on two free cores; "
          f"informational, the pool's ceiling): {capacity_before:.2f} before the pool's runs, {capacity_after:.2f} after")
    free = (os.cpu_count() or 1) >= 2 and load_before < 1.0  # this benchmark's own earlier sections count too
    print(f"pool speed-up {speedup:.2f}x (target >= 1.8x): {'PASS' if speedup >= 1.8 else 'FAIL'}"
          + ("" if free else " (the cores were not free: a noisy figure)"))

PEAK_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {bench!r})
import bench_generate as bench
mode, count, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
if mode == "ours":
    from bootcamp_core.data.generate import generate
    generate(bench.level_1_config(count, shuffle=True), out)
else:
    bench.naive_generate(count, out / "naive.jsonl", shuffle=True)
# VmHWM: the peak of this process's own memory map (ru_maxrss would include what a fork inherited)
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def peak_rss_mb(mode: str, count: int, folder: Path) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    script = PEAK_SCRIPT.format(bench=str(Path(__file__).resolve().parent))
    result = subprocess.run([sys.executable, "-c", script, mode, str(count), str(folder)], capture_output=True,
                            text=True, check=True)
    return int(result.stdout.strip().splitlines()[-1]) / 1024


def memory(count: int, baseline_count: int, folder: Path) -> None:
    idle = peak_rss_mb("ours", 10, folder / "idle")
    ours = peak_rss_mb("ours", count, folder / "ours")
    naive_small = peak_rss_mb("naive", baseline_count // 4, folder / "naive_small")
    naive = peak_rss_mb("naive", baseline_count, folder / "naive")
    per_record_kb = (naive - naive_small) * 1024 / (baseline_count - baseline_count // 4)
    print("\n== peak memory (RSS of a fresh process), shuffled level-1 records ==")
    print(f"ours, 10 records              : {idle:8.1f} MB (imports)")
    print(f"ours, {count:>9,} records       : {ours:8.1f} MB   growth {ours - idle:6.1f} MB   (target < 200 MB)")
    print(f"baseline, {baseline_count:>9,} records   : {naive:8.1f} MB   grows {per_record_kb:.2f} KB per record")
    print(f"ratio: baseline would need {idle + per_record_kb * count / 1024:,.0f} MB for {count:,} records, "
          f"{(idle + per_record_kb * count / 1024) / ours:.1f}x ours")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000, help="records for the throughput runs")
    parser.add_argument("--pool-records", type=int, default=20_000, help="train records per registry entry")
    parser.add_argument("--memory-records", type=int, default=1_000_000, help="records for the memory run")
    parser.add_argument("--baseline-memory-records", type=int, default=40_000)
    parser.add_argument("--quick", action="store_true", help="a small run (numbers are noisier)")
    parser.add_argument("--section", choices=["throughput", "pool", "memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.records, args.pool_records, args.memory_records, args.baseline_memory_records = 30_000, 2_000, 100_000, 8_000
    if args.section is None:
        # each section in a fresh process: one section's heap must not slow the next
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
        for section in ("throughput", "pool", "memory"):
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--section", section], check=True)
        return
    with tempfile.TemporaryDirectory(prefix="bootcamp-bench-") as folder:
        root = Path(folder)
        if args.section == "throughput":
            throughput(args.records, root)
        elif args.section == "pool":
            pool_scaling(args.pool_records, root)
        else:
            memory(args.memory_records, args.baseline_memory_records, root)


if __name__ == "__main__":
    main()
