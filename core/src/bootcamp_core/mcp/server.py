"""``bootcamp mcp serve``: a Model Context Protocol server on which one MCP session plays one episode.

Built on the official ``mcp`` SDK's low-level server, over streamable HTTP (path ``/mcp``) or stdio. A session lists
``start_episode`` and ``submit_answer``; ``start_episode`` picks a record, starts its episode and adds the record's
tools to the session's tool list (``notifications/tools/list_changed``). The episode itself is the rollout engine's
:func:`~bootcamp_core.episode.engine.run_episode` with the MCP client as its policy (:class:`SessionPolicy`): every
tool call becomes an assistant message with that call, run on the episode's instance by the engine, and the
submitted answer the final assistant message, so scoring, interactions, limits and the results line are the same as
in an evaluation. The episode is released when the session closes, goes idle past the session timeout, or the server
stops; one closed without a submission is scored as an empty answer with ``finish_reason`` ``"abandoned"``.

With an output folder every finished episode is appended to ``results.jsonl`` in the evaluator's format
(:class:`~bootcamp_core.evaluate.results.ResultsWriter`), one line at a time under an exclusive ``flock`` on the
file, so several servers (stdio ones, one per client) may share a folder; each line is fsynced before the answer
that finished its episode is returned.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions

from bootcamp_core.__about__ import __version__
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import PolicyTurn, RolloutLimits, run_episode
from bootcamp_core.evaluate.results import RESULTS_NAME, ResultsWriter
from bootcamp_core.plugin.errors import BootcampError, ConfigError, ModelError

__all__ = ["EpisodeServer", "SessionPolicy", "serve_http", "serve_stdio"]

logger = logging.getLogger("bootcamp_core.mcp.server")

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: the text the rollout engine gives a tool call that failed on the model's side (episode/tool_calls.py)
_TOOL_ERROR_PREFIX = "Error: "

START_TOOL = types.Tool(
    name="start_episode",
    description="Start this session's episode: the record at `index` (0-based), or the next unplayed one. Returns "
                "the task's prompt; the task's own tools are listed after it.",
    input_schema={"type": "object", "properties": {"index": {"type": "integer", "minimum": 0}},
                  "additionalProperties": False},
)
SUBMIT_TOOL = types.Tool(
    name="submit_answer",
    description="Submit the final answer of the episode. Returns feedback when the task continues, else the score.",
    input_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                  "additionalProperties": False},
)


class _Abandoned(ModelError):
    """The client left before submitting an answer."""


class SessionPolicy:
    """The policy of one session's episode: each turn is what the MCP client does next.

    :meth:`act` hands the engine one assistant message and returns what came back: ``("turn", messages)`` (the tool
    messages or the interaction's feedback the engine appended) when the engine asks for the next turn, or
    ``("done", messages)`` when the episode ended on it.
    """

    def __init__(self, idle_timeout_s: float | None) -> None:
        self.idle_timeout_s = idle_timeout_s
        self._actions_in, self._actions = anyio.create_memory_object_stream[dict | None](1)
        self._replies_in, self._replies = anyio.create_memory_object_stream[tuple[str, list]](1)
        self.ready = anyio.Event()  # the engine asked for the first turn (tools created) or the episode ended
        self.tools: list[dict] = []
        self.messages: list[dict] = []
        self._pending: int | None = None  # where the reply to the last action starts in ``messages``
        self._lock = anyio.Lock()
        self.abandoned = False
        self.answered = False
        self.finished = False

    async def __call__(self, messages: list[dict], tools: list[dict], record: GeneratedSample, rng: Any) -> PolicyTurn:
        self.messages, self.tools = messages, tools
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._reply(("turn", messages[pending:]))
        self.ready.set()
        message = None
        if not self.abandoned:
            with anyio.move_on_after(self.idle_timeout_s if self.idle_timeout_s else float("inf")):
                try:
                    message = await self._actions.receive()
                except anyio.EndOfStream:
                    message = None
        if message is None:  # closed, timed out, or the server stops
            if self.abandoned or self.answered:
                raise _Abandoned("the session ended before the episode did", kind="abandoned")
            self.abandoned = True
            message = {"role": "assistant", "content": ""}  # scored as an empty answer
        self._pending = len(messages) + 1  # the engine appends the message, then its replies
        return PolicyTurn(message=message)

    async def act(self, message: dict) -> tuple[str, list]:
        async with self._lock:
            if self.finished or self.abandoned:
                raise _EpisodeOver()
            if not message.get("tool_calls"):
                self.answered = True
            while True:  # a reply nobody waited for (its client went away mid-call) is not this action's
                try:
                    self._replies.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            await self._actions_in.send(message)
            try:
                return await self._replies.receive()
            except anyio.EndOfStream:
                raise _EpisodeOver() from None

    def _reply(self, reply: tuple[str, list]) -> None:
        """Hand the waiting :meth:`act` its reply; never blocks the engine (a stale one is replaced)."""
        try:
            self._replies.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            pass
        try:
            self._replies_in.send_nowait(reply)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def abandon(self) -> None:
        self.abandoned = True
        self._actions_in.close()

    async def finish(self) -> None:
        """The episode ended: answer the action in flight with what it got."""
        self.finished = True
        self.ready.set()
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._reply(("done", self.messages[pending:]))
        self._replies_in.close()


class _EpisodeOver(Exception):
    pass


@attrs.define
class _Session:
    policy: SessionPolicy | None = None
    index: int | None = None
    episode_key: str | None = None
    result: Any = None
    done: anyio.Event = attrs.field(factory=anyio.Event)
    calls: int = 0


class EpisodeServer:
    """The records of one dataset, served one episode per MCP session."""

    def __init__(self, records: Sequence[dict], *, registry: Any = None, limits: RolloutLimits | None = None,
                 output_dir: str | os.PathLike | None = None, session_timeout_s: float | None = 1800.0,
                 max_sessions: int = 256, system_prompt: str | None = None,
                 component_config: Mapping[str, dict] | None = None) -> None:
        from bootcamp_core.plugin.loader import get_registry

        if not records:
            raise ConfigError("no records to serve")
        self.records = list(records)
        self.registry = registry or get_registry()
        self.limits = limits
        self.session_timeout_s = session_timeout_s
        self.max_sessions = max_sessions
        self.system_prompt = system_prompt
        self.component_config = dict(component_config or {})
        self.results_path = Path(output_dir) / RESULTS_NAME if output_dir is not None else None
        self._writer: ResultsWriter | None = None
        self._lock_fd: int | None = None
        self._started: dict[int, int] = {}  # record index -> episodes started
        self._next = 0
        self._limits: dict[Any, RolloutLimits] = {}
        self._live = 0
        self._task_group: Any = None
        self._policies: set[SessionPolicy] = set()  # of the episodes running
        self.server: Server[Any] = Server("bootcamp", version=__version__, lifespan=self._lifespan,
                                          on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    # ------------------------------------------------------------------------------------------------ lifecycle
    @asynccontextmanager
    async def _lifespan(self, _server: Any) -> AsyncIterator[dict]:
        if self.results_path is not None:
            self._writer = ResultsWriter(self.results_path)
            self._lock_fd = os.open(self.results_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            async with anyio.create_task_group() as group:
                self._task_group = group
                yield {}
                self._task_group = None  # the server stops: episodes still running end as abandoned
                for policy in list(self._policies):
                    policy.abandon()
        finally:
            if self._writer is not None:
                self._writer.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)

    def options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # ------------------------------------------------------------------------------------------------ handlers
    def _session(self, ctx: Any) -> _Session:
        # the per-client Connection (its ``state`` and ``exit_stack`` live as long as the MCP session)
        connection = ctx.session._connection
        session = connection.state.get("bootcamp")
        if session is None:
            session = connection.state["bootcamp"] = _Session()
            connection.exit_stack.push_async_callback(self._close, session)
        return session

    async def _close(self, session: _Session) -> None:
        if session.policy is not None and not session.done.is_set():
            session.policy.abandon()
            with anyio.move_on_after(60):
                await session.done.wait()

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        session = self._session(ctx)
        tools = [START_TOOL, SUBMIT_TOOL]
        if session.policy is not None:
            tools += [_mcp_tool(schema) for schema in session.policy.tools]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = self._session(ctx)
        arguments = params.arguments or {}
        try:
            if params.name == "start_episode":
                return await self._start(ctx, session, arguments)
            if session.policy is None:
                return _error(f"{params.name}: no episode yet; call start_episode first")
            if session.done.is_set() and session.policy.finished:
                return _error("the episode has ended; open a new session for another")
            if params.name == "submit_answer":
                answer = arguments.get("answer")
                if not isinstance(answer, str):
                    return _error("submit_answer needs answer (a string)")
                return await self._submit(session, answer)
            if params.name not in {schema.get("function", schema)["name"] for schema in session.policy.tools}:
                return _error(f"unknown tool {params.name!r}")
            return await self._tool(session, params.name, arguments)
        except _EpisodeOver:
            return _error("the episode has ended; open a new session for another")

    async def _start(self, ctx: Any, session: _Session, arguments: Mapping[str, Any]) -> types.CallToolResult:
        if session.policy is not None:
            return _error("this session's episode has started already; one session plays one episode")
        index = arguments.get("index")
        if index is None:
            index = self._next_index()
            if index is None:
                return _error(f"every record has been played ({len(self.records)}); give an index")
        elif not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.records):
            return _error(f"unknown record {index!r}: the dataset holds records 0..{len(self.records) - 1}")
        if self._task_group is None:
            return _error("the server is stopping", kind="server_stopping")
        if self._live >= self.max_sessions:
            return _error(f"{self._live} episodes are running, the most this server runs at once; try again later",
                          kind="busy")
        repeat = self._started.get(index, 0)
        self._started[index] = repeat + 1
        record = self.records[index]
        session.index, session.policy = index, SessionPolicy(self.session_timeout_s)
        self._live += 1
        self._task_group.start_soon(self._run, session, record, repeat)
        await session.policy.ready.wait()
        if session.policy.finished:  # the episode ended before its first turn: its tools could not be created
            result = session.result
            return _error(f"the episode could not start: {result.error if result else 'see the server log'}",
                          kind=(result.error_kind if result else None) or "plugin_error")
        try:
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        except Exception as error:  # noqa: BLE001 (a client without a channel sees the tools on its next tools/list)
            logger.debug("tools/list_changed not sent: %s", error)
        prompt = "\n\n".join(str(m.get("content") or "") for m in session.policy.messages)
        tools = [schema.get("function", schema)["name"] for schema in session.policy.tools]
        return types.CallToolResult(content=[types.TextContent(type="text", text=prompt)], structured_content={
            "episode_id": session.episode_key, "index": index, "prompt": prompt, "tools": tools})

    def _next_index(self) -> int | None:
        while self._next < len(self.records) and self._next in self._started:
            self._next += 1
        return self._next if self._next < len(self.records) else None

    def _limits_of(self, record: dict) -> RolloutLimits:
        generator = ((record.get("extra_info") or {}).get("bootcamp") or {}).get("generator")
        if generator not in self._limits:
            limits = self.limits or RolloutLimits()
            try:
                recommended = getattr(self.registry.get_class("generator", generator), "limits", None)
            except (BootcampError, AttributeError, TypeError, ValueError):  # not installed here: the defaults
                recommended = None
            if self.limits is None and isinstance(recommended, Mapping):
                changes = {name: value for name, value in recommended.items()
                           if name in ("max_assistant_turns", "max_user_turns") and isinstance(value, int)
                           and not isinstance(value, bool) and value >= 1}
                limits = attrs.evolve(limits, **changes)
            # the session timeout bounds waiting for the client; the episode as a whole is bounded by it per turn
            self._limits[generator] = attrs.evolve(limits, episode_timeout_s=max(limits.episode_timeout_s, 10 ** 9))
        return self._limits[generator]

    async def _run(self, session: _Session, record: dict, repeat: int) -> None:
        from bootcamp_core.episode.engine import episode_id

        policy = session.policy
        assert policy is not None
        self._policies.add(policy)
        try:
            session.episode_key = episode_id(record, repeat)
            result = await run_episode(record, policy, registry=self.registry, limits=self._limits_of(record),
                                       system_prompt=self.system_prompt, component_config=self.component_config,
                                       repeat=repeat, episode_key=session.episode_key,
                                       evaluation_config={"runner": "bootcamp mcp serve", "index": session.index})
            if policy.abandoned and not policy.answered:
                result.finish_reason = "abandoned"
                if result.error_kind == "abandoned":
                    result.error_type = result.error_kind = result.error = None
            session.result = result
            if self._writer is not None:
                await anyio.to_thread.run_sync(self._append, self._writer.line_for(result))
        except Exception as error:  # a bad record or a full disk ends this episode, never the server
            logger.warning("episode of record %s failed: %s: %s", session.index, type(error).__name__, error,
                           exc_info=True)
        finally:
            self._policies.discard(policy)
            self._live -= 1
            with anyio.CancelScope(shield=True):
                await policy.finish()
            session.done.set()

    def _append(self, line: str) -> None:
        """One results line under an exclusive lock on the file, so servers sharing a folder never interleave."""
        assert self._writer is not None and self._lock_fd is not None
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self._writer.write_line(line)
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    async def _tool(self, session: _Session, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        assert session.policy is not None
        session.calls += 1
        call = {"id": f"call_{session.calls}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        state, replies = await session.policy.act({"role": "assistant", "content": "", "tool_calls": [call]})
        output = next((str(m.get("content") or "") for m in replies if m.get("role") == "tool"), "")
        if state == "done":
            await session.done.wait()
            result = await self._finished(session, output)
            return result
        return types.CallToolResult(content=[types.TextContent(type="text", text=output)],
                                    is_error=output.startswith(_TOOL_ERROR_PREFIX))

    async def _submit(self, session: _Session, answer: str) -> types.CallToolResult:
        assert session.policy is not None
        state, replies = await session.policy.act({"role": "assistant", "content": answer})
        if state == "turn":
            feedback = next((str(m.get("content") or "") for m in replies if m.get("role") == "user"), "")
            return types.CallToolResult(content=[types.TextContent(type="text", text=feedback)],
                                        structured_content={"done": False, "feedback": feedback})
        await session.done.wait()
        return await self._finished(session, None)

    async def _finished(self, session: _Session, output: str | None) -> types.CallToolResult:
        result = session.result
        if result is None:
            return _error("the episode failed", kind="plugin_error")
        if not result.success:
            return _error(f"the episode failed: {result.error}", kind=result.error_kind)
        content = {"done": True, "score": result.score, "solved": result.solved, "finish_reason": result.finish_reason}
        text = (output + "\n\n" if output else "") + json.dumps(content)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=content)


def _mcp_tool(schema: dict) -> types.Tool:
    function = schema.get("function", schema)
    return types.Tool(name=function["name"], description=function.get("description") or "",
                      input_schema=function.get("parameters") or {"type": "object", "properties": {}})


def _error(message: str, *, kind: str | None = None) -> types.CallToolResult:
    """An error the model reads; an infrastructure error (``kind``) carries ``{"error_kind": kind}`` too."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True,
                                structured_content={"error_kind": kind} if kind else None)


