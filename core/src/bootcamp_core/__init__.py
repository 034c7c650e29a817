"""Bootcamp: verifiable, multi-turn, tool-calling environments for LLM agents, as a plugin ecosystem.

This module is the public API: a bootcamp or an extension package imports from here (and from
``bootcamp_core.testing`` in its tests), nothing else. The base classes, ``hookimpl`` and the errors are loaded with
the package; everything else on first use, so ``import bootcamp_core`` stays cheap.
"""

import importlib as _importlib
from typing import Any as _Any

from bootcamp_core.__about__ import __version__ as __version__
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

#: public name -> the module that defines it (``module:name`` where it is defined under another name), imported
#: when the name is first used
_LAZY = {
    "AnswerFeedback": "bootcamp_core.blocks",
    "CallBudget": "bootcamp_core.blocks",
    "last_assistant_text": "bootcamp_core.blocks",
    "tool_call_message": "bootcamp_core.blocks",
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
    # added by this change, pending DESIGN.md (docs/api.md lists them): what bootcamps and plugins/verl need
    "message_text": "bootcamp_core.blocks",
    "config_number": "bootcamp_core.blocks",
    "config_flag": "bootcamp_core.blocks",
    "config_whole_number": "bootcamp_core.blocks",
    "config_mapping": "bootcamp_core.blocks",
    "score_trajectory": "bootcamp_core.episode.scoring",
    "execute_tool": "bootcamp_core.episode.tool_calls",
    "run_coroutine_off_loop": "bootcamp_core.plugin.off_loop",
    "to_json_value": "bootcamp_core.episode.messages:jsonable",
    "to_json_text": "bootcamp_core.data.io:dumps",
    "atomic_write": "bootcamp_core.data.io:AtomicFile",
    # the record schema as a value (DESIGN.md, Records), to extend with a field of one's own
    "RECORD_SCHEMA": "bootcamp_core.data.schema",
    "RecordSchema": "bootcamp_core.data.schema",
    "RecordField": "bootcamp_core.data.schema:Field",
    "tool_server_client": "bootcamp_core.serve.client:client_for",
    # where a tool-config entry's `type:` runs its tool (remote, mcp, ray), and the Ray tool actors' own API
    "tool_backend": "bootcamp_core.plugin.backends",
    "ToolActors": "bootcamp_core.scale.tools",
    # a reward's model-side error kind for the answer it scores (its own verifier limit), without raising
    "report_error": "bootcamp_core.plugin.errors",
    # the functions behind `bootcamp generate` and `bootcamp eval`, for scripts (the README's Python API)
    "config_for_bootcamp": "bootcamp_core.data.generate",
    # not "generate": bootcamp_core.generate is the old module path, whose import would rebind that name
    "generate_dataset": "bootcamp_core.data.generate:generate",
    "EvalConfig": "bootcamp_core.evaluate.config",
    "run_evaluation": "bootcamp_core.evaluate.run",
    # what a plugin's `bootcamp.commands` module shares with core's commands (bootcamp_core.cli.helpers)
    "add_flag": "bootcamp_core.cli.helpers",
    "resolve_component_config": "bootcamp_core.cli.helpers",
    "run_guarded": "bootcamp_core.cli.helpers",
}
#: public submodules, imported when first used
_MODULES = {"answers": "bootcamp_core.answers"}

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


def __getattr__(name: str) -> _Any:
    if name in _MODULES:
        value = _importlib.import_module(_MODULES[name])
    elif name in _LAZY:
        module, _, defined_as = _LAZY[name].partition(":")
        value = getattr(_importlib.import_module(module), defined_as or name)
    else:
        raise AttributeError(f"module 'bootcamp_core' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # the public API only: the layer subpackages the import system sets as attributes are internal
    return sorted({*__all__, "__version__", *(name for name in globals() if name.startswith("__"))})
