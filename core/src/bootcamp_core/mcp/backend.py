"""The ``mcp`` tool backend: a bootcamp tool whose calls go to a Model Context Protocol server.

A tool-config entry ``{class_name: <tool id>, type: mcp, url: http://.../mcp | command: ..., args?, env?, mcp_tool?,
token?}`` (``mcp_server_url`` is read as ``url``) keeps the installed tool's name, description and schema, and sends
its calls to the server's tool ``mcp_tool`` (default: the tool's name). Before an evaluation, :func:`served_tools`
checks that the server offers that tool with the bootcamp's arguments (a mismatch is one :class:`ConfigError`).

One MCP session per episode: opened at the episode's first call and closed at ``release``, so a stateful server
keeps per-episode state. A session is owned by its own task (the SDK's transports are task-scoped), which the
episode's calls talk to. Opening a session is retried (nothing reached the tool yet); a call whose request may have
reached it is not. Transport failures are :class:`InfrastructureError`; a tool result with ``isError`` is the tool
rejecting what the model sent, shown to the model like a local tool's exception.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any, ClassVar

from bootcamp_core.plugin.components import Tool
from bootcamp_core.plugin.errors import ConfigError, InfrastructureError

__all__ = ["McpTool", "close", "served_tools", "tool"]

logger = logging.getLogger("bootcamp_core.mcp.backend")

OPEN_RETRIES = 2
TOKEN_ENV = "BOOTCAMP_TOKEN"


class McpToolError(Exception):
    """The MCP server's tool answered with ``isError``."""


def _where(config: Mapping[str, Any]) -> str:
    return str(config.get("url") or config.get("command"))


def _check(config: Mapping[str, Any]) -> None:
    url, command = config.get("url"), config.get("command")
    if bool(url) == bool(command):
        raise ConfigError("an mcp tool needs url (streamable HTTP) or command (stdio), not both", field="url")
    if url and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ConfigError(f"url must start with http:// or https://, got {url!r}", field="url")


