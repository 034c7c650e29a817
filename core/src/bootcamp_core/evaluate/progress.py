"""The live progress of a run: counts so far and the bar on stderr (done / total, errors, mean score, rate)."""

from __future__ import annotations

import time
from typing import Any

from bootcamp_core.data.records import EpisodeResult
from bootcamp_core.evaluate.statistics import number

__all__ = ["UPDATE_S", "Progress", "RunStats"]

#: The shortest time between two updates of the bar.
UPDATE_S = 0.05


class RunStats:
    """Episodes finished in this run, its infrastructure errors and its mean score."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.errors = 0
        self.score_sum = 0.0
        self.started = time.monotonic()

    def add(self, result: EpisodeResult) -> None:
        self.done += 1
        self.errors += not result.success
        self.score_sum += number(result.score) if result.success else 0.0

    def fields(self) -> dict:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        mean = self.score_sum / self.done if self.done else 0.0
        return {"errors": self.errors, "mean": f"{mean:.3f}", "rate": f"{self.done / elapsed:.1f}"}


class Progress:
    """The live bar on stderr: done / total, infrastructure errors, mean score, episodes per second."""

    def __init__(self, stats: RunStats, enabled: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.stats = stats
        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"), TextColumn("mean score {task.fields[mean]}"),
            TextColumn("{task.fields[rate]} ep/s"), TimeRemainingColumn(),
            console=self.console, disable=not enabled, transient=False,
        )
        self.task = self.progress.add_task("eval", total=stats.total, **stats.fields())
        self._updated = 0.0

    def __enter__(self) -> Progress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._update()
        self.progress.__exit__(*exc)

    def update(self) -> None:
        """Show the counts of :class:`RunStats`: at most every :data:`UPDATE_S` (the bar is drawn 10 times a second;
        updating it costs more than an episode's statistics), and when the bar closes."""
        now = time.monotonic()
        if now - self._updated >= UPDATE_S:
            self._updated = now
            self._update()

    def _update(self) -> None:
        self.progress.update(self.task, completed=self.stats.done, **self.stats.fields())

    def print(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)
