"""Sync plugin code (a reward's verify_score, an interaction's generate_response, AnswerFeedback's judge) run in worker
threads, several calls per thread hop, so it never stalls the event loop and costs the other episodes as little as
possible.

One ``anyio.to_thread.run_sync`` per call costs a thread wake-up and an event-loop wake-up each: bench/bench_rollout.py
(a) measured 0.150 ms harness CPU per assistant turn that way against 0.129 ms batched (median of 11, two rounds).

Every call has a limit (:data:`OFF_LOOP_TIMEOUT_S` unless the caller gives one). A call that runs past it is
abandoned: its caller gets :class:`OffLoopTimeout`, the thread is left to finish the call (Python cannot stop it) and
its result is dropped, the calls queued behind it in its batch go back to the queue, and a fresh worker takes the
abandoned one's slot, so one stuck call never holds up the others.

Quick calls are gathered: while the last batch's calls averaged under :data:`GATHER_BELOW_S` each, a driver lets the
tasks that are ready run once before it takes its batch, so the calls they make go in the same thread hop, up to
:data:`GATHERED_BATCH` of them. A thread hop is dear where waking a thread is (a virtual machine's processors): at
concurrency 64, bench/bench_rollout.py (e1) measured about four calls a hop without gathering, and the client CPU per
request fell by about 5% with eight calls a hop and by about 9% more with up to 64. While a gathered batch runs, the
quick calls made meanwhile wait for the next batch rather than start hops of their own in other threads, unless a
whole batch of them waits already: at concurrency 64, (e1) then made 0.025 hops a request where it made 0.099 (39
calls a hop where it made 10), and took 0.449-0.496 ms of process CPU a request where it took 0.530-0.544 (the two
alternated in one process, eight rounds each, twice). A hop costs more than its thread's wake-up: worker threads
running Python beside the event loop's make the two take turns at the interpreter lock. A gathered batch still running
after :data:`GATHERED_BUDGET_S` gives the calls it has not started back to the queue, so a slow call among quick ones
holds the others up no longer than that. Slow calls (a verifier that runs a program, say) are not gathered: a batch of
them holds at most :data:`OFF_LOOP_BATCH`, and they are better spread over the threads.

Code already running in one of these workers (an interaction's ``generate_response`` that checks an answer with
``run_off_loop``) runs its calls inline: it is off the loop already, and its own limit covers them.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import attrs

__all__ = ["GATHERED_BATCH", "GATHERED_BUDGET_S", "GATHER_BELOW_S", "OFF_LOOP_BATCH", "OFF_LOOP_THREADS",
           "OFF_LOOP_TIMEOUT_S", "OffLoopTimeout", "run_coroutine_off_loop", "run_off_loop"]

T = TypeVar("T")

#: At most this many calls run per thread hop, in at most this many threads at once.
OFF_LOOP_BATCH = 8
OFF_LOOP_THREADS = 8
#: The limit of one call when its caller gives none (the rollout engine passes ``RolloutLimits.reward_timeout_s``).
OFF_LOOP_TIMEOUT_S = 60.0
#: A driver gathers quick calls (see above) while the last batch's calls took less than this each, on average,
#: up to this many a batch, and gives back those a gathered batch has not started after this many seconds.
GATHER_BELOW_S = 0.002
GATHERED_BATCH = 64
GATHERED_BUDGET_S = 0.1
#: How often a driver looks at a call that started late in a batch which ran past its first limit (rare: the common
#: path waits for the whole batch with a single deadline and no polling).
_POLL_S = 0.05


class OffLoopTimeout(TimeoutError):
    """A call run off the event loop took longer than its limit and was abandoned."""


@attrs.define(eq=False)
class _Job:
    call: Any
    limit_s: float
    result: Any = None
    error: BaseException | None = None
    taken: bool = False  # in a batch that some caller is driving
    done: bool = False
    waiter: Any = None  # an anyio.Event while the job's caller waits without driving a batch
    # the batch whose driver stopped waiting while this job ran, so its own caller waits for it; set only then, as the
    # reference makes a cycle (the batch holds its jobs) that only the garbage collector would free
    orphaned: Any = None


@attrs.define(eq=False)
class _Batch:
    """Jobs run one after the other in one worker thread; ``lock`` orders the thread's and the driver's views."""

    jobs: list[_Job]
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    abandoned: bool = False  # the driver stopped waiting: the thread starts no further job
    running: _Job | None = None
    started: float = 0.0  # time.monotonic() when ``running`` started
    spent: float = 0.0  # seconds its calls took, together, once it has run to its end


class _InWorker(threading.local):
    active = False


_IN_WORKER = _InWorker()


class _OffLoop(threading.local):
    """The waiting calls of one event loop (per thread, since each event loop runs in one thread).

    A caller that finds fewer than :data:`OFF_LOOP_THREADS` batches running drives one: it takes up to
    :data:`OFF_LOOP_BATCH` waiting jobs to a worker thread and wakes their callers when it is back; the others wait
    for theirs. A slow call holds up at most the few jobs of its own batch, for at most its limit, never the loop.
    """

    def __init__(self) -> None:
        self.pending: collections.deque[_Job] = collections.deque()
        self.drivers = 0
        self.gathering = False  # a driver lets the ready tasks queue their calls before it takes its batch
        self.gathered = 0  # gathered batches running: while one runs, quick calls wait for the next batch
        self.call_s = 0.0  # what one call of the last batch run to its end took, on average

    def _full(self) -> bool:
        """Quick calls wait while a gathered batch runs, to go together in the next (one hop for all of them), unless
        a whole batch of them is waiting already."""
        return bool(self.gathered) and self.call_s < GATHER_BELOW_S and len(self.pending) < GATHERED_BATCH

    def wake_next(self) -> None:
        """Hand driving to the next waiting job, so no job waits for a batch that nobody will start."""
        for job in self.pending:
            if job.waiter is not None:
                job.waiter.set()
                return

    async def run(self, call: Callable[[], T], limit_s: float) -> T:
        job = _Job(call, limit_s)
        self.pending.append(job)
        try:
            while not job.done:
                if job.orphaned is not None:
                    batch, job.orphaned = job.orphaned, None
                    await _wait_for(job, batch)
                elif not job.taken and self.drivers < OFF_LOOP_THREADS and not self.gathering and not self._full():
                    await self._drive(job)
                else:
                    job.waiter = anyio.Event()
                    await job.waiter.wait()
                    job.waiter = None
        finally:
            if not job.done and not job.taken:  # cancelled while queued: leave, passing on a wake-up meant for us
                self.pending.remove(job)
                self.wake_next()
        if job.error is not None:
            raise job.error
        return job.result

    async def _drive(self, own: _Job) -> None:
        self.drivers += 1
        batch: _Batch | None = None
        mine = False  # this driver runs the gathered batch
        try:
            size, budget = OFF_LOOP_BATCH, None
            if self.call_s < GATHER_BELOW_S:
                self.gathering = True  # calls made meanwhile wait for this batch instead of starting their own
                try:
                    await anyio.lowlevel.checkpoint()
                finally:
                    self.gathering = False
                size, budget = GATHERED_BATCH, GATHERED_BUDGET_S
                mine = True
                self.gathered += 1
            batch = _Batch([self.pending.popleft() for _ in range(min(size, len(self.pending)))])
            for taken in batch.jobs:
                taken.taken = True
            if self.pending:  # more than one batch gathered: the next may start in another thread
                self.wake_next()
            # Shielded, as a plain to_thread call is: a cancelled driver still sees its batch through (the other
            # jobs' callers wait on it), but never past the limits (nor, gathered, past the budget: see _overrun).
            limit = batch.jobs[0].limit_s if budget is None else min(batch.jobs[0].limit_s, budget)
            with anyio.CancelScope(shield=True, deadline=anyio.current_time() + limit) as scope:
                await anyio.to_thread.run_sync(_run_batch, batch, abandon_on_cancel=True)
            if scope.cancelled_caught:
                self.call_s = max(self.call_s, GATHER_BELOW_S)  # a call took long: the next batch is not gathered
                if mine:  # the calls it gives back, and those made meanwhile, go in other threads
                    mine = False
                    self.gathered -= 1
                with anyio.CancelScope(shield=True):
                    await self._overrun(batch, own)
            else:
                self.call_s = batch.spent / len(batch.jobs)
        finally:
            if mine:
                self.gathered -= 1
            self.drivers -= 1
            for other in batch.jobs if batch is not None else ():
                if other.waiter is not None:
                    other.waiter.set()
            self.wake_next()

    async def _overrun(self, batch: _Batch, own: _Job) -> None:
        """The batch ran past its first job's limit (or its budget): stop it and requeue the jobs it has not started.
        The job running goes on in its thread; its caller waits for it, timing it out past its own limit: this driver,
        when it is its own job, else that job's own caller (so no caller waits for another's slow call)."""
        with batch.lock:
            batch.abandoned = True
            running = batch.running
            requeue = [job for job in batch.jobs if not job.done and job is not running]
        for job in reversed(requeue):  # never started: back to the front of the queue, in order
            job.taken = False
            self.pending.appendleft(job)
        if requeue:  # their callers may drive them in other threads meanwhile
            self.wake_next()
        if running is None:
            return
        if running is own:
            await _wait_for(running, batch)
        else:
            running.orphaned = batch
            if running.waiter is not None:
                running.waiter.set()


async def _wait_for(job: _Job, batch: _Batch) -> None:
    """Wait for a job its batch's driver no longer waits for: done, or timed out once past its own limit."""
    while True:
        with batch.lock:
            if job.done:
                return
            left = batch.started + job.limit_s - time.monotonic()
            if left <= 0:
                job.error = OffLoopTimeout(f"took longer than {job.limit_s:g} s and was abandoned")
                job.done = True
                return
        await anyio.sleep(min(left, _POLL_S))