async def _open(stack: AsyncExitStack, config: Mapping[str, Any]) -> Any:
    """An initialized ClientSession for ``config``, its transports entered on ``stack``."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    if config.get("url"):
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        token = config.get("token") or os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        timeout = float(config.get("call_timeout_s") or 60.0) + 10.0
        client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
        read, write = await stack.enter_async_context(streamable_http_client(str(config["url"]), http_client=client))
    else:
        params = StdioServerParameters(command=str(config["command"]), args=[str(a) for a in config.get("args") or []],
                                       env={str(k): str(v) for k, v in (config.get("env") or {}).items()} or None)
        read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


class _Session:
    """One MCP session, owned by a task of its own; :meth:`call` hands it work."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self._work: asyncio.Queue = asyncio.Queue()
        self._ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._own())

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                session = None
                for attempt in range(OPEN_RETRIES + 1):
                    try:
                        session = await _open(stack, self.config)
                        break
                    except Exception as error:  # noqa: BLE001 (nothing reached the tool: safe to try again)
                        if attempt == OPEN_RETRIES:
                            raise InfrastructureError(f"MCP server {_where(self.config)}: cannot open a session: "
                                                      f"{type(error).__name__}: {error}") from None
                        await asyncio.sleep(0.2 * 2 ** attempt)
                self._ready.set_result(None)
                while True:
                    item = await self._work.get()
                    if item is None:
                        return
                    name, work, future = item
                    try:
                        result = await work(session)
                    except Exception as error:  # noqa: BLE001 (reported to the caller)
                        if not future.done():
                            future.set_exception(InfrastructureError(
                                f"MCP server {_where(self.config)}: {name}: {type(error).__name__}: {error}"))
                        return  # a transport that failed once is not trusted again
                    if not future.done():
                        future.set_result(result)
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error if isinstance(error, InfrastructureError) else InfrastructureError(
                    f"MCP server {_where(self.config)}: {type(error).__name__}: {error}"))
            while not self._work.empty():
                item = self._work.get_nowait()
                if item is not None and not item[2].done():
                    item[2].set_exception(InfrastructureError(f"MCP server {_where(self.config)}: session closed"))
            if not isinstance(error, Exception):
                raise

    async def call(self, name: str, arguments: dict) -> Any:
        return await self.run(name, lambda session: session.call_tool(name, arguments))

    async def list_tools(self) -> list:
        return (await self.run("tools/list", lambda session: session.list_tools())).tools

    async def run(self, name: str, work: Any) -> Any:
        await asyncio.shield(self._ready)
        if self._task.done():
            raise InfrastructureError(f"MCP server {_where(self.config)}: the session is closed")
        future = asyncio.get_running_loop().create_future()
        await self._work.put((name, work, future))
        done, _ = await asyncio.wait({future, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            return future.result()
        raise InfrastructureError(f"MCP server {_where(self.config)}: the session ended during {name}")

    async def aclose(self) -> None:
        if not self._task.done():
            await self._work.put(None)
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 30)
            except Exception:  # noqa: BLE001 (closing, or past 30 s: nothing left to report)
                self._task.cancel()


class McpTool(Tool):
    """A bootcamp tool served by an MCP server; each configured tool gets its own subclass with the tool's schema."""

    mcp_tool: ClassVar[str]
    versions: ClassVar[dict[str, str]] = {}

    def __init__(self, backend_config: Mapping[str, Any], **config: Any) -> None:
        super().__init__(**config)
        self.backend_config = dict(backend_config)
        self._sessions: dict[str, _Session] = {}

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        return await super().create(instance_id, identity, **kwargs)  # the session opens at the first call

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        session = self._sessions.get(instance_id)
        if session is None:
            session = self._sessions[instance_id] = _Session(self.backend_config)
        result = await session.call(self.mcp_tool, dict(parameters) if isinstance(parameters, Mapping) else {})
        text = "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "type", "") == "text")
        if result.is_error:
            raise McpToolError(text)
        return text, 0.0, {}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        session = self._sessions.pop(instance_id, None)
        if session is not None:
            await session.aclose()
        await super().release(instance_id, **kwargs)


def _installed(tool_id: str) -> Any:
    from bootcamp_core.plugin.loader import get_registry

    try:
        return get_registry().get_class("tool", tool_id)
    except Exception as error:  # noqa: BLE001 (one clear error)
        raise ConfigError(f"tool {tool_id}: an mcp entry needs the bootcamp's tool installed here for its schema "
                          f"({error})") from None


def tool(tool_id: str, config: Mapping[str, Any]) -> McpTool:
    """The tool a tool-config entry ``{type: mcp, url | command, mcp_tool?, ...}`` names."""
    try:
        _check(config)
    except ConfigError as error:
        raise ConfigError(f"tool {tool_id}: {error}", field=error.field) from None
    cls = _installed(str(config.get("tool_id") or tool_id))
    sub = type(f"Mcp_{cls.name}", (McpTool,), {
        "name": cls.name, "description": cls.description, "parameters": cls.parameters,
        "parallel_safe": False, "mcp_tool": str(config.get("mcp_tool") or cls.name),
    })
    return sub(config)


def _shape(schema: Mapping[str, Any] | None) -> tuple:
    schema = schema or {}
    return (sorted((schema.get("properties") or {}).keys()), sorted(schema.get("required") or []))


async def served_tools(config: Mapping[str, Any]) -> set[str]:
    """``{tool_id}`` once the server lists the entry's tool with the bootcamp's arguments; a mismatch is a
    :class:`ConfigError`, a server that cannot be reached an :class:`InfrastructureError`."""
    _check(config)
    tool_id = str(config.get("tool_id") or "")
    cls = _installed(tool_id)
    name = str(config.get("mcp_tool") or cls.name)
    session = _Session(config)
    try:
        listed = await session.list_tools()
    finally:
        await session.aclose()
    offered = {item.name: item for item in listed}
    if name not in offered:
        raise ConfigError(f"the MCP server at {_where(config)} has no tool {name!r} (it lists: "
                          f"{', '.join(sorted(offered)) or 'none'})", field="mcp_tool")
    theirs, ours = _shape(offered[name].input_schema), _shape(cls.parameters)
    if theirs != ours:
        raise ConfigError(f"the MCP server's tool {name!r} takes {theirs[0]} (required {theirs[1]}), but the "
                          f"bootcamp's {tool_id} takes {ours[0]} (required {ours[1]})", field="mcp_tool")
    return {tool_id}


async def close(config: Mapping[str, Any]) -> None:
    """Nothing shared to close: each episode's session closes at its release."""
