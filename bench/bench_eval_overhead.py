"""Evaluation bookkeeping benchmark: CPU per episode of ``evaluate`` outside the engine, and its peak memory.

Every number is printed next to its baseline, measured in the same run:

- CPU per episode outside the engine: bootcamp-example's level-1 tasks played by its reference agents
  (``policy="reference"``, so no HTTP at all) through :func:`bootcamp_core.evaluate.run.run_evaluation` — reading
  and checking the dataset, writing results.jsonl crash-safely, the statistics, summary and report — less the same
  episodes through ``run_episode`` alone at the same concurrency, set up as ``run_evaluation`` sets its episodes up
  (its event loop, the heap frozen: :mod:`bootcamp_core.plugin.runtime`), over the episodes (median of three runs
  each, in fresh processes, the three kinds of run alternated and each in turn first in its round; target <= 0.3
  ms), and the same with an API key set, which every line is kept free of (informational: the cost of masking in a
  run against an endpoint). Each process first runs the same call on 64 episodes, so what is measured is the cost
  per episode, not the one-time start of a process (importing and compiling modules, which without a bytecode
  cache costs as much as a few hundred episodes); that start is printed apart (informational);
- peak memory: peak RSS of a fresh process evaluating 2,000 and 100,000 episodes (``--memory-episodes``: any
  sizes, 1,000,000 included, about 20 minutes on two cores), while the episodes run, are written and the
  statistics are computed, before summary.json and the report are written (target: flat, growth under 0.1 KB per
  episode from the smallest to the largest size run), and for the whole call, the report included
  (informational).

The absolute CPU figures move with the machine's speed: the run prints the CPU time of two fixed Python workloads
(``bench/machine.py``) before and after them, so runs can be compared across hours.

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

from machine import python_speed

LEVEL_1 = {"min_value": 100, "max_value": 10000, "min_operands": 2, "max_operands": 8, "tolerance": 1e-8}
CONCURRENCY = 64

CHILD = """
import json, sys, time, resource
from pathlib import Path
import anyio
mode, dataset, warm, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
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


def run_eval(dataset, out):
    from bootcamp_core.evaluate.run import EvalConfig, run_evaluation
    # "eval-key": as a run against an endpoint, with an API key the results must never show (masked)
    config = EvalConfig(dataset_path=dataset, output_dir=out, policy="reference", max_concurrent={concurrency},
                        overwrite=True, api_key="sk-bench-0123456789abcdef" if mode == "eval-key" else None)
    summary = run_evaluation(config, registry=registry, progress=False)  # as bootcamp eval runs it
    assert summary["overall"]["solved"] == summary["this_run"]["episodes"], "the reference agents must solve all"
    return summary["this_run"]["episodes"]


def run_engine(dataset, out):
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

    # as run_evaluation sets its episodes up: the same event loop, the heap built before them frozen
    from bootcamp_core.plugin.runtime import event_loop_options, frozen_heap
    with frozen_heap():
        anyio.run(main, backend_options=event_loop_options())
    return len(records)


run = run_eval if mode.startswith("eval") else run_engine
started = time.process_time()
if mode != "eval-memory":  # a warm-up: the one-time start of the process (imports) is not a cost per episode
    run(warm, out.with_name(out.name + "-warm"))
start_cpu = time.process_time() - started
started = time.process_time()
episodes = run(dataset, out)
cpu = time.process_time() - started
print(json.dumps({{"cpu": cpu, "start_cpu": start_cpu, "episodes": episodes, "peak_kb": rss_kb("VmHWM:"),
                  "bookkeeping_kb": bookkeeping_peak}}))
