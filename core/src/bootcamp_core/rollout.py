"""Moved to :mod:`bootcamp_core.episode` (engine, messages, tool_calls, scoring, off_loop): this path still works, with
a DeprecationWarning, until 0.2."""

from bootcamp_core._moved import forward

__getattr__ = forward(
    __name__,
    "bootcamp_core.episode.engine",
    "bootcamp_core.episode.messages",
    "bootcamp_core.episode.tool_calls",
    "bootcamp_core.episode.scoring",
    "bootcamp_core.episode.off_loop",
)
