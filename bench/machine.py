"""How fast this machine runs Python at the time of a benchmark, printed next to the absolute figures.

A shared machine changes speed from hour to hour (two-fold on the two-core machines these benchmarks were written on),
and an absolute target (CPU per request, CPU per episode) moves with it, where a ratio against a baseline measured in
the same run does not. The benchmarks print this figure at their start and end, so two runs can be told apart by the
machine as well as by the code.
"""

from __future__ import annotations

import time

__all__ = ["python_speed"]


def _loop() -> float:
    started = time.process_time()
    total = 0
    for number in range(10_000_000):
        total += number
    return time.process_time() - started


def python_speed() -> str:
    """One line: the CPU seconds of a fixed pure-Python loop (ten million additions), the best of three."""
    best = min(_loop() for _ in range(3))
    return f"machine: a fixed pure-Python loop (10 million additions) takes {best:.2f} s of CPU (informational: " \
           f"absolute CPU figures scale with it)"
