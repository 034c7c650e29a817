"""Old import paths of names that moved into the core's layers: they keep working, with a warning, until 0.2."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable


def forward(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the shim at ``old``: each name is looked up in ``new``, with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        target = importlib.import_module(new)
        try:
            value = getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        import bootcamp_core

        where = "bootcamp_core" if name in bootcamp_core.__all__ else new
        warnings.warn(f"{old}.{name} moved: import it from {where} ({old} goes away in bootcamp-core 0.2)",
                      DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
