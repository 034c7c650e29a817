"""A scripted OpenAI-compatible chat server on loopback: the one test double for an LLM endpoint.

Tests (ours and plugin authors') start a real HTTP server that speaks the chat-completions protocol and answer each
request from a script, then drive it with the real ``openai`` client::

    from bootcamp_core.testing.chat_server import ScriptedChatServer, Reply, sequence

    script = sequence(
        Reply.calls(("calculator", {"expression": "1 + 2"})),
        Reply.text('```json\\n{"result": 3}\\n```'),
    )
    with ScriptedChatServer(script) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="stub")
        ...
        assert server.requests[0]["model"] == "stub"

A script is any callable ``script(request_body: dict) -> Reply`` (plain or ``async``); it runs on the server's event
loop, so it must not block. :func:`sequence` plays replies in order, :func:`per_conversation` plays a sequence per
conversation (keyed by the first user message), so many concurrent episodes each get the whole script.

Faults, for tests of what an evaluation survives: :meth:`Reply.fault` makes any of :data:`FAULT_KINDS` (HTTP 500,
429 with and without ``Retry-After``, a reset connection, a request that hangs, a cut JSON body, ``choices: []``, a
null message); :func:`storm` injects them at random into a share of a script's requests (its own seeded random),
:func:`failing_first` into the first attempts of every turn, as a run of consecutive failures::

    with ScriptedChatServer(storm(script, 0.3, seed=7, hang_s=2.0)) as server:
        ...

Token ids: a request with ``"return_token_ids": true`` (vLLM's field) gets the ids of the prompt it was given and
of the answer it got, in vLLM's shape: ``prompt_token_ids`` on the response, ``token_ids`` on the choice (with
``token_ids="sglang"``, SGLang's shape: both on the choice, the prompt's only when ``return_prompt_token_ids`` is
true too). The ids come from a deterministic toy tokenisation, :func:`toy_prompt_ids` and
:func:`toy_completion_ids`: one token per UTF-8 byte (id = byte + 16), a template of ``<|im_start|>`` (id 1)
``role\n body`` ``<|im_end|>`` (id 2, the end of a turn, sampled as the answer's last token) ``\n`` per message,
the tool schemas as a first ``tools`` message, and a generation prompt ``<|im_start|>assistant\n``. A tool call
is rendered as ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``: sampled in compact JSON, re-rendered
in the next prompt with spaces after ``:`` and ``,`` as chat templates' ``tojson`` does, so, as with real
templates, the prompt after a tool call does not extend the ids sampled before it.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

__all__ = ["FAULT_KINDS", "Reply", "Script", "ScriptedChatServer", "failing_first", "first_user_text",
           "per_conversation", "sequence", "storm", "toy_completion_ids", "toy_prompt_ids"]

#: What :meth:`Reply.fault` can inject: HTTP 500; 429 without and with ``Retry-After``; the connection reset before
#: any answer; an answer that comes only after ``hang_s`` (past the client's timeout); and HTTP 200 bodies that are
#: no chat completion: cut JSON, ``choices: []``, a null message.
FAULT_KINDS = ("500", "429", "429_retry_after", "reset", "hang", "cut_json", "empty_choices", "null_message")
_BODY_FAULTS = ("reset", "cut_json", "empty_choices", "null_message")


#: The toy tokenisation's special ids (see the module doc); a byte ``b`` is id ``b + TOY_BYTE_OFFSET``.
TOY_IM_START, TOY_IM_END, TOY_BYTE_OFFSET = 1, 2, 16


def _toy_bytes(text: str) -> list[int]:
    return [byte + TOY_BYTE_OFFSET for byte in text.encode("utf-8")]


def _toy_body(message: dict, separators: tuple[str, str] | None) -> str:
    """A message's text as the toy template renders it; ``separators`` for the tool calls' JSON."""
    content = message.get("content")
    if not isinstance(content, str):
        content = "" if content is None else json.dumps(content, separators=separators)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass  # malformed arguments stay the text they are
        content += "<tool_call>" + json.dumps({"name": function.get("name"), "arguments": arguments},
                                              separators=separators, ensure_ascii=False) + "</tool_call>"
    return content


def toy_prompt_ids(request: dict) -> list[int]:
    """The toy tokenisation of a chat request's prompt (tools, messages, generation prompt); see the module doc."""
    ids: list[int] = []
    tools = request.get("tools")
    blocks = [("tools", json.dumps(tools, ensure_ascii=False))] if tools else []
    blocks += [(str(message.get("role")), _toy_body(message, None)) for message in request.get("messages") or ()]
    for role, body in blocks:
        ids += [TOY_IM_START, *_toy_bytes(f"{role}\n{body}"), TOY_IM_END, *_toy_bytes("\n")]
    return ids + [TOY_IM_START, *_toy_bytes("assistant\n")]


