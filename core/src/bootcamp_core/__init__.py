"""Bootcamp: verifiable, multi-turn, tool-calling environments for LLM agents, as a plugin ecosystem.

This module is the public API: a bootcamp or an extension package imports from here (and from
``bootcamp_core.testing`` in its tests), nothing else. The base classes, ``hookimpl`` and the errors are loaded with
the package; everything else on first use, so ``import bootcamp_core`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from bootcamp_core.__about__ import __version__
from bootcamp_core.plugin.components import Interaction, ReferenceAgent, Reward, TaskGenerator, Tool
from bootcamp_core.plugin.errors import (
    BootcampError,
    ConfigError,
    DuplicateIdError,
    GenerationError,
    InfrastructureError,
    ModelError,
    PluginError,
    UnknownIdError,
)
from bootcamp_core.plugin.hookspecs import Register, hookimpl

#: The plugin API. Hooks and keyword arguments are only ever added; anything retired warns for one minor release.
API_VERSION = 1

#: public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "get_registry": "bootcamp_core.plugin.loader",
    "Registry": "bootcamp_core.plugin.loader",
    "run_episode": "bootcamp_core.episode.engine",
    "RolloutLimits": "bootcamp_core.episode.engine",
    "EpisodeResult": "bootcamp_core.data.records",
    "GeneratedSample": "bootcamp_core.data.records",
    "normalize_record": "bootcamp_core.data.records",
    "read_records": "bootcamp_core.data.io",
    "write_records": "bootcamp_core.data.io",
    "load_component_config": "bootcamp_core.data.config",
}
#: public submodules, imported when first used
_MODULES = {}

__all__ = [
    "API_VERSION",
    "BootcampError",
    "ConfigError",
    "DuplicateIdError",
    "GenerationError",
    "InfrastructureError",
    "Interaction",
    "ModelError",
    "PluginError",
    "ReferenceAgent",
    "Register",
    "Reward",
    "TaskGenerator",
    "Tool",
    "UnknownIdError",
    "hookimpl",
    *sorted(_LAZY),
    *sorted(_MODULES),
]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'bootcamp_core' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
