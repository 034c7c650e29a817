"""How a long run sets up its process: the event loop it runs on, and the garbage collector kept off the heap it
was built from.

Both measured on ``bootcamp eval``'s path (``bench/bench_rollout.py`` (e1): concurrency 64, 1 tool turn, the
scripted server in its own process), the set-ups alternated in one process, four to eight rounds each: process CPU per
request 0.572 → 0.487, 0.564 → 0.512, 0.471 → 0.414 and 0.597 → 0.512 ms with both (9-15% less). Apart, in two such
sets: uvloop 0.572 → 0.477 and 0.564 → 0.501 ms; the frozen heap 0.572 → 0.521 and 0.564 → 0.525 ms. Together they
save less than the sum, as uvloop leaves fewer Python objects for the collector.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator
from typing import Any

from bootcamp_core.plugin.errors import ConfigError

__all__ = ["EVENT_LOOP_ENV", "event_loop_options", "frozen_heap"]

#: ``asyncio`` runs ``bootcamp eval`` on the standard library's event loop instead of uvloop (to tell a problem of
#: uvloop's from one of ours).
EVENT_LOOP_ENV = "BOOTCAMP_EVENT_LOOP"

_frozen_depth = 0
_frozen_lock = threading.Lock()


def event_loop_options() -> dict[str, Any]:
    """``backend_options`` for ``anyio.run``: uvloop where it is installed (``bootcamp-core`` depends on it except on
    Windows) unless :data:`EVENT_LOOP_ENV` says ``asyncio``."""
    choice = os.environ.get(EVENT_LOOP_ENV, "").strip().lower()
    if choice not in ("", "uvloop", "asyncio"):
        raise ConfigError(f"{EVENT_LOOP_ENV} must be uvloop or asyncio, not {choice!r}")
    if choice == "asyncio":
        return {}
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if choice == "uvloop":
            raise ConfigError(f"{EVENT_LOOP_ENV}=uvloop, but uvloop is not installed") from None
        return {}
    return {"use_uvloop": True}


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """While the block runs, everything alive when it started (modules, the registry, the policy) is out of the
    garbage collector's reach (``gc.freeze``), so a full collection scans only what the run itself allocated.

    Many episodes in flight keep their objects alive across young collections, which promotes them and brings full
    collections; without the freeze each would walk the whole heap of imported modules as well (some 200,000
    objects under ``bootcamp eval``). Nothing is collected first: a full collection costs more than it saves on a
    short run. The objects go back to the collector when the outermost block ends, so nothing frozen stays
    uncollectable after it.
    """
    global _frozen_depth
    with _frozen_lock:
        if _frozen_depth == 0:
            gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()