"""


def write_dataset(count: int, folder: Path) -> Path:
    from bootcamp_core.data.config import parse_instruction_config
    from bootcamp_core.data.generate import generate

    data = {"instruction_generators": {"level_1": {"config": LEVEL_1}},
            "global_config": {"class_name": "example/arithmetic", "default_seed": 7}}
    config = parse_instruction_config(data, name=f"level_1_{count}", overrides={"split_samples": {"test": count}})
    report = generate(config, folder)
    return report.files[0]


def child(mode: str, dataset: Path, warm: Path, out: Path) -> dict:
    script = CHILD.format(concurrency=CONCURRENCY)
    result = subprocess.run([sys.executable, "-c", script, mode, str(dataset), str(warm), str(out)],
                            capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f"{mode} run failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2_000, help="episodes of the CPU runs and the small memory run")
    parser.add_argument("--memory-episodes", type=int, nargs="+", default=[100_000],
                        help="episodes of the larger memory runs (1000000 takes about 20 minutes)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each CPU measurement (the median is printed)")
    parser.add_argument("--quick", action="store_true", help="a smaller run (numbers are noisier)")
    args = parser.parse_args()
    if args.quick:
        args.memory_episodes, args.runs = [20_000], 1
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    print(python_speed())
    with tempfile.TemporaryDirectory(prefix="bootcamp-bench-") as folder:
        root = Path(folder)
        warm = write_dataset(64, root / "warm")
        small = write_dataset(args.episodes, root / "data")
        evals, engines, keyed = [], [], []
        runs = {"eval": evals, "engine": engines, "eval-key": keyed}
        for run in range(args.runs):
            # alternated, so a change in the machine's load hits all alike, and each in turn first, second and third
            # (a mode's figure moved by up to a sixth with its place in the round in this machine's runs)
            order = list(runs)[run % 3:] + list(runs)[:run % 3]
            for mode in order:
                runs[mode].append(child(mode, small, warm, root / f"{mode}{run}"))
        episodes = evals[0]["episodes"]
        eval_ms = statistics.median(run["cpu"] for run in evals) * 1000 / episodes
        engine_ms = statistics.median(run["cpu"] for run in engines) * 1000 / episodes
        outside = eval_ms - engine_ms
        keyed_ms = statistics.median(run["cpu"] for run in keyed) * 1000 / episodes
        eval_start = statistics.median(run["start_cpu"] for run in evals)
        engine_start = statistics.median(run["start_cpu"] for run in engines)
        print(f"\n== CPU per episode, {episodes:,} level-1 episodes, reference agents, concurrency {CONCURRENCY} "
              f"(median of {args.runs}) ==")
        print(f"run_episode alone (the baseline)   : {engine_ms:7.3f} ms")
        print(f"evaluate, everything               : {eval_ms:7.3f} ms")
        print(f"evaluate outside the engine        : {outside:7.3f} ms   (target <= 0.3 ms) {verdict(outside <= 0.3)}")
        print(f"  the same with an API key to mask : {keyed_ms - engine_ms:7.3f} ms   (informational: a run against "
              "an endpoint, its key kept out of every line)")
        print(f"first call of 64 episodes, imports included (informational): evaluate {eval_start:.2f} s, "
              f"run_episode {engine_start:.2f} s")
        print(python_speed())

        sizes = sorted({args.episodes, *args.memory_episodes})
        runs = []
        for size in sizes:
            dataset = small if size == args.episodes else write_dataset(size, root / f"data{size}")
            runs.append(child("eval-memory", dataset, warm, root / f"memory{size}"))
            if dataset != small:
                dataset.unlink()
        smallest, largest = runs[0], runs[-1]
        extra = max(largest["episodes"] - smallest["episodes"], 1)
        print("\n== peak RSS of evaluate (a fresh process) ==")
        for label, field in (("the run, its writes and the statistics (before summary.json and the report)",
                              "bookkeeping_kb"),
                             ("everything, the report included (informational)", "peak_kb")):
            print(f"{label}:")
            for measured in runs:
                print(f"  {measured['episodes']:>9,} episodes: {measured[field] / 1024:8.1f} MB")
            growth = (largest[field] - smallest[field]) / extra
            target = f"   (target < 0.1 KB) {verdict(growth < 0.1)}" if field == "bookkeeping_kb" else ""
            print(f"  growth {smallest['episodes']:,} -> {largest['episodes']:,} episodes: {growth:.3f} KB per "
                  f"episode{target}")
        if largest["episodes"] < 1_000_000:
            rate = evals[0]["cpu"] / episodes
            print(f"  largest size run: {largest['episodes']:,} episodes; 1,000,000 not run (about "
                  f"{rate * 1_000_000 / 60:.0f} min of CPU here: --memory-episodes 100000 1000000)")


if __name__ == "__main__":
    main()
