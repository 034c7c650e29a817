"""The tool server's hot path: a lean HTTP/1.1 client and an ASGI shortcut for tool calls.

Every tool call crosses up to three processes (client, master, worker) on the same cores, so per-request CPU is the
throughput. Measured here per call at 64 concurrent callers: aiohttp's client costs about 160 µs, uvicorn with
httptools about 70 µs for a bare ASGI app, and Starlette's request/routing/response objects as much again. The
client below (asyncio protocol, httptools' response parser, keep-alive pools) costs a fraction of that, and
:func:`tool_route` answers ``POST /tools/...`` before Starlette, which keeps the other routes (dashboard, health,
registration) where readability matters more than microseconds. ``bench/bench_tool_server.py`` holds it to its
targets (the master adds <= 1 ms at p50; >= 2,000 calls/s through the master at concurrency 64).
"""

from __future__ import annotations

import asyncio
import collections
import hmac
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httptools

from bootcamp_core.serve.common import ApiError

JSON_HEADERS = [(b"content-type", b"application/json")]
#: idle keep-alive connections older than this are not reused (uvicorn closes them after its keep-alive timeout)
IDLE_REUSE_S = 4.0


class ConnectError(OSError):
    """The connection could not be opened: nothing was sent. ``refused``: nothing listens there."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class _Connection(asyncio.Protocol):
    __slots__ = ("transport", "parser", "waiter", "status", "chunks", "closed", "idle_since", "keep_alive",
                 "headers_done", "delimited")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future | None = None
        self.status = 0
        self.chunks: list[bytes] = []
        self.closed = False
        self.idle_since = 0.0
        self.keep_alive = True
        self.headers_done = False
        self.delimited = False  # Content-Length or chunked: the body's end is known without EOF

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(ConnectionError(f"invalid HTTP response: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if self.headers_done and not self.delimited and waiter is not None and not waiter.done():
            waiter.set_result((self.status, b"".join(self.chunks)))  # a body that ends with the connection
            return
        self._fail(ConnectionResetError("the server closed the connection"))

    def _fail(self, error: Exception) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)
        if self.transport is not None:
            self.transport.close()

    # httptools callbacks
    def on_status(self, status: bytes) -> None:
        self.status = self.parser.get_status_code()

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.delimited = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.status, b"".join(self.chunks)))

    def send(self, data: bytes) -> asyncio.Future:
        self.status, self.chunks, self.headers_done, self.delimited = 0, [], False, False
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)  # type: ignore[union-attr]
        return self.waiter


class _Pool:
    """Keep-alive connections to one host:port, at most ``limit`` at once."""

    def __init__(self, host: str, port: int, limit: int, tls: bool) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.idle: collections.deque[_Connection] = collections.deque()
        self.busy: set[_Connection] = set()
        self.slots = asyncio.Semaphore(limit)

    async def connection(self, connect_timeout: float) -> tuple[_Connection, bool]:
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self.idle:
            connection = self.idle.pop()  # the most recently used: the least likely to have timed out
            if not connection.closed and now - connection.idle_since < IDLE_REUSE_S:
                return connection, True
            if connection.transport is not None:
                connection.transport.close()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(_Connection, self.host, self.port, ssl=_tls_context() if self.tls else None),
                connect_timeout)
        except (OSError, asyncio.TimeoutError) as error:
            raise ConnectError(f"cannot connect to {self.host}:{self.port}: {error or type(error).__name__}",
                               refused=isinstance(error, ConnectionRefusedError)) from None
        return connection, False

    def put_back(self, connection: _Connection) -> None:
        if connection.closed or not connection.keep_alive:
            if connection.transport is not None:
                connection.transport.close()
            return
        connection.idle_since = asyncio.get_running_loop().time()
        self.idle.append(connection)

    def close(self) -> None:
        for connection in [*self.idle, *self.busy]:
            if connection.transport is not None:
                connection.transport.close()
        self.idle.clear()

    def abort(self) -> None:
        """Fail the calls in flight (their connections close) and drop idle connections."""
        for connection in list(self.busy):
            connection._fail(ConnectionAbortedError("the server was declared dead"))
        self.close()


class FastClient:
    """JSON requests to http:// and https:// servers over keep-alive connections; one instance per event loop."""

    def __init__(self, *, limit_per_host: int = 256, timeout_s: float = 60.0, connect_timeout_s: float = 10.0,
                 headers: dict[str, str] | None = None) -> None:
        self.limit, self.timeout_s, self.connect_timeout_s = limit_per_host, timeout_s, connect_timeout_s
        self._pools: dict[tuple[str, int], _Pool] = {}
        self._extra = "".join(f"{key}: {value}\r\n" for key, value in (headers or {}).items())

    async def request(self, method: str, url: str, body: bytes = b"", timeout_s: float | None = None
                      ) -> tuple[int, bytes]:
        """(status, body). Raises :class:`ConnectError` (nothing sent), ``ConnectionError`` or ``TimeoutError``."""
        parts = urlsplit(url)
        tls = parts.scheme == "https"
        host, port = parts.hostname or "127.0.0.1", parts.port or (443 if tls else 80)
        pool = self._pools.get((host, port))
        if pool is None:
            pool = self._pools[(host, port)] = _Pool(host, port, self.limit, tls)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = (f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n{self._extra}\r\n").encode("latin-1")
        timeout = self.timeout_s if timeout_s is None else timeout_s
        async with pool.slots:
            connection, _ = await pool.connection(self.connect_timeout_s)
            waiter = connection.send(head + body)
            timer = asyncio.get_running_loop().call_later(timeout, _expire, waiter, timeout)
            pool.busy.add(connection)
            try:
                result = await waiter
            except BaseException:
                connection.closed = True
                if connection.transport is not None:
                    connection.transport.close()
                raise
            finally:
                timer.cancel()
                pool.busy.discard(connection)
            pool.put_back(connection)
            return result

    def abort(self, url: str) -> None:
        """Fail every call in flight to the server at ``url`` at once."""
        parts = urlsplit(url)
        pool = self._pools.get((parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)))
        if pool is not None:
            pool.abort()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


