"""The episode's view of :mod:`bootcamp_core.plugin.off_loop`, where sync plugin code is run off the event loop (the
shared building blocks, a layer above the episode, use it too)."""

from bootcamp_core.plugin.off_loop import OFF_LOOP_BATCH, OFF_LOOP_THREADS, run_off_loop

__all__ = ["OFF_LOOP_BATCH", "OFF_LOOP_THREADS", "run_off_loop"]
