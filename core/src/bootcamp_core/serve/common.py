"""What the master and the worker share: the token check, bounded JSON bodies, typed errors, host information."""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import platform
import socket
import sys
import time
from datetime import datetime, timezone
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bootcamp_core.evaluate.secrets import mask_urls
from bootcamp_core.plugin.errors import ConfigError

TOKEN_ENV = "BOOTCAMP_TOKEN"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
JSON = "application/json"
ACTIONS = ("create", "execute", "calc_reward", "release")


class ApiError(Exception):
    """An error answered as ``{"error": {"type", "message"}}`` with an HTTP status."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        message = mask_urls(message)  # a worker's URL may carry credentials: they are never answered
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message

    def response(self) -> Response:
        return error_response(self.status, self.kind, self.message)

    def body(self) -> bytes:
        return dumps({"error": {"type": self.kind, "message": self.message}})


def dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def error_response(status: int, kind: str, message: str) -> Response:
    return json_response({"error": {"type": kind, "message": message}}, status)


def json_response(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False, separators=(",", ":")), status_code=status, media_type=JSON)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not token and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: give the server one (or set {TOKEN_ENV}), or bind 127.0.0.1"
        )


def token_matches(request: Request, token: str | None) -> bool:
    """True when no token is set or the request carries it (``Authorization: Bearer``), compared in constant time."""
    if not token:
        return True
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def require_token(request: Request, token: str | None) -> None:
    if not token_matches(request, token):
        raise ApiError(401, "unauthorized", "missing or wrong token (send Authorization: Bearer <token>)")


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 past ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "bad_request", "invalid Content-Length") from None
        if size > limit:
            raise ApiError(413, "too_large", f"request body of {size} bytes exceeds the limit of {limit}")
        return await request.body()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "too_large", f"request body exceeds the limit of {limit} bytes")
    return bytes(body)


#: tool arguments nested deeper than this are refused: the model's error to see, not the server's
MAX_ARGUMENT_DEPTH = 64


def nesting_depth_over(value: Any, limit: int) -> bool:
    """Whether a JSON value nests lists/objects deeper than ``limit`` (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_object(body: bytes) -> dict:
    try:
        data = json.loads(body) if body.strip() else {}
    except ValueError as error:
        raise ApiError(400, "bad_request", f"the body is not valid JSON ({error})") from None
    except RecursionError:
        raise ApiError(400, "bad_request", "the body's JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", f"the body must be a JSON object, got {type(data).__name__}")
    return data


def host_info() -> dict:
    """What a dashboard shows about a process."""
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "python": platform.python_version(),
        "platform": f"{sys.platform} {platform.machine()}",
        "cpus": os.cpu_count(),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def monotonic() -> float:
    return time.monotonic()
