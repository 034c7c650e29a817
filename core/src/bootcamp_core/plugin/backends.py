"""Tool backends: where a tool runs when its tool-config entry names a ``type:`` (``remote``: on a tool server).

A backend is a module, imported only when a config names it, so the rollout engine and the evaluator reach a tool
server (or, later, an MCP server or a Ray cluster) without importing the layer that implements it. The module
provides the functions of :class:`ToolBackend`; ``bootcamp_core.serve.client`` is the ``remote`` backend::

    backend = tool_backend("remote")
    tool = backend.tool("example/calculator", {"type": "remote", "url": "http://127.0.0.1:8000"})
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, cast

from bootcamp_core.plugin.components import Tool
from bootcamp_core.plugin.errors import ConfigError

__all__ = ["BACKENDS", "ToolBackend", "tool_backend"]

#: backend name (a tool-config entry's ``type:``) -> the module that provides it
BACKENDS: dict[str, str] = {
    "remote": "bootcamp_core.serve.client",
    "mcp": "bootcamp_core.mcp.backend",
    "ray": "bootcamp_core.scale.tools",
}


class ToolBackend(Protocol):
    """The functions a backend module defines. ``config`` is the tool-config entry (its ``type:`` included); the
    evaluator adds ``call_timeout_s``, the rollout's limit of one call, so the backend can stop a call there too."""

    def tool(self, tool_id: str, config: Mapping[str, Any]) -> Tool:
        """The tool ``tool_id`` as a :class:`Tool`; its class may carry ``versions`` ({distribution: version} of
        what runs it), which results record. A bad entry is a :class:`ConfigError` naming its field."""
        ...

    async def served_tools(self, config: Mapping[str, Any]) -> set[str]:
        """The tool ids available where ``config`` points, once it is ready (waiting a bounded time for one that is
        starting); :class:`InfrastructureError` when it cannot be reached."""
        ...

    async def close(self, config: Mapping[str, Any]) -> None:
        """Close what :meth:`tool` and :meth:`served_tools` opened for ``config`` (connections); may run twice."""
        ...


def tool_backend(name: Any) -> ToolBackend:
    """The backend module named ``name`` (a tool-config entry's ``type:``), imported now."""
    module = BACKENDS.get(name) if isinstance(name, str) else None
    if module is None:
        raise ConfigError(f"type {name!r} is not a tool backend; known: {', '.join(sorted(BACKENDS))}", field="type")
    return cast(ToolBackend, importlib.import_module(module))
