"""Evaluation bookkeeping benchmark: CPU per episode of ``evaluate`` outside the engine, and its peak memory.

Every number is printed next to its baseline, measured in the same run:

- CPU per episode outside the engine: bootcamp-example's level-1 tasks played by its reference agents
  (``policy="reference"``, so no HTTP at all) through :func:`bootcamp_core.evaluate.run.evaluate` — reading and
  checking the dataset, writing results.jsonl crash-safely, the statistics, summary and report — less the same
  episodes through ``run_episode`` alone at the same concurrency, over the episodes (median of three runs each, in
  fresh processes; target <= 0.3 ms);
- peak memory: peak RSS of a fresh process evaluating 2,000 and 100,000 episodes, while the episodes run and are
  written (target: flat, growth under 0.1 KB per episode), and for the whole call, the summary's per-record pass@k
  data (about 0.2 KB a record) and the report included (informational).

Run: ``python bench/bench_eval_overhead.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LEVEL_1 = {"min_value": 100, "max_value": 10000, "min_operands": 2, "max_operands": 8, "tolerance": 1e-8}
CONCURRENCY = 64

CHILD = """
import json, sys, time, resource
from pathlib import Path
import anyio
mode, dataset, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
from bootcamp_core.plugin.loader import get_registry
from bootcamp_core.evaluate.dataset import load_dataset
registry = get_registry()
def rss_kb(field="VmRSS:"):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))

bookkeeping_peak = 0
if mode == "eval-memory":  # the peak before the summary files (the report) are written, sampled every 5 ms
    import threading

    def sample():
        global bookkeeping_peak
        while not (out / "summary.json").exists():
            bookkeeping_peak = max(bookkeeping_peak, rss_kb())
            time.sleep(0.005)

    threading.Thread(target=sample, daemon=True).start()
if mode.startswith("eval"):
    from bootcamp_core.evaluate.run import EvalConfig, evaluate
    config = EvalConfig(dataset_path=dataset, output_dir=out, policy="reference", max_concurrent={concurrency},
                        overwrite=True)
    started = time.process_time()
    summary = anyio.run(lambda: evaluate(config, registry=registry, progress=False))
    cpu = time.process_time() - started
    episodes = summary["this_run"]["episodes"]
    assert summary["overall"]["solved"] == episodes, "the reference agents must solve every episode"
else:
    from bootcamp_core.episode.engine import run_episode
    from bootcamp_core.episode.policies import make_policy
    records = list(load_dataset(dataset))
    policy = make_policy("reference", registry=registry)

    async def main():
        send, receive = anyio.create_memory_object_stream(len(records))
        for record in records:
            send.send_nowait(record)
        send.close()

        async def worker(stream):
            async with stream:
                async for record in stream:
                    await run_episode(record, policy, registry=registry)

        async with anyio.create_task_group() as group:
            for _ in range({concurrency}):
                group.start_soon(worker, receive.clone())
            receive.close()

    started = time.process_time()
    anyio.run(main)
    cpu = time.process_time() - started
    episodes = len(records)
print(json.dumps({{"cpu": cpu, "episodes": episodes, "peak_kb": rss_kb("VmHWM:"), "bookkeeping_kb": bookkeeping_peak}}))
"""


def write_dataset(count: int, folder: Path) -> Path:
    from bootcamp_core.data.config import parse_instruction_config
    from bootcamp_core.data.generate import generate

    data = {"instruction_generators": {"level_1": {"config": LEVEL_1}},
            "global_config": {"class_name": "example/arithmetic", "default_seed": 7}}
    config = parse_instruction_config(data, name=f"level_1_{count}", overrides={"split_samples": {"test": count}})
    report = generate(config, folder)
    return report.files[0]


def child(mode: str, dataset: Path, out: Path) -> dict:
    script = CHILD.format(concurrency=CONCURRENCY)
    result = subprocess.run([sys.executable, "-c", script, mode, str(dataset), str(out)], capture_output=True,
                            text=True, check=False)
    if result.returncode:
        sys.exit(f"{mode} run failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2_000, help="episodes of the CPU runs and the small memory run")
    parser.add_argument("--memory-episodes", type=int, default=100_000, help="episodes of the large memory run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each CPU measurement (the median is printed)")
    parser.add_argument("--quick", action="store_true", help="a smaller run (numbers are noisier)")
    args = parser.parse_args()
    if args.quick:
        args.memory_episodes, args.runs = 20_000, 1
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bootcamp-bench-") as folder:
        root = Path(folder)
        small = write_dataset(args.episodes, root / "data")
        large = write_dataset(args.memory_episodes, root / "data")
        evals, engines = [], []
        for run in range(args.runs):  # alternated, so a change in the machine's load hits both alike
            evals.append(child("eval", small, root / f"eval{run}"))
            engines.append(child("engine", small, root / f"engine{run}"))
        episodes = evals[0]["episodes"]
        eval_ms = statistics.median(run["cpu"] for run in evals) * 1000 / episodes
        engine_ms = statistics.median(run["cpu"] for run in engines) * 1000 / episodes
        outside = eval_ms - engine_ms
        print(f"\n== CPU per episode, {episodes:,} level-1 episodes, reference agents, concurrency {CONCURRENCY} "
              f"(median of {args.runs}) ==")
        print(f"run_episode alone (the baseline)   : {engine_ms:7.3f} ms")
        print(f"evaluate, everything               : {eval_ms:7.3f} ms")
        print(f"evaluate outside the engine        : {outside:7.3f} ms   (target <= 0.3 ms) {verdict(outside <= 0.3)}")

        little = child("eval-memory", small, root / "memory_small")
        big = child("eval-memory", large, root / "memory_large")
        extra = big["episodes"] - little["episodes"]
        print("\n== peak RSS of evaluate (a fresh process) ==")
        for label, field in (("the run, its writes and the statistics (before summary.json and the report)",
                              "bookkeeping_kb"),
                             ("everything, the report included (informational)", "peak_kb")):
            small_kb, large_kb = little[field], big[field]
            growth = (large_kb - small_kb) / extra
            target = f"   (target < 0.1 KB) {verdict(growth < 0.1)}" if field == "bookkeeping_kb" else ""
            print(f"{label}:")
            print(f"  {little['episodes']:>9,} episodes: {small_kb / 1024:8.1f} MB")
            print(f"  {big['episodes']:>9,} episodes: {large_kb / 1024:8.1f} MB   growth {growth:.3f} KB per "
                  f"episode{target}")


if __name__ == "__main__":
    main()