def toy_completion_ids(message: dict) -> list[int]:
    """The toy tokenisation of an answer as sampled: its text, tool calls in compact JSON, then ``<|im_end|>``."""
    return [*_toy_bytes(_toy_body(message, (",", ":"))), TOY_IM_END]


@attrs.frozen(kw_only=True)
class Reply:
    """One scripted answer: an assistant message, or an HTTP error; optionally after a delay."""

    content: str | None = None
    #: each call: {"id"?, "name", "arguments"} — ``arguments`` a dict (sent as JSON) or a raw string (sent as is)
    tool_calls: tuple[dict, ...] = attrs.field(default=(), converter=tuple)
    reasoning_content: str | None = None
    usage: dict | None = None
    status: int = 200
    #: extra response headers (``Retry-After`` for 429s)
    headers: dict[str, str] = attrs.field(factory=dict)
    #: the error body's message for status >= 400
    error_message: str = "scripted error"
    delay_s: float = 0.0
    finish_reason: str | None = None
    #: a broken answer instead of this one: ``reset``, ``cut_json``, ``empty_choices`` or ``null_message``
    broken: str | None = attrs.field(default=None,
                                     validator=attrs.validators.optional(attrs.validators.in_(_BODY_FAULTS)))

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        """A plain text answer."""
        return cls(content=content, **kwargs)

    @classmethod
    def calls(cls, *calls: tuple[str, Any] | dict, content: str | None = None, **kwargs: Any) -> Reply:
        """One or several tool calls: each ``(name, arguments)`` or a dict with ``name``/``arguments``/``id``."""
        normalised = [call if isinstance(call, dict) else {"name": call[0], "arguments": call[1]} for call in calls]
        return cls(content=content, tool_calls=normalised, **kwargs)

    @classmethod
    def malformed_arguments(cls, name: str, raw: str = '{"expression": "1 +', **kwargs: Any) -> Reply:
        """A tool call whose arguments are not valid JSON."""
        return cls(tool_calls=[{"name": name, "arguments": raw}], **kwargs)

    @classmethod
    def unknown_tool(cls, name: str = "no_such_tool", arguments: Any = None, **kwargs: Any) -> Reply:
        """A call to a tool the request did not offer."""
        return cls(tool_calls=[{"name": name, "arguments": arguments or {}}], **kwargs)

    @classmethod
    def error(cls, status: int = 500, *, retry_after: float | str | None = None, message: str = "scripted error",
              **kwargs: Any) -> Reply:
        """An HTTP error status (500, 429 with ``Retry-After`` ...) with an OpenAI-style error body."""
        headers = dict(kwargs.pop("headers", {}) or {})
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return cls(status=status, headers=headers, error_message=message, **kwargs)

    @classmethod
    def fault(cls, kind: str, *, hang_s: float = 30.0, retry_after: float = 0.05) -> Reply:
        """One injected fault of :data:`FAULT_KINDS`; ``hang`` answers (with a 500) only after ``hang_s``."""
        if kind == "500":
            return cls.error(500, message="injected server error")
        if kind == "429":
            return cls.error(429, message="injected rate limit")
        if kind == "429_retry_after":
            return cls.error(429, retry_after=retry_after, message="injected rate limit")
        if kind == "hang":
            return cls.error(500, message="injected hang", delay_s=hang_s)
        if kind in _BODY_FAULTS:
            return cls(content="", broken=kind)
        raise ValueError(f"unknown fault {kind!r}; one of {', '.join(FAULT_KINDS)}")

    def body(self, request: dict, number: int, token_ids: str = "vllm") -> dict:
        """The response JSON for ``request``; with its token ids when it asks for them (``token_ids``: the shape,
        ``"vllm"`` or ``"sglang"``, see the module doc)."""
        if self.status >= 400:
            return {"error": {"message": self.error_message, "type": "scripted_error", "code": self.status}}
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{number}_{index}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments") or {}),
                    },
                }
                for index, call in enumerate(self.tool_calls)
            ]
        if self.reasoning_content is not None:
            message["reasoning_content"] = self.reasoning_content
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, **(self.usage or {})}
        if self.usage and "total_tokens" not in self.usage:
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": self.finish_reason or ("tool_calls" if self.tool_calls else "stop"),
            "logprobs": None,
        }
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "stub"),
            "choices": [choice],
            "usage": usage,
        }
        if request.get("return_token_ids") is True:
            prompt, completion = toy_prompt_ids(request), toy_completion_ids(message)
            choice["token_ids"] = completion
            if token_ids == "sglang":
                if request.get("return_prompt_token_ids") is True:
                    choice["prompt_token_ids"] = prompt
            else:
                answer["prompt_token_ids"] = prompt
            if not self.usage:  # counted as the server counts them
                usage.update(prompt_tokens=len(prompt), completion_tokens=len(completion),
                             total_tokens=len(prompt) + len(completion))
        return answer


