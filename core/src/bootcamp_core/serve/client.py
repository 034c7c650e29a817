"""The tool server's client: a served tool that behaves exactly like a local :class:`~bootcamp_core.Tool`.

One :class:`ToolServerClient` per server holds one keep-alive connection pool (per event loop) with a connection
limit and timeouts (:class:`bootcamp_core.serve.http.FastClient`). Calls are retried only where repeating them is safe: every call when the connection could not even be
opened (nothing was sent); ``create`` (the worker answers a repeated create as a no-op), ``calc_reward`` and
``release`` after any transport failure; ``execute`` never after its request may have reached the tool. A release
keeps trying a server it cannot reach for up to ``RELEASE_PATIENCE_S`` (a master restarting), so that the instance is
not left held on its worker.

Errors keep the engine's meaning: a tool that raised on the server raises here too (the model sees why, as with a
local tool); a server that cannot be reached, a dead worker, a lost instance or a rejected token raise
:class:`~bootcamp_core.plugin.errors.InfrastructureError`.

    client = ToolServerClient("http://127.0.0.1:8000")
    await client.schemas()                       # what the server offers (cached)
    calculator = client.tool("example/calculator")
    instance = await calculator.create(identity={...})
    text, reward, metrics = await calculator.execute(instance, {"expression": "1+2"})

This module is also the ``remote`` tool backend (:mod:`bootcamp_core.plugin.backends`): :func:`tool`,
:func:`served_tools` and :func:`close` take a tool-config entry ``{type: remote, url, tool_id?, token?,
call_timeout_s?, schema?}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio

from bootcamp_core.plugin.components import Tool
from bootcamp_core.plugin.errors import ConfigError, InfrastructureError, ModelError

logger = logging.getLogger("bootcamp_core.serve.client")

TOKEN_ENV = "BOOTCAMP_TOKEN"
#: how long a call waits for a restarted master whose workers are registering again
NOT_READY_WAIT_S = 30.0
#: how long a release keeps trying a server it cannot reach (a master restarting): a release that never arrives leaves
#: the instance held on its worker until the idle timeout
RELEASE_PATIENCE_S = 15.0


class RemoteToolError(Exception):
    """The tool raised on the server; subclasses carry the remote exception's class name."""


_ERROR_CLASSES: dict[str, type[RemoteToolError]] = {}


def _remote_error(kind: str, message: str) -> Exception:
    if kind == "infrastructure":
        return InfrastructureError(message)
    if kind == "model":
        return ModelError(message)
    # "ValueError: bad" from the server reads "ValueError: bad" here, as it would in-process
    name, sep, rest = message.partition(": ")
    if kind == "tool" and sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
        cls = _ERROR_CLASSES.get(name)
        if cls is None:
            cls = _ERROR_CLASSES[name] = type(name, (RemoteToolError,), {"__module__": __name__})
        return cls(rest)
    return RemoteToolError(message)


