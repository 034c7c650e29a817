"""A lean HTTP/1.1 keep-alive client for the chat-completions hot path of :class:`~bootcamp_core.episode.policies.OpenAIPolicy`.

One ``POST`` of prepared JSON bytes on a pooled connection, the answer as ``(status, headers, body)``: no per-request
validation or transformation of the history, and an O(1) pool (a stack of idle connections), where a general client
scans its whole pool on every request. It speaks HTTP/1.1 on asyncio, over plain ``http://`` (local inference
servers: vLLM, SGLang) or ``https://`` (hosted endpoints), TLS with the SSL context the policy hands it (the SDK's
own trust: :func:`bootcamp_core.episode.policies.sdk_ssl_context`); :func:`usable_for` says when the policy may use it,
and the policy sends everything else (proxies, other event loops) through the ``openai`` SDK as before.

Errors are builtin ones, mapped by the policy onto the SDK's types: :class:`ConnectionError` when the connection is
refused, reset or closed before a whole answer came, :class:`TimeoutError` when no whole answer came within the
request timeout.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
import urllib.request
import zlib
from collections import deque

__all__ = ["ChatHTTPClient", "usable_for"]

_CRLF2 = b"\r\n\r\n"


def usable_for(url: str) -> bool:
    """Whether :class:`ChatHTTPClient` can reach ``url`` exactly as the SDK would: ``http`` or ``https``, no proxy for
    the host in the environment (the SDK's client honours ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY``),
    on asyncio."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies_environment()
    if ((proxies.get(parts.scheme) or proxies.get("all"))
            and not urllib.request.proxy_bypass_environment(parts.hostname)):
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio): the SDK's path
        return False
    return True


