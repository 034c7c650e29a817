"""bootcamp-reasoning-gym benchmark: records/s to JSONL for a mixed config, against reasoning-gym's own rate.

Both sides make the same tasks in the same process: the package's default mix (one dataset of every family, chain_sum
at curriculum level 1). Ours is ``bootcamp_core``'s ``generate`` of the test split to JSONL; the baseline is what a
reasoning-gym user writes, ``create_dataset(name, seed, size, **config)`` per group with the same dataset config and as
many entries as that group got, then ``json.dumps`` of every entry to a JSONL file. Both are warmed once (imports,
dataset builds), then timed in alternating rounds; the figure is the median. Target: ours within 1.5x of the
baseline's rate (records/s ratio >= 0.667), whose cost is the generators'.

Then ``bootcamp demo`` in a fresh process with only this bootcamp loaded (``BOOTCAMP_LOAD_PLUGINS=reasoning_gym``),
wall-clock time from start to exit. Target: under 60 s.

Then, for information (no target), the cost of the sandbox: answers/s of a verifier that evaluates model text
(``spiral_matrix``, the entries' own answers written as Python lists) scored in the sandbox vs in this process.

Run: ``python bench/bench_reasoning_gym.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RATIO_TARGET = 1 / 1.5
DEMO_TARGET_S = 60.0


def mixed_config(records: int):
    import bootcamp_reasoning_gym
    import yaml

    from bootcamp_core.data.config import parse_instruction_config

    path = Path(bootcamp_reasoning_gym.__file__).parent / "configs" / "default.yaml"
    return parse_instruction_config(yaml.safe_load(path.read_text()), path=path, name="reasoning_gym",
                                    namespace="reasoning_gym",
                                    overrides={"split_samples": {"test": records}, "gen_parquet": False})


def ours(config, folder: Path) -> tuple[float, Path]:
    from bootcamp_core.data.generate import generate

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # some reasoning-gym generators print progress
        result = generate(config, folder)
    elapsed = time.perf_counter() - start
    (jsonl,) = [path for path in result.files if path.suffix == ".jsonl"]
    return elapsed, jsonl


def tasks_of(jsonl: Path) -> list[tuple[str, dict, int]]:
    """(dataset, dataset config, entries) per group, from our own output: the baseline makes the same tasks."""
    counts: collections.Counter = collections.Counter()
    configs = {}
    with jsonl.open() as lines:
        for line in lines:
            identity = json.loads(line)["reward_model"]["ground_truth"]
            counts[identity["dataset"]] += 1
            configs[identity["dataset"]] = identity["config"]
    return [(name, configs[name], count) for name, count in sorted(counts.items())]


def baseline(tasks, seed: int, path: Path) -> float:
    import reasoning_gym

    start = time.perf_counter()
    with path.open("w") as out, contextlib.redirect_stdout(io.StringIO()):
        for name, config, count in tasks:
            for entry in reasoning_gym.create_dataset(name, seed=seed, size=count, **config):
                out.write(json.dumps(entry) + "\n")
    return time.perf_counter() - start


def demo_seconds() -> tuple[float, int, str]:
    env = {**os.environ, "BOOTCAMP_LOAD_PLUGINS": "reasoning_gym", "PYTHONWARNINGS": "ignore"}
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as folder:
        start = time.perf_counter()
        process = subprocess.run([sys.executable, "-m", "bootcamp_core.cli", "demo", "--output-dir", folder, "-q"],
                                 env=env, capture_output=True, text=True, check=False, timeout=600)
        elapsed = time.perf_counter() - start
    tail = (process.stdout + process.stderr).strip().splitlines()[-3:]
    return elapsed, process.returncode, " | ".join(tail)


def sandbox_rates(count: int) -> tuple[float, float]:
    """(answers/s in the sandbox, answers/s in this process) on ``count`` spiral_matrix answers; sandbox warmed."""
    from bootcamp_reasoning_gym import datasets, sandbox

    dataset = datasets.build("spiral_matrix", {})
    entries = [datasets.normalise(dataset[index]) for index in range(count)]
    answers = [repr(entry["answer"].split()) for entry in entries]
    sandbox.score("spiral_matrix", {}, answers[0], entries[0])
    start = time.perf_counter()
    sandboxed = [sandbox.score("spiral_matrix", {}, answer, entry)[0] for answer, entry in zip(answers, entries)]
    sandbox_s = time.perf_counter() - start
    start = time.perf_counter()
    direct = [dataset.score_answer(answer, entry) for answer, entry in zip(answers, entries)]
    direct_s = time.perf_counter() - start
    assert sandboxed == direct, "the sandbox scored differently"
    return count / sandbox_s, count / direct_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer records and rounds")
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--no-demo", action="store_true", help="skip timing bootcamp demo")
    args = parser.parse_args()
    records = args.records or (400 if args.quick else 2000)
    rounds = args.rounds or (3 if args.quick else 5)
    config = mixed_config(records)
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-reasoning-gym-") as temporary:
        folder = Path(temporary)
        _, jsonl = ours(config, folder / "warm")  # imports and dataset builds, on both sides
        tasks = tasks_of(jsonl)
        baseline(tasks, config.seed, folder / "warm-baseline.jsonl")
        mine, theirs = [], []
        for index in range(rounds):
            mine.append(ours(config, folder / f"ours-{index}")[0])
            theirs.append(baseline(tasks, config.seed, folder / f"baseline-{index}.jsonl"))
        ours_rate = records / statistics.median(mine)
        baseline_rate = sum(count for _, _, count in tasks) / statistics.median(theirs)
        ratio = ours_rate / baseline_rate
        print(f"mixed config: {len(tasks)} datasets, {records} records, median of {rounds} rounds")
        print(f"  ours (bootcamp generate -> JSONL): {ours_rate:10.0f} records/s")
        print(f"  baseline (create_dataset + json): {baseline_rate:10.0f} records/s")
        print(f"  ratio ours/baseline: {ratio:.3f} (target >= {RATIO_TARGET:.3f}, i.e. within 1.5x)")
        passed = ratio >= RATIO_TARGET
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}: records/s within 1.5x of reasoning-gym's own")
    sandboxed, direct = sandbox_rates(50 if args.quick else 200)
    print(f"sandboxed verifier (spiral_matrix): {sandboxed:.0f} answers/s in the sandbox, {direct:.0f} answers/s "
          f"in process ({direct / sandboxed:.0f}x; information, no target)")
    if not args.no_demo:
        seconds, code, tail = demo_seconds()
        print(f"bootcamp demo, this bootcamp alone: {seconds:.1f} s, exit status {code} (target < {DEMO_TARGET_S:.0f} s)"
              f"\n  {tail}")
        passed = code == 0 and seconds < DEMO_TARGET_S
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}: bootcamp demo under a minute")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
