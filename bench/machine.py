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
import time

__all__ = ["python_speed"]


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
