"""Retries of infrastructure failures: bounded by time, capped exponential backoff with jitter, ``Retry-After``.

Only what is worth repeating is repeated: refused or reset connections, timeouts, HTTP 429 and 5xx, and answers that
are no chat completion (a cut JSON body, no choices, no message). Model errors and other 4xx answers fail at once,
since sending the same request again gives the same answer.

A request is retried until its time budget (:attr:`RetryPolicy.budget_s`, 10 minutes by default) is spent, never by
a count alone, so a storm of 30% failed requests ends in answers, not lost episodes; nothing is retried forever.
:class:`AdaptiveConcurrency` lowers the requests in flight on a burst of 429s and raises them again as answers come.
"""

from __future__ import annotations

import email.utils
import logging
import random
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import attrs

from bootcamp_core.plugin.errors import InfrastructureError, ModelError

__all__ = ["AdaptiveConcurrency", "RetryPolicy", "RetryStats", "RetryableError", "is_retryable",
           "retry_after_seconds", "with_retries"]

logger = logging.getLogger("bootcamp_core.episode.retries")

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Retries within ``budget_s`` seconds per request (first attempt included); delays grow ``base_s * 2**n`` up to
    ``max_s``, with jitter. ``attempts`` optionally caps the attempts too (``None``: only the budget bounds them)."""

    budget_s: float = attrs.field(default=600.0, validator=attrs.validators.ge(0))
    base_s: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_s: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))
    attempts: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the exponential step for sure, half at random, so retries of many episodes spread."""
        step = min(self.max_s, self.base_s * (2 ** min(attempt, 62)))
        return step / 2 + rng.uniform(0, step / 2)


class RetryStats:
    """What retrying cost over a run: retries made, seconds spent waiting before them, and per error kind."""

    def __init__(self) -> None:
        self.retries = 0
        self.waiting_s = 0.0
        self.kinds: dict[str, int] = {}

    def add(self, kind: str | None, delay: float) -> None:
        self.retries += 1
        self.waiting_s += delay
        key = kind or "infrastructure"
        self.kinds[key] = self.kinds.get(key, 0) + 1

    def to_dict(self) -> dict:
        return {"retries": self.retries, "waiting_s": round(self.waiting_s, 3),
                "retries_by_kind": dict(sorted(self.kinds.items()))}