class ToolServerClient:
    """A connection to one tool server (a master, or a single worker)."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 600.0, max_connections: int = 256,
                 retries: int = 2) -> None:
        if not re.match(r"^https?://[^/]+", url or ""):
            raise ConfigError(f"tool server URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.token = token or os.environ.get(TOKEN_ENV) or None
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.retries = retries
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}
        self._schemas: dict[str, dict] | None = None
        self._tools: dict[tuple[str, float | None], RemoteTool] = {}

    def __repr__(self) -> str:  # never the token
        return f"ToolServerClient({self.url!r})"

    def _client(self) -> Any:
        from bootcamp_core.serve.http import FastClient

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            for old in [key for key in self._clients if key.is_closed()]:  # loops of finished asyncio.run()s
                self._clients.pop(old).close()
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            client = self._clients[loop] = FastClient(limit_per_host=self.max_connections, timeout_s=self.timeout_s,
                                                      connect_timeout_s=min(10.0, self.timeout_s), headers=headers)
        return client

    async def request(self, method: str, path: str, payload: dict | None = None, *, idempotent: bool,
                      patience_s: float = 0.0) -> dict:
        """One API call with the retry rule of the module docstring; returns the JSON answer. ``patience_s``: keep
        retrying transport failures (where the rule allows a retry) for this long, beyond the retry count."""
        from bootcamp_core.serve.http import ConnectError

        body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        attempt = 0
        not_ready_until = None
        patient_until = asyncio.get_running_loop().time() + patience_s if patience_s > 0 else None
        while True:
            try:
                status, raw = await self._client().request(method, self.url + path, body)
            except ConnectError as error:
                failure, retry = str(error), True
            except (OSError, asyncio.TimeoutError) as error:
                failure, retry = f"{type(error).__name__}: {error}", idempotent
            else:
                if status == 200:
                    try:
                        return json.loads(raw)
                    except ValueError:
                        raise InfrastructureError(f"tool server {self.url}{path}: not JSON: {raw[:200]!r}") from None
                kind, message = _error_of(raw, status)
                if status == 503 and kind == "not_ready":  # a restarted master: workers are registering again
                    loop_time = asyncio.get_running_loop().time()
                    not_ready_until = not_ready_until or loop_time + NOT_READY_WAIT_S
                    if loop_time < not_ready_until:
                        await asyncio.sleep(0.2)
                        continue
                    failure, retry = message, False
                elif status == 503 and kind == "no_worker" and idempotent:
                    failure, retry = message, True  # workers may be starting up
                elif kind == "tool" or status in (400, 413, 504):
                    # the tool raised, timed out on the server, or refused what the model sent: the model's to see
                    raise _remote_error(kind, message)
                else:
                    hint = " (wrong or missing token: set BOOTCAMP_TOKEN)" if status in (401, 403) else ""
                    raise InfrastructureError(f"tool server {self.url}{path}: HTTP {status} {message}{hint}")
            patient = patient_until is not None and asyncio.get_running_loop().time() < patient_until
            if not retry or (attempt >= self.retries and not patient):
                raise InfrastructureError(f"tool server {self.url}{path}: {failure}")
            attempt += 1
            await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))

    async def call(self, tool_id: str, action: str, payload: dict) -> dict:
        return await self.request("POST", f"/tools/{tool_id}/{action}", payload, idempotent=action != "execute",
                                  patience_s=RELEASE_PATIENCE_S if action == "release" else 0.0)

    async def schemas(self, refresh: bool = False) -> dict[str, dict]:
        """{tool id: OpenAI function schema (plus ``parallel_safe``, ``versions``)} of every served tool."""
        if self._schemas is None or refresh:
            data = await self.request("GET", "/tools", idempotent=True)
            tools = data.get("tools") if isinstance(data, dict) else None
            if not isinstance(tools, dict):
                raise InfrastructureError(f"tool server {self.url}/tools: unexpected answer")
            self._schemas = tools
        return dict(self._schemas)

    async def health(self) -> dict:
        return await self.request("GET", "/health", idempotent=True)

    def tool(self, tool_id: str, schema: dict | None = None, *, call_timeout_s: float | None = None) -> RemoteTool:
        """The served tool ``tool_id`` as a Tool; its schema from ``schema``, :meth:`schemas`, or the installed class.

        ``call_timeout_s``: the caller's limit of one ``execute``; the server stops the tool then too.
        """
        tool = self._tools.get((tool_id, call_timeout_s))
        if tool is not None:
            return tool
        if schema is None and self._schemas is not None:
            schema = self._schemas.get(tool_id)
        if schema is None:
            schema = _installed_schema(tool_id)
        if schema is None:
            raise ConfigError(f"tool {tool_id!r}: no schema; it is not installed here and not served by {self.url} "
                              "(await client.schemas() first)")
        function = schema.get("function", schema)
        cls = type(f"Remote_{re.sub(r'[^0-9A-Za-z_]', '_', tool_id)}", (RemoteTool,), {
            "name": function["name"],
            "description": function.get("description", ""),
            "parameters": function.get("parameters") or {"type": "object", "properties": {}},
            "parallel_safe": bool(schema.get("parallel_safe", False)),
            "tool_id": tool_id,
            "versions": dict(schema.get("versions") or {}),
        })
        tool = self._tools[(tool_id, call_timeout_s)] = cls(client=self, call_timeout_s=call_timeout_s)
        return tool

    async def aclose(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            client.close()


def _error_of(raw: bytes, status: int) -> tuple[str, str]:
    try:
        error = json.loads(raw).get("error") or {}
        return str(error.get("type", "")), str(error.get("message", ""))
    except (ValueError, AttributeError):
        return "", raw[:200].decode("utf-8", "replace")


def _installed_schema(tool_id: str) -> dict | None:
    from bootcamp_core.plugin.loader import get_registry

    try:
        cls = get_registry().get_class("tool", tool_id)
    except Exception:
        return None
    return {**cls.openai_schema(), "parallel_safe": cls.parallel_safe}


class RemoteTool(Tool):
    """A tool served by a tool server; each served tool id gets its own subclass carrying its schema."""

    tool_id: ClassVar[str]
    versions: ClassVar[dict[str, str]] = {}

    def __init__(self, client: ToolServerClient, *, call_timeout_s: float | None = None, **config: Any) -> None:
        super().__init__(**config)
        self.client = client
        # the caller's limit of one call (the rollout's tool timeout): the worker cancels the tool at that point too,
        # so an abandoned call never runs on beside the episode's next one
        self.call_timeout_s = call_timeout_s

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or uuid.uuid4().hex
        data = await self.client.call(self.tool_id, "create", {
            "instance_id": instance_id, "kwargs": {"identity": identity, **kwargs},
        })
        return str(data.get("instance_id") or instance_id)

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        payload: dict[str, Any] = {"instance_id": instance_id, "parameters": parameters, "kwargs": kwargs}
        if self.call_timeout_s:
            payload["timeout_s"] = self.call_timeout_s
        data = await self.client.call(self.tool_id, "execute", payload)
        return data.get("text", ""), float(data.get("reward", 0.0)), data.get("metrics") or {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        data = await self.client.call(self.tool_id, "calc_reward", {"instance_id": instance_id, "kwargs": kwargs})
        return float(data.get("reward", 0.0))

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        await self.client.call(self.tool_id, "release", {"instance_id": instance_id, "kwargs": kwargs})


_CLIENTS: dict[tuple[str, str | None], ToolServerClient] = {}


def client_for(url: str, token: str | None = None) -> ToolServerClient:
    """The shared client of a server: every remote tool of a process uses one pool per server."""
    key = (url.rstrip("/"), token or os.environ.get(TOKEN_ENV) or None)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = ToolServerClient(url, token=token)
    return client


def is_remote(config: dict | None) -> bool:
    return bool(config) and config.get("type") == "remote"  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------ the ``remote`` backend
def _client_of(config: Mapping[str, Any]) -> ToolServerClient:
    url = config.get("url")
    if not isinstance(url, str):
        raise ConfigError("a remote tool needs url (the tool server's)", field="url")
    return client_for(url, config.get("token"))


def tool(tool_id: str, config: Mapping[str, Any]) -> RemoteTool:
    """The tool a tool-config entry ``{type: remote, url, tool_id?, token?, call_timeout_s?, schema?}`` names.

    ``schema``: the tool's OpenAI function schema (plus ``parallel_safe``), for a tool neither installed here nor
    asked of the server yet (see :meth:`ToolServerClient.tool`).
    """
    try:
        client = _client_of(config)
    except ConfigError as error:
        raise ConfigError(f"tool {tool_id}: {error}", field=error.field) from None
    return client.tool(str(config.get("tool_id") or tool_id), config.get("schema"),
                       call_timeout_s=config.get("call_timeout_s"))


#: the name plugins use for :func:`tool`
remote_tool = tool


async def served_tools(config: Mapping[str, Any]) -> set[str]:
    """The tool ids the server of ``config`` serves, once its workers have registered (see :func:`wait_ready`)."""
    client = _client_of(config)
    await wait_ready(client)
    return set(await client.schemas())


async def close(config: Mapping[str, Any]) -> None:
    """Close the connections to the server of ``config``."""
    await _client_of(config).aclose()


async def wait_ready(client: ToolServerClient, timeout_s: float = 120.0, startup_s: float = 30.0) -> None:
    """Wait while a freshly started master still waits for its workers (a worker alone is ready when it answers).

    A master up for longer than ``startup_s`` with some live workers is running degraded (a worker died): go on.
    """
    deadline = anyio.current_time() + timeout_s
    while True:
        status = await client.health()
        degraded = status.get("live_workers", 0) > 0 and status.get("uptime_s", 0) > startup_s
        if status.get("ready", True) or degraded or anyio.current_time() > deadline:
            return
        logger.info("waiting for the tool server's workers: %s live of %s expected", status.get("live_workers"),
                    status.get("expected_workers"))
        await anyio.sleep(0.5)
