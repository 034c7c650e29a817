"""Retries of infrastructure failures: bounded exponential backoff with jitter, honouring ``Retry-After``.

Only what is worth repeating is repeated: refused or reset connections, timeouts, HTTP 429 and 5xx. Model errors and
other 4xx answers fail at once, since sending the same request again gives the same answer.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import attrs

from bootcamp_core.plugin.errors import InfrastructureError, ModelError

__all__ = ["RetryPolicy", "RetryableError", "with_retries", "retry_after_seconds", "is_retryable"]

logger = logging.getLogger("bootcamp_core.episode.retries")

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """``attempts`` in all (1 = no retry); delays grow ``base_s * 2**n`` up to ``max_s``, with jitter."""

    attempts: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    base_s: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_s: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the exponential step for sure, half at random, so retries of many episodes spread."""
        step = min(self.max_s, self.base_s * (2**attempt))
        return step / 2 + rng.uniform(0, step / 2)


class RetryableError(InfrastructureError):
    """An infrastructure failure worth retrying; ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, subject: str | None = None,
                 detail: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        #: what failed and why (``HTTP 500 from URL``, ``scripted error``), when the raiser knows them apart: the
        #: final error then reads ``<subject> after N attempts: <detail>``, each part said once
        self.subject = subject
        self.detail = detail


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); ``None`` when absent or bad."""
    if headers is None:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def is_retryable(error: BaseException) -> bool:
    """Whether ``error`` is a transient infrastructure failure: connection, timeout, HTTP 429 or 5xx."""
    if isinstance(error, RetryableError):
        return True
    if isinstance(error, (ModelError, InfrastructureError)):
        return False
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status == 429 or status >= 500 or status == 408
    import httpx  # a core dependency; imported here so this module stays cheap to import

    return isinstance(error, (httpx.TransportError, ConnectionError, TimeoutError)) or type(error).__name__ in {
        "APIConnectionError",
        "APITimeoutError",
    }


def _retry_after(error: BaseException) -> float | None:
    if isinstance(error, RetryableError):
        return error.retry_after
    response = getattr(error, "response", None)
    return retry_after_seconds(getattr(response, "headers", None))


async def with_retries(
    call: Callable[[], Awaitable[T]],
    retry: RetryPolicy | None = None,
    rng: random.Random | None = None,
    *,
    describe: Callable[[BaseException], str] = lambda error: f"{type(error).__name__}: {error}",
    what: str = "request",
) -> T:
    """``await call()``, retrying transient failures; after the last attempt an :class:`InfrastructureError`.

    ``describe`` turns an error into the text kept in the final error (callers use it to keep secrets out).
    Non-retryable errors propagate unchanged, except foreign ones, which become an ``InfrastructureError``.
    """
    retry = retry or RetryPolicy()
    rng = rng or random.Random()

    def text(error: BaseException) -> str:
        # our own errors are already described (and masked) by whoever raised them: describing again repeats them
        return str(error) if isinstance(error, (ModelError, InfrastructureError)) else describe(error)

    for attempt in range(retry.attempts):
        try:
            return await call()
        except (ModelError, InfrastructureError) as error:
            if not is_retryable(error):
                raise
            last: BaseException = error
        except Exception as error:  # a foreign error (httpx, openai, OSError): classify it
            if not is_retryable(error):
                raise InfrastructureError(f"{what} failed: {describe(error)}") from error
            last = error
        if attempt + 1 >= retry.attempts:
            break
        delay = retry.delay(attempt, rng)
        server_delay = _retry_after(last)
        if server_delay is not None:
            # honour the server, but stay bounded: a Retry-After of an hour must not stall an evaluation silently
            delay = max(delay, min(server_delay, retry.max_s))
        logger.info(
            "%s failed (attempt %d/%d): %s; retrying in %.3f s%s",
            what, attempt + 1, retry.attempts, text(last), delay,
            f" (Retry-After {server_delay:g} s)" if server_delay is not None else "",
        )
        await anyio.sleep(delay)
    attempts = f"{retry.attempts} attempt{'s' if retry.attempts != 1 else ''}"
    if isinstance(last, RetryableError) and last.subject and last.detail is not None:
        raise InfrastructureError(f"{last.subject} after {attempts}: {last.detail}") from last
    raise InfrastructureError(f"{what} failed after {attempts}: {text(last)}") from last