class AdaptiveConcurrency:
    """A limit on requests in flight that adapts to rate limiting (additive increase, multiplicative decrease).

    A burst of 429s halves the limit (from the requests in flight, at least 1): within one window of ``limit``
    answers, a quarter of them (at least one) 429s answering requests sent since the last decrease. Scattered 429s among
    answers (a storm of mixed failures) leave it alone: their requests are retried, and halving on each would
    starve the run. Each answer that is not a 429 raises the limit by ``1 / limit``, so it grows back by about one
    per round of answers, up to ``ceiling``. Below the limit a request waits for a free slot; at the ceiling (the
    common case) acquiring costs a counter.
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.lowest = ceiling
        self.in_flight = 0
        self._round = 0
        self._throttled = 0  # 429s in the current window of answers
        self._answers = 0  # answers in the current window
        self._waiters: deque[anyio.Event] = deque()

    async def acquire(self) -> int:
        """Wait for a slot; returns the round to hand back to :meth:`release`."""
        while self.in_flight >= int(self.limit):
            event = anyio.Event()
            self._waiters.append(event)
            try:
                await event.wait()
            except BaseException:
                if event.is_set():  # woken and cancelled at once: the slot goes to the next waiter
                    self._wake()
                else:
                    self._waiters.remove(event)
                raise
        self.in_flight += 1
        return self._round

    def release(self, round_: int, *, throttled: bool) -> None:
        """Free a slot; ``throttled``: the request was answered with a 429."""
        self.in_flight -= 1
        self._answers += 1
        if self._answers > self.limit:  # a new window of answers
            self._answers, self._throttled = 1, 0
        if throttled:
            if round_ == self._round:
                self._throttled += 1
                if self._throttled >= max(1.0, self.limit / 4):
                    # from what was in flight when the burst came (the 429s answered included), not from a
                    # ceiling far above it
                    self.limit = max(1.0, min(self.limit, self.in_flight + self._throttled) / 2)
                    self._round += 1
                    self._answers = self._throttled = 0
                    self.lowest = min(self.lowest, int(self.limit))
                    logger.info("rate limited: at most %d requests in flight now", int(self.limit))
        elif self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
        self._wake()

    def _wake(self) -> None:
        free = int(self.limit) - self.in_flight
        while free > 0 and self._waiters:
            self._waiters.popleft().set()
            free -= 1


class RetryableError(InfrastructureError):
    """An infrastructure failure worth retrying; ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, subject: str | None = None,
                 detail: str | None = None, kind: str | None = None) -> None:
        super().__init__(message, kind=kind)
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

    transport = (httpx.TransportError,)
    httpx2 = sys.modules.get("httpx2")  # openai 3's HTTP package, where it is in use
    if httpx2 is not None:
        transport += (httpx2.TransportError,)
    return isinstance(error, (*transport, ConnectionError, TimeoutError)) or type(error).__name__ in {
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
    stats: RetryStats | None = None,
    retryable: Callable[[BaseException], bool] = is_retryable,
) -> T:
    """``await call()``, retrying transient failures until the budget is spent; then an :class:`InfrastructureError`
    (its ``kind`` the last failure's).

    ``describe`` turns an error into the text kept in the final error (callers use it to keep secrets out).
    Non-retryable errors propagate unchanged, except foreign ones, which become an ``InfrastructureError``.
    ``stats`` counts the retries and the time waited; ``retryable`` says which errors are worth another attempt.
    """
    retry = retry or RetryPolicy()
    rng = rng or random.Random()
    started = time.monotonic()

    def text(error: BaseException) -> str:
        # our own errors are already described (and masked) by whoever raised them: describing again repeats them
        return str(error) if isinstance(error, (ModelError, InfrastructureError)) else describe(error)

    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except (ModelError, InfrastructureError) as error:
            if not retryable(error):
                raise
            last: BaseException = error
        except Exception as error:  # a foreign error (httpx, openai, OSError): classify it
            if not retryable(error):
                raise InfrastructureError(f"{what} failed: {describe(error)}") from error
            last = error
        remaining = retry.budget_s - (time.monotonic() - started)
        if remaining <= 0 or (retry.attempts is not None and attempt >= retry.attempts):
            break
        delay = retry.delay(attempt - 1, rng)
        server_delay = _retry_after(last)
        if server_delay is not None:
            # honour the server, but stay bounded: a Retry-After of an hour must not stall an evaluation silently
            delay = max(delay, min(server_delay, retry.max_s))
        delay = min(delay, remaining)
        kind = getattr(last, "kind", None)
        logger.info(
            "%s failed (attempt %d, %.1f s of %g s budget left): %s; retrying in %.3f s%s",
            what, attempt, remaining, retry.budget_s, text(last), delay,
            f" (Retry-After {server_delay:g} s)" if server_delay is not None else "",
        )
        if stats is not None:
            stats.add(kind, delay)
        await anyio.sleep(delay)
    attempts = f"{attempt} attempt{'s' if attempt != 1 else ''}"
    if retry.attempts is None or attempt < retry.attempts:  # the budget ended it, not the count
        attempts += f" in its {retry.budget_s:g} s retry budget"
    kind = getattr(last, "kind", None)
    if isinstance(last, RetryableError) and last.subject and last.detail is not None:
        raise InfrastructureError(f"{last.subject} after {attempts}: {last.detail}", kind=kind) from last
    raise InfrastructureError(f"{what} failed after {attempts}: {text(last)}", kind=kind) from last
