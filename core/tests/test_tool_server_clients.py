"""Slow and hostile clients are bounded: a request's headers and body must arrive within the read timeout or it is
answered 408 and the connection closes, beyond the connection bound new requests are answered 503 at once, and every
such error has a JSON body; the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from bootcamp_core.plugin.errors import ModelError
from bootcamp_core.serve.client import ToolServerClient
from bootcamp_core.serve.common import MAX_ARGUMENT_DEPTH
from bootcamp_core.testing import serve_tools

pytestmark = pytest.mark.slow
READ_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 8
MAX_BODY_BYTES = 64 * 1024
WATCHDOG_S = 20.0  # a hang guard, far above the read timeout
ENV = {"BOOTCAMP_LOAD_PLUGINS": "example"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve_tools("--mode", "unified", "--bootcamps", "example", "--read-timeout", str(READ_TIMEOUT_S),
                     "--max-connections", str(MAX_CONNECTIONS), "--max-body-bytes", str(MAX_BODY_BYTES), log_dir=tmp_path_factory.mktemp("logs"),
                     env=ENV) as running:
        yield running


def _connect(server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=WATCHDOG_S)
    return sock


def _answer_while_trickling(sock: socket.socket, data: bytes) -> bytes | None:
    """Send ``data`` a byte every 0.1 s; what the server answered before closing the connection, or None when it
    was all sent without the server closing it."""
    deadline = time.monotonic() + WATCHDOG_S
    answer = b""
    for byte in data:
        if time.monotonic() > deadline:
            return None
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return answer + _rest(sock)
        sock.settimeout(0.1)
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return answer
        if chunk == b"":
            return answer
        answer += chunk
    return None


def _rest(sock: socket.socket) -> bytes:
    rest = b""
    sock.settimeout(1.0)
    try:
        while chunk := sock.recv(4096):
            rest += chunk
    except OSError:
        pass
    return rest


def _json_error(answer: bytes, status: int) -> dict:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer[:200]
    assert b"content-type: application/json" in head.lower(), head
    return json.loads(body)["error"]


def _still_serves(server) -> None:
    async def call() -> str:
        client = ToolServerClient(server.url)
        tool = client.tool("example/calculator")
        instance = await tool.create(identity={})
        text, _, _ = await tool.execute(instance, {"expression": "6 * 7"})
        await tool.release(instance)
        await client.aclose()
        return text

    assert asyncio.run(call()) == "42"


def test_a_silent_connection_is_closed(server):
    with _connect(server) as sock:
        sock.settimeout(WATCHDOG_S)
        assert sock.recv(4096) == b""  # closed without a request: nothing to answer
    _still_serves(server)


def test_headers_sent_a_byte_at_a_time_are_cut_off(server):
    head = b"POST /tools/example/calculator/create HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 400 + b"\r\n\r\n"
    with _connect(server) as sock:
        answer = _answer_while_trickling(sock, head)
    assert answer is not None, "still open after the whole request trickled in"
    assert _json_error(answer, 408)["type"] == "request_timeout"
    _still_serves(server)


def test_a_body_sent_a_byte_at_a_time_is_cut_off(server):
    body = b'{"identity": {}, "padding": "' + b"a" * 400 + b'"}'
    head = (b"POST /tools/example/calculator/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    with _connect(server) as sock:
        sock.sendall(head)
        answer = _answer_while_trickling(sock, body)
    assert answer is not None, "still open after the whole body trickled in"
    assert _json_error(answer, 408)["type"] == "request_timeout"
    _still_serves(server)


def test_beyond_the_connection_bound_requests_get_503(server):
    idle = [_connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        with _connect(server) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            sock.settimeout(WATCHDOG_S)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
        error = _json_error(answer, 503)
        assert error["type"] == "overloaded" and "--max-connections" in error["message"]
    finally:
        for sock in idle:
            sock.close()
    _still_serves(server)


def _refused_then_usable(server, arguments: dict) -> tuple[Exception, str]:
    """Execute ``arguments`` (expected to be refused as the model's error), then a valid call on the same instance."""
    async def call() -> tuple[Exception, str]:
        client = ToolServerClient(server.url)
        tool = client.tool("example/calculator")
        instance = await tool.create(identity={})
        with pytest.raises(ModelError) as refused:
            await tool.execute(instance, arguments)
        text, _, _ = await tool.execute(instance, {"expression": "1 + 1"})  # the instance is still usable
        await tool.release(instance)
        await client.aclose()
        return refused.value, text

    return asyncio.run(call())


def test_tool_arguments_nested_too_deep_are_the_models_error(server):
    deep: dict = {"expression": "1 + 1"}
    for _ in range(MAX_ARGUMENT_DEPTH + 5):
        deep = {"expression": "1 + 1", "nested": deep}
    refused, text = _refused_then_usable(server, deep)
    assert "nested" in str(refused) and text == "2"


def test_a_malformed_request_gets_a_json_400(server):
    with _connect(server) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        answer = _rest(sock)
    assert _json_error(answer, 400)["type"] == "bad_request"
    _still_serves(server)


def test_tool_arguments_too_large_are_the_models_error(server):
    refused, text = _refused_then_usable(server, {"expression": "1 + 1", "padding": "x" * (MAX_BODY_BYTES + 1)})
    assert "exceeds the limit" in str(refused) and text == "2"
