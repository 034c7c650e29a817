"""Old import paths of names that moved into the core's layers: they keep working, with a warning, until 0.2."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable


def forward(old: str, *new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the shim at ``old``: each name is looked up in the ``new`` modules in order (the
    names of one old module may now live in several), with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        for module in new:
            target = importlib.import_module(module)
            if hasattr(target, name):
                value = getattr(target, name)
                break
        else:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old}.{name} moved: {_new_spelling(name, value, module)} ({old} goes away in "
                      "bootcamp-core 0.2)", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__


def _new_spelling(name: str, value: Any, module: str) -> str:
    """How to import ``value`` now: its public name when it has one (which may differ: ``dumps`` is
    ``to_json_text``), else the module it lives in."""
    import bootcamp_core

    if name in bootcamp_core.__all__ and getattr(bootcamp_core, name) is value:
        return "import it from bootcamp_core"
    for public in bootcamp_core.__all__:
        if public in bootcamp_core._LAZY and getattr(bootcamp_core, public) is value:
            return f"use bootcamp_core.{public}"
    return f"import it from {module}"
