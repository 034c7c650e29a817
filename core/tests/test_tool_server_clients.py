"""Slow and hostile clients are bounded: a request's headers and body must arrive within the read timeout or the
connection closes, and beyond the connection bound new requests are answered 503 at once; the server keeps serving."""

from __future__ import annotations

import asyncio
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
WATCHDOG_S = 20.0  # a hang guard, far above the read timeout
ENV = {"BOOTCAMP_LOAD_PLUGINS": "example"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve_tools("--mode", "unified", "--bootcamps", "example", "--read-timeout", str(READ_TIMEOUT_S),
                     "--max-connections", str(MAX_CONNECTIONS), log_dir=tmp_path_factory.mktemp("logs"),
                     env=ENV) as running:
        yield running


def _connect(server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=WATCHDOG_S)
    return sock


def _closed_while_trickling(sock: socket.socket, data: bytes) -> bool:
    """Send ``data`` a byte every 0.1 s; True when the server closes the connection before it is all sent."""
    deadline = time.monotonic() + WATCHDOG_S
    for byte in data:
        if time.monotonic() > deadline:
            return False
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return True
        sock.settimeout(0.1)
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


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
        assert _closed_while_trickling(sock, head)
    _still_serves(server)


def test_a_body_sent_a_byte_at_a_time_is_cut_off(server):
    body = b'{"identity": {}, "padding": "' + b"a" * 400 + b'"}'
    head = (b"POST /tools/example/calculator/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    with _connect(server) as sock:
        sock.sendall(head)
        assert _closed_while_trickling(sock, body)
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
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
    finally:
        for sock in idle:
            sock.close()
    _still_serves(server)


def test_tool_arguments_nested_too_deep_are_the_models_error(server):
    async def call() -> tuple[Exception, str]:
        client = ToolServerClient(server.url)
        tool = client.tool("example/calculator")
        instance = await tool.create(identity={})
        deep: dict = {"expression": "1 + 1"}
        for _ in range(MAX_ARGUMENT_DEPTH + 5):
            deep = {"expression": "1 + 1", "nested": deep}
        with pytest.raises(ModelError) as refused:
            await tool.execute(instance, deep)
        text, _, _ = await tool.execute(instance, {"expression": "1 + 1"})  # the instance is still usable
        await tool.release(instance)
        await client.aclose()
        return refused.value, text

    refused, text = asyncio.run(call())
    assert "nested" in str(refused) and text == "2"