def _run_batch(batch: _Batch) -> None:
    _IN_WORKER.active = True
    began = time.monotonic()
    try:
        for job in batch.jobs:
            with batch.lock:
                if batch.abandoned or job.done:
                    return
                batch.running, batch.started = job, time.monotonic()
            result, error = None, None
            try:
                result = job.call()
            except BaseException as raised:  # noqa: BLE001 - re-raised in the job's own caller
                error = raised
            with batch.lock:
                batch.running = None
                if not job.done:  # else it timed out meanwhile: its caller has gone on, the result is dropped
                    job.result, job.error, job.done = result, error, True
        batch.spent = time.monotonic() - began
    finally:
        _IN_WORKER.active = False


_OFF_LOOP = _OffLoop()


async def run_off_loop(call: Callable[[], T], *, timeout_s: float | None = None) -> T:
    """``call()`` in a worker thread, batched with other waiting calls of this event loop; its result or error.

    Raises :class:`OffLoopTimeout` when the call runs longer than ``timeout_s`` (default :data:`OFF_LOOP_TIMEOUT_S`).
    Called from code that already runs in such a worker, ``call()`` runs right there.
    """
    if _IN_WORKER.active:
        return call()
    return await _OFF_LOOP.run(call, OFF_LOOP_TIMEOUT_S if timeout_s is None else float(timeout_s))


class _WorkerLoop(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_WORKER_LOOP = _WorkerLoop()


def _complete(make: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable ``make()`` returns to its end on this worker thread's own event loop (kept per thread)."""
    loop = _WORKER_LOOP.loop
    if loop is None or loop.is_closed():
        loop = _WORKER_LOOP.loop = asyncio.new_event_loop()
        weakref.finalize(threading.current_thread(), loop.close)  # closed when its thread is gone
    return loop.run_until_complete(make())


async def run_coroutine_off_loop(make: Callable[[], Awaitable[T]], *, timeout_s: float | None = None) -> T:
    """Await ``make()`` on an event loop of its own in a worker thread, as :func:`run_off_loop` runs a sync call.

    For plugin coroutines (an interaction's ``generate_response``) that may do sync work on model output: however long
    that takes, this event loop goes on; past ``timeout_s`` the caller gets :class:`OffLoopTimeout`.
    """
    if _IN_WORKER.active:  # already on a worker's own loop (nested): off the event loop, under the outer limit
        return await make()
    return await run_off_loop(lambda: _complete(make), timeout_s=timeout_s)