Script = Callable[[dict], "Reply | Awaitable[Reply]"]


def sequence(*replies: Reply, then: Reply | None = None) -> Script:
    """Play ``replies`` in order across all requests; afterwards ``then`` (default: an HTTP 500 saying so)."""
    queue = list(replies)
    lock = threading.Lock()

    def script(request: dict) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then or Reply.error(500, message="the script has no more replies")

    return script


def first_user_text(request: dict) -> str:
    """The text of the first user message of a request (the conversation's key in :func:`per_conversation`)."""
    for message in request.get("messages") or ():
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    return ""


def per_conversation(script: Callable[[dict, int], Reply]) -> Script:
    """``script(request, turn)`` where ``turn`` counts assistant messages already in the conversation.

    Stateless, so any number of concurrent conversations each get their own scripted turns.
    """

    def play(request: dict) -> Reply:
        turn = sum(1 for message in request.get("messages") or () if message.get("role") == "assistant")
        return script(request, turn)

    return play


def _turn_key(request: dict) -> tuple[str, int]:
    """A conversation and its turn: every attempt at one turn has the same key."""
    turn = sum(1 for message in request.get("messages") or () if message.get("role") == "assistant")
    return first_user_text(request), turn


def storm(script: Script, rate: float, *, seed: int, kinds: tuple[str, ...] = FAULT_KINDS, hang_s: float = 30.0,
          retry_after: float = 0.05) -> Script:
    """``script`` with a fault of ``kinds`` instead of its answer for a share ``rate`` of all requests, at random
    (a ``random.Random(seed)`` of its own, so a run's pattern of faults is repeatable)."""
    import random

    rng = random.Random(seed)
    lock = threading.Lock()

    async def play(request: dict) -> Reply:
        with lock:
            kind = rng.choice(kinds) if rng.random() < rate else None
        if kind is not None:
            return Reply.fault(kind, hang_s=hang_s, retry_after=retry_after)
        reply = script(request)
        return await reply if inspect.isawaitable(reply) else reply

    return play


def failing_first(script: Script, kind: str, *, times: int = 1, hang_s: float = 30.0,
                  retry_after: float = 0.05) -> Script:
    """``script``, but the first ``times`` attempts at every turn of every conversation get fault ``kind``: a run
    of ``times`` consecutive failures before each real answer."""
    seen: dict[tuple[str, int], int] = {}
    lock = threading.Lock()

    async def play(request: dict) -> Reply:
        key = _turn_key(request)
        with lock:
            attempt = seen[key] = seen.get(key, 0) + 1
        if attempt <= times:
            return Reply.fault(kind, hang_s=hang_s, retry_after=retry_after)
        reply = script(request)
        return await reply if inspect.isawaitable(reply) else reply

    return play


def _default_script(request: dict) -> Reply:
    return Reply.text("OK")