_TLS: list[Any] = []


def _tls_context() -> Any:
    if not _TLS:
        import ssl

        _TLS.append(ssl.create_default_context())
    return _TLS[0]


def _expire(waiter: asyncio.Future, timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError(f"no answer within {timeout:g} s"))


# ------------------------------------------------------------------------------------------------ server side
Handler = Callable[[str, bytes], Awaitable[tuple[int, bytes]]]


def header(scope: dict, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def token_ok(scope: dict, token: str | None) -> bool:
    if not token:
        return True
    given = header(scope, b"authorization") or b""
    scheme, _, value = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), token.encode())


def tool_route(app: Any, handler: Handler, *, token: str | None, max_body_bytes: int) -> Any:
    """An ASGI app answering ``POST /tools/...`` with ``handler(path, body)`` and everything else with ``app``."""

    async def asgi(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith("/tools/"):
            await app(scope, receive, send)
            return
        try:
            if not token_ok(scope, token):
                raise ApiError(401, "unauthorized", "missing or wrong token (send Authorization: Bearer <token>)")
            # an execute's body is the model's tool arguments: too large is the model's error to see
            too_large = "model" if scope["path"].endswith("/execute") else "too_large"
            declared = header(scope, b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
                raise ApiError(413, too_large, f"request body of {int(declared)} bytes exceeds the limit of "
                               f"{max_body_bytes} (tool arguments and all)")
            body = b""
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":  # the caller went away: nothing to answer
                    return
                body += message.get("body", b"")
                if len(body) > max_body_bytes:
                    raise ApiError(413, too_large, f"request body exceeds the limit of {max_body_bytes} bytes")
                if not message.get("more_body"):
                    break
            status, payload = await handler(scope["path"], body)
        except ApiError as error:
            status, payload = error.status, error.body()
        except Exception as error:  # noqa: BLE001  # a bug, not the caller's: still a JSON error body
            status, payload = 500, ApiError(500, "infrastructure", f"{type(error).__name__}: {error}").body()
        await send({"type": "http.response.start", "status": status,
                    "headers": [*JSON_HEADERS, (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    return asgi


def split_tool_path(path: str) -> tuple[str, str, str]:
    """``/tools/<namespace>/<name>/<action>`` -> (namespace, name, action)."""
    parts = path.split("/")
    if len(parts) != 5 or not all(parts[2:]):
        raise ApiError(404, "not_found", f"no route {path}; tool routes are /tools/<namespace>/<name>/<action>")
    return parts[2], parts[3], parts[4]
