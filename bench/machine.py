"""How fast this machine runs Python at the time of a benchmark, printed next to the absolute figures.

A shared machine changes speed from hour to hour (two-fold on the two-core machines these benchmarks were written on),
and an absolute target (CPU per request, CPU per episode) moves with it, where a ratio against a baseline measured in
the same run does not. The benchmarks print this line at their start and end, so two runs can be told apart by the
machine as well as by the code. It holds two figures, because the machine does not slow down in one way only: a
tight loop (the processor itself) and a walk over 300,000 small objects (about 80 MB) in random order, then JSON
encoding and decoding (memory and caches, which other tenants share, and which the harness's work leans on).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

__all__ = ["parallel_capacity", "python_speed"]


def _loop() -> float:
    started = time.process_time()
    total = 0
    for number in range(10_000_000):
        total += number
    return time.process_time() - started


def _objects(items: list[dict], order: list[int], sample: dict) -> float:
    started = time.process_time()
    total = 0
    for at in order:
        total += items[at]["n"]
    for _ in range(1000):
        total += len(json.loads(json.dumps(sample)))
    return time.process_time() - started


def python_speed() -> str:
    """One line: the CPU seconds of a tight loop (ten million additions) and of a walk in random order over 300,000
    small dicts followed by 1,000 JSON round trips of a 5 KB object, the best of three each."""
    rng = random.Random(0)
    items = [{"n": number, "text": f"item {number}"} for number in range(300_000)]
    order = list(range(len(items)))
    rng.shuffle(order)
    sample = {"messages": [{"role": "tool", "content": f"result {number}", "id": number} for number in range(80)],
              "score": 0.5, "tools": [{"name": "calculator", "description": "x" * 1000}]}
    loop = min(_loop() for _ in range(3))
    objects = min(_objects(items, order, sample) for _ in range(3))
    return (f"machine: a tight Python loop takes {loop:.2f} s of CPU, a walk over 300,000 objects and JSON "
            f"{objects:.2f} s (informational: this machine's speed now, which moves every absolute CPU figure)")


#: The fixed work of :func:`parallel_capacity`'s processes: a tight loop of this many additions (about 1 s).
_CAPACITY_LOOP = 20_000_000


def _processes_at_once(count: int) -> float:
    """Wall seconds for ``count`` fresh processes, started together, to each run the same tight loop."""
    started = time.perf_counter()
    loop = f"total = 0\nfor number in range({_CAPACITY_LOOP}): total += number"
    children = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(count)]
    for child in children:
        child.wait()
    return time.perf_counter() - started


def parallel_capacity() -> float:
    """How many processes' worth of work this machine does at once with two of them busy: one process's wall time
    for a fixed tight loop, twice, over two processes' running it side by side (2.0 on two free cores). Runs 1 2 2 1
    processes, so a drift in the machine's speed weighs on both sides. A shared virtual machine's second processor
    may give less than a whole one (from 1.15 to 2.09 within a quarter hour on the machine these benchmarks were
    written on), and no process pool can do better than this ceiling."""
    alone = together = 0.0
    for count in (1, 2, 2, 1):
        seconds = _processes_at_once(count)
        if count == 1:
            alone += seconds
        else:
            together += seconds
    return 2 * alone / together