class ScriptedChatServer:
    """A real OpenAI-compatible server (starlette + uvicorn) on ``127.0.0.1`` at a free port, in a background thread.

    ``base_url`` is ``http://127.0.0.1:PORT/v1``; ``requests`` holds every chat request's JSON body and
    ``request_headers`` the matching headers (lower-case names), in arrival order. Serves ``POST
    /v1/chat/completions`` from the script and ``GET /v1/models``. Built for 1,000+ concurrent connections.

    The test request of an evaluation's preflight (header ``X-Bootcamp-Preflight``) is answered by
    ``preflight_script`` (default: a plain "OK") and kept in ``preflight_requests``, like ``GET /v1/models`` apart
    from the episodes' requests; pass the episodes' script as ``preflight_script`` to fault the preflight too.

    ``token_ids``: the shape of the token ids a request with ``return_token_ids`` gets, ``"vllm"`` (the default) or
    ``"sglang"`` (see the module doc); ``keep_responses=True`` keeps every episode request's answer JSON in
    ``responses`` (matching ``requests`` by position while the requests come one at a time);
    ``keep_requests=False`` keeps no episode request nor its headers, so a server that answers millions of requests
    (as the benchmarks' does, with histories of up to 80 messages) stays flat in memory.

    ``tls_certfile``: a PEM file with the server's private key and certificate chain; the server then speaks HTTPS
    and ``base_url`` is ``https://127.0.0.1:PORT/v1`` (the certificate must name ``127.0.0.1``).
    """

    def __init__(self, script: Script | None = None, *, models: Iterable[str] = ("stub",), backlog: int = 4096,
                 preflight_script: Script | None = None, token_ids: str = "vllm",
                 keep_responses: bool = False, keep_requests: bool = True, tls_certfile: str | None = None) -> None:
        if token_ids not in ("vllm", "sglang"):
            raise ValueError(f'token_ids must be "vllm" or "sglang", got {token_ids!r}')
        self.token_ids = token_ids
        self.keep_responses = keep_responses
        self.keep_requests = keep_requests
        self.responses: list[dict] = []
        self.script: Script = script or _default_script
        self.preflight_script: Script = preflight_script or _default_script
        self.preflight_requests: list[dict] = []
        self.models = list(models)
        self.backlog = backlog
        self.requests: list[dict] = []
        self.request_headers: list[dict[str, str]] = []
        self.tls_certfile = tls_certfile
        self._counter = itertools.count(1)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port: int = 0

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls_certfile else 'http'}://127.0.0.1:{self.port}/v1"

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        async def chat(request: Request) -> Response:
            try:
                body = json.loads(await request.body())
            except ValueError:
                return JSONResponse({"error": {"message": "body is not JSON", "type": "invalid_request"}}, 400)
            number = next(self._counter)
            if "x-bootcamp-preflight" in request.headers:
                self.preflight_requests.append(body)
                reply = self.preflight_script(body)
            else:
                if self.keep_requests:  # list.append is atomic under the GIL; the test thread reads these lists
                    self.requests.append(body)
                    self.request_headers.append({key.lower(): value for key, value in request.headers.items()})
                reply = self.script(body)
            if inspect.isawaitable(reply):
                reply = await reply
            if reply.delay_s > 0:
                await asyncio.sleep(reply.delay_s)
            answer = reply.body(body, number, self.token_ids)
            if reply.broken is not None:
                return self._broken(request, reply.broken, answer)
            if self.keep_responses and "x-bootcamp-preflight" not in request.headers:
                self.responses.append(answer)
            return JSONResponse(answer, status_code=reply.status, headers=reply.headers)

        async def models(request: Request) -> Response:
            data = [{"id": model, "object": "model", "created": 0, "owned_by": "stub"} for model in self.models]
            return JSONResponse({"object": "list", "data": data})

        return Starlette(
            routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models, methods=["GET"])]
        )

    def _broken(self, request: Any, kind: str, answer: dict) -> Any:
        from starlette.responses import JSONResponse, Response

        if kind == "cut_json":
            text = json.dumps(answer)
            return Response(text[: len(text) // 2], media_type="application/json")
        if kind == "empty_choices":
            return JSONResponse({**answer, "choices": []})
        if kind == "null_message":
            return JSONResponse({**answer, "choices": [{**answer["choices"][0], "message": None}]})
        # reset: abort this request's connection with an RST, no answer at all
        client = request.scope.get("client")
        for connection in list(getattr(self._server.server_state, "connections", ())):
            transport = getattr(connection, "transport", None)
            if transport is None or transport.get_extra_info("peername") != tuple(client or ()):
                continue
            sock = transport.get_extra_info("socket")
            if sock is not None:
                import socket
                import struct

                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return Response(b"", status_code=500)  # never reaches the client: its connection is gone

    def start(self) -> ScriptedChatServer:
        """Bind a free port and serve until :meth:`stop`; returns once the server accepts connections."""
        import uvicorn

        config = uvicorn.Config(
            self._app(),
            host="127.0.0.1",
            port=0,  # the OS picks a free port; read back below. (A pre-bound socket handed to uvicorn loses
            # TCP_NODELAY on its connections, and every answer then waits ~40 ms for a delayed ACK.)
            log_level="warning",
            access_log=False,
            lifespan="off",
            backlog=self.backlog,
            timeout_keep_alive=30,
            ssl_certfile=self.tls_certfile,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="scripted-chat-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the scripted chat server did not start")
            time.sleep(0.005)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