# ------------------------------------------------------------------------------------------------ transports
async def serve_stdio(episodes: EpisodeServer) -> None:
    """One session over stdin/stdout, until the client closes it."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await episodes.server.run(read, write, episodes.options())


class _TokenGate:
    """ASGI middleware: every request needs ``Authorization: Bearer <token>`` (the tool server's rule off loopback)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32001, "message": "wrong or missing token (Authorization: Bearer ...)"}}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(episodes: EpisodeServer, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The ASGI app of streamable HTTP at ``/mcp``; a token is required to bind anywhere but loopback."""
    if host not in LOOPBACK and not token:
        raise ConfigError(f"binding {host} needs a token (--token or BOOTCAMP_TOKEN): only loopback may go without",
                          field="token")
    app = episodes.server.streamable_http_app(
        streamable_http_path="/mcp", host=host, session_idle_timeout=episodes.session_timeout_s,
        max_sessions=episodes.max_sessions)
    return _TokenGate(app, token) if token else app


async def serve_http(episodes: EpisodeServer, *, host: str = "127.0.0.1", port: int = 8765,
                     token: str | None = None) -> None:
    import uvicorn

    app = http_app(episodes, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    print(f"bootcamp mcp: serving {len(episodes.records)} records at http://{host}:{port}/mcp", file=sys.stderr,
          flush=True)
    await server.serve()
