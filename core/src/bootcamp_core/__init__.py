"""Bootcamp: verifiable, multi-turn, tool-calling environments for LLM agents, as a plugin ecosystem."""

from bootcamp_core.__about__ import __version__
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
from bootcamp_core.plugin.hookspecs import hookimpl
from bootcamp_core.plugin.components import Interaction, ReferenceAgent, Reward, TaskGenerator, Tool

#: The plugin API. Hooks and keyword arguments are only ever added; anything retired warns for one minor release.
API_VERSION = 1

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
    "Reward",
    "TaskGenerator",
    "Tool",
    "UnknownIdError",
    "__version__",
    "hookimpl",
]