class _Connection(asyncio.Protocol):
    """One keep-alive connection; at most one request on it at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.buffer = bytearray()
        self.waiter: asyncio.Future | None = None
        self.eof = False
        self.received = False  # any byte of the current answer arrived

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.buffer += data
        if self.waiter is not None and not self.waiter.done():
            self._try_complete()

    def eof_received(self) -> bool:
        self.eof = True
        if self.waiter is not None and not self.waiter.done():
            self._try_complete()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.eof = True
        if self.waiter is not None and not self.waiter.done():
            self._try_complete()
            if not self.waiter.done():
                self.waiter.set_exception(ConnectionResetError(
                    "the server closed the connection before a whole answer"
                    + ("" if self.received else " (no answer at all)")))

    # -- answers
    def _try_complete(self) -> None:
        try:
            answer = _parse(self.buffer, self.eof)
        except ValueError as error:  # not HTTP: a broken connection as far as the caller is concerned
            self.waiter.set_exception(ConnectionError(f"malformed HTTP answer: {error}"))  # type: ignore[union-attr]
            return
        if answer is not None:
            self.waiter.set_result(answer)  # type: ignore[union-attr]

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


def _parse(buffer: bytearray, eof: bool) -> tuple[int, dict[str, str], bytes, bool] | None:
    """``(status, headers, body, keep_alive)`` once ``buffer`` holds a whole answer, else ``None``."""
    while True:
        end = buffer.find(_CRLF2)
        if end < 0:
            return None
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        if not version.startswith("HTTP/"):
            raise ValueError(f"status line {lines[0][:80]!r}")
        status = int(rest.split(" ", 1)[0])
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            del buffer[: end + 4]
            continue
        break
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    start = end + 4
    connection = headers.get("connection", "").lower()
    keep_alive = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _dechunk(buffer, start)
        if body is None:
            return None
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if len(buffer) - start < length:
            return None
        body = bytes(buffer[start: start + length])
    elif status in (204, 304):
        body = b""
    else:  # the body runs to the end of the connection
        if not eof:
            return None
        body, keep_alive = bytes(buffer[start:]), False
    encoding = headers.get("content-encoding", "identity").lower()
    if encoding in ("gzip", "x-gzip"):
        body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        body = zlib.decompress(body)
    return status, headers, body, keep_alive


def _dechunk(buffer: bytearray, start: int) -> bytes | None:
    """A chunked body from ``buffer[start:]``, or ``None`` while it is incomplete."""
    parts = []
    position = start
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None
        size = int(bytes(buffer[position:line_end]).split(b";", 1)[0].strip() or b"0", 16)
        position = line_end + 2
        if size == 0:  # trailers, then an empty line
            trailer_end = buffer.find(b"\r\n", position)
            while trailer_end > position:
                position = trailer_end + 2
                trailer_end = buffer.find(b"\r\n", position)
            return b"".join(parts) if trailer_end >= 0 else None
        if len(buffer) < position + size + 2:
            return None
        parts.append(bytes(buffer[position: position + size]))
        position += size + 2


class ChatHTTPClient:
    """``POST`` of JSON bytes to one URL over a pool of keep-alive connections (at most ``max_connections``).

    An ``https`` URL is reached over TLS with ``ssl_context`` (by default :func:`ssl.create_default_context`, with
    HTTP/1.1 offered by ALPN), the host name checked against the server's certificate.
    """

    def __init__(self, url: str, headers: dict[str, str], *, timeout_s: float, max_connections: int,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        if self.tls and ssl_context is None:
            ssl_context = ssl.create_default_context()
            ssl_context.set_alpn_protocols(["http/1.1"])
        self.ssl_context = ssl_context if self.tls else None
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        netloc = parts.netloc.rpartition("@")[2]
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        fixed = {"Host": netloc, "Accept": "application/json", "Content-Type": "application/json",
                 "Connection": "keep-alive", **headers}
        self._head = (f"POST {path} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
                      ).encode("latin-1")
        self._idle: list[_Connection] = []
        self._open = 0
        self._waiters: deque[asyncio.Future] = deque()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _acquire(self) -> tuple[_Connection, bool]:
        """An idle connection (``True``: reused) or a new one."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # used from another event loop (a new ``anyio.run``): the old connections died with theirs
            self._loop, self._idle, self._open, self._waiters = loop, [], 0, deque()
        while True:
            while self._idle:
                connection = self._idle.pop()
                if not connection.closed:
                    return connection, True
                self._open -= 1
            if self._open < self.max_connections:
                break
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if not waiter.cancelled() and waiter.done():
                    self._wake()
                else:
                    self._waiters.remove(waiter)
                raise
        self._open += 1
        try:
            # over TLS the handshake is part of the connection, within the same timeout
            _, connection = await asyncio.wait_for(loop.create_connection(
                _Connection, self.host, self.port, ssl=self.ssl_context,
                server_hostname=self.host if self.ssl_context is not None else None), self.timeout_s)
        except BaseException:
            self._open -= 1
            self._wake()
            raise
        return connection, False

    def _take_idle(self, loop: asyncio.AbstractEventLoop) -> _Connection | None:
        """An idle connection of this event loop that is still open, else ``None``; none while requests wait for
        one, which get the connections freed first."""
        if loop is not self._loop or self._waiters:
            return None
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
            self._open -= 1
        return None

    def _release(self, connection: _Connection, reuse: bool) -> None:
        if reuse and not connection.closed and not self._closed:
            self._idle.append(connection)
        else:
            connection.close()
            self._open -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def post(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """``(status, lower-case headers, body)`` of one ``POST``; ``headers`` are added to this request only."""
        head = self._head
        if headers:
            head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()).encode("latin-1")
        data = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        # an idle connection is taken at once; only a new one, or the wait for a free one, needs a timeout (and the
        # task asyncio.wait_for makes)
        connection = self._take_idle(loop)
        try:
            if connection is None:
                connection, _ = await asyncio.wait_for(self._acquire(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise TimeoutError(f"no connection within {self.timeout_s:g} s") from None
        except OSError as error:  # refused, unresolvable, or a TLS handshake that failed (kept as the cause)
            raise ConnectionError(f"cannot connect to {self.host}:{self.port}: {error}") from (
                error if isinstance(error, ssl.SSLError) else None)
        try:
            status, answer_headers, content, keep_alive = await self._exchange(connection, data, deadline)
        except BaseException:
            self._release(connection, False)
            raise
        self._release(connection, keep_alive)
        return status, answer_headers, content

    async def _exchange(self, connection: _Connection, data: bytes, deadline: float) -> tuple:
        loop = asyncio.get_running_loop()
        connection.buffer.clear()
        connection.received = False
        waiter = connection.waiter = loop.create_future()
        timer = loop.call_at(deadline, _expire, waiter)
        try:
            connection.transport.write(data)  # type: ignore[union-attr]
            return await waiter
        finally:
            timer.cancel()
            connection.waiter = None

    async def aclose(self) -> None:
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("no answer within the request timeout"))
