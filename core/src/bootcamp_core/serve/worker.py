"""A worker: serves bootcamp tools over HTTP, holds their instances, and keeps itself registered with a master.

Every tool call runs on a dedicated tool thread with its own event loop, so a tool that computes (a simulation) never
stalls the loop that serves HTTP: heartbeats, ``/health`` and the I/O of other requests keep going. State lives on
the tools themselves (keyed by instance id), as in-process; the worker only records which instances it holds, when
each was last used (for the idle reaper), and answers a repeated create as a no-op, so creates are safe to retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import uuid
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from bootcamp_core.episode.messages import jsonable
from bootcamp_core.plugin.errors import InfrastructureError, ModelError
from bootcamp_core.serve.common import (
    ACTIONS,
    DEFAULT_MAX_BODY_BYTES,
    MAX_ARGUMENT_DEPTH,
    ApiError,
    auth_headers,
    dumps,
    host_info,
    json_response,
    monotonic,
    nesting_depth_over,
    parse_object,
    require_token,
)
from bootcamp_core.serve.http import FastClient, split_tool_path, tool_route

logger = logging.getLogger("bootcamp_core.serve.worker")


@attrs.define
class WorkerSettings:
    """How a worker runs: where it listens, which master it reports to, its timeouts."""

    host: str = "127.0.0.1"
    port: int = 0
    master_url: str | None = None
    advertise_url: str | None = None  # the URL the master should use; derived from the bound socket when None
    token: str | None = attrs.field(default=None, repr=False)
    timeout_per_query_s: float = 600.0
    heartbeat_interval_s: float = 5.0
    idle_timeout_s: float = 3600.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    worker_id: str = attrs.field(factory=lambda: uuid.uuid4().hex[:12])


@attrs.define(slots=True)
class _Instance:
    tools: set[str]
    last_used: float
    busy: int = 0


class ToolLoop:
    """A thread running its own event loop, where tool coroutines run.

    Lighter than ``run_coroutine_threadsafe`` + ``wait_for`` (no concurrent future, no extra task per call): each call
    is one task on the tool loop and one future on the caller's loop, with a timer for the timeout.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="bootcamp-tools", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def run(self, coroutine: Any, timeout: float) -> Any:
        caller = asyncio.get_running_loop()
        future = caller.create_future()
        tasks: list[asyncio.Task] = []

        def settle(task: asyncio.Task) -> None:  # on the tool loop
            caller.call_soon_threadsafe(_copy_outcome, task, future)

        def start() -> None:  # on the tool loop
            task = self.loop.create_task(coroutine)
            tasks.append(task)
            task.add_done_callback(settle)

        self.loop.call_soon_threadsafe(start)
        timer = caller.call_later(timeout, _expire, future, timeout)
        try:
            return await future
        except (asyncio.CancelledError, Deadline):
            self.loop.call_soon_threadsafe(lambda: tasks and tasks[0].cancel())
            raise
        finally:
            timer.cancel()

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)


def _copy_outcome(task: asyncio.Task, future: asyncio.Future) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif task.exception() is not None:
        future.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        future.set_result(task.result())


class Deadline(Exception):
    """The server's limit for one call passed (a tool's own TimeoutError stays a tool error)."""


def _expire(future: asyncio.Future, timeout: float) -> None:
    if not future.done():
        future.set_exception(Deadline())


class ToolHost:
    """The tools one worker serves (built once) and the instances it holds."""

    def __init__(self, tools: dict[str, Any], schemas: dict[str, dict], settings: WorkerSettings) -> None:
        self.tools = tools  # tool id -> Tool
        self.schemas = schemas  # tool id -> {"type": "function", "function": ..., "parallel_safe", "distribution"}
        self.settings = settings
        self.namespaces = sorted({tool_id.split("/", 1)[0] for tool_id in tools})
        self.instances: OrderedDict[str, _Instance] = OrderedDict()  # least recently used first
        self.reaped: list[str] = []  # reaped since the last heartbeat the master acknowledged
        self.loop = ToolLoop()
        self.calls = 0
        self._creating: dict[tuple[str, str], asyncio.Future] = {}

    def tool(self, tool_id: str) -> Any:
        tool = self.tools.get(tool_id)
        if tool is None:
            raise ApiError(404, "unknown_tool", f"this worker does not serve tool {tool_id!r}; it serves: "
                           f"{', '.join(sorted(self.tools)) or 'none'}")
        return tool

    def _held(self, instance_id: Any, tool_id: str) -> _Instance:
        instance = self.instances.get(instance_id) if isinstance(instance_id, str) else None
        if instance is None or tool_id not in instance.tools:
            raise ApiError(404, "unknown_instance",
                           f"no instance {instance_id!r} of {tool_id} here (never created, released, or reaped after "
                           f"{self.settings.idle_timeout_s:g} s idle)")
        return instance

    async def _call(self, coroutine: Any, timeout_s: Any = None) -> Any:
        """Run a tool coroutine on the tool thread; ``timeout_s`` (the caller's own limit) shortens the server's."""
        self.calls += 1
        limit = self.settings.timeout_per_query_s
        if isinstance(timeout_s, (int, float)) and 0 < timeout_s < limit:
            limit = float(timeout_s)
        try:
            return await self.loop.run(coroutine, limit)
        except Deadline:
            raise ApiError(504, "timeout", f"the tool call took longer than {limit:g} s") from None
        except ApiError:
            raise
        except InfrastructureError as error:  # the tool's own dependency failed: not the model's doing
            raise ApiError(500, "infrastructure", str(error)) from None
        except ModelError as error:
            raise ApiError(500, "model", str(error)) from None
        except Exception as error:  # the tool rejected the call: the caller (and the model) sees why
            raise ApiError(500, "tool", f"{type(error).__name__}: {error}") from None

    async def handle(self, tool_id: str, action: str, data: dict) -> dict:
        tool = self.tool(tool_id)
        kwargs = data.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            raise ApiError(400, "bad_request", "kwargs must be a JSON object")
        instance_id = data.get("instance_id")
        if action == "create":
            if instance_id is not None and not isinstance(instance_id, str):
                raise ApiError(400, "bad_request", "instance_id must be a string")
            instance_id = instance_id or uuid.uuid4().hex
            instance = self.instances.get(instance_id)
            if instance is not None and tool_id in instance.tools:  # a retried create: already done
                self._touch(instance_id, instance)
                return {"instance_id": instance_id}
            pending = self._creating.get((instance_id, tool_id))
            if pending is not None:  # a retry while the first create still runs: its answer is this one's
                return await asyncio.shield(pending)
            pending = self._creating[(instance_id, tool_id)] = asyncio.get_running_loop().create_future()
            try:
                used = await self._call(tool.create(instance_id, **kwargs))
                instance = self.instances.get(instance_id)
                if instance is None:
                    instance = self.instances[instance_id] = _Instance(set(), monotonic())
                instance.tools.add(tool_id)
                self._touch(instance_id, instance)
                answer = {"instance_id": used or instance_id}
                pending.set_result(answer)
                return answer
            except BaseException as error:
                pending.set_exception(error if isinstance(error, Exception) else ApiError(503, "cancelled", "cancelled"))
                pending.exception()  # retrieved: no "never retrieved" warning when nobody else waited
                raise
            finally:
                del self._creating[(instance_id, tool_id)]
        if action == "release":
            instance = self.instances.get(instance_id) if isinstance(instance_id, str) else None
            if instance is None or tool_id not in instance.tools:
                return {"released": False}  # released twice, or reaped: nothing left to do
            instance.tools.discard(tool_id)
            if not instance.tools:
                del self.instances[instance_id]
            await self._call(tool.release(instance_id, **kwargs))
            return {"released": True}
        instance = self._held(instance_id, tool_id)
        instance.busy += 1
        try:
            if action == "execute":
                parameters = data.get("parameters")
                if not isinstance(parameters, dict):
                    raise ApiError(400, "bad_request", "parameters must be a JSON object")
                if nesting_depth_over(parameters, MAX_ARGUMENT_DEPTH):
                    raise ApiError(400, "model", f"the tool arguments are nested more than {MAX_ARGUMENT_DEPTH} "
                                   "levels deep")
                text, reward, metrics = await self._call(tool.execute(instance_id, parameters, **kwargs),
                                                         data.get("timeout_s"))
                try:  # what the rollout engine does with a local tool's answer
                    return {"text": text if isinstance(text, str) else json.dumps(jsonable(text)),
                            "reward": float(reward), "metrics": jsonable(metrics) if isinstance(metrics, dict) else {}}
                except (TypeError, ValueError) as error:
                    raise ApiError(500, "tool", f"{type(error).__name__}: the tool's answer is not usable: {error}"
                                   ) from None
            try:
                return {"reward": float(await self._call(tool.calc_reward(instance_id, **kwargs)))}
            except (TypeError, ValueError) as error:
                raise ApiError(500, "tool", f"{type(error).__name__}: calc_reward did not return a number: {error}"
                               ) from None
        finally:
            instance.busy -= 1
            self._touch(instance_id, instance)

    def _touch(self, instance_id: str, instance: _Instance) -> None:
        instance.last_used = monotonic()
        if instance_id in self.instances:
            self.instances.move_to_end(instance_id)

    async def reap(self) -> list[str]:
        """Release every tool of instances idle past the timeout; the oldest come first, so this stops early."""
        deadline = monotonic() - self.settings.idle_timeout_s
        reaped = []
        for instance_id in list(self.instances):
            instance = self.instances.get(instance_id)
            if instance is None:
                continue
            if instance.last_used > deadline:
                break
            if instance.busy:
                continue
            del self.instances[instance_id]
            for tool_id in sorted(instance.tools):
                try:
                    await self._call(self.tools[tool_id].release(instance_id))
                except ApiError as error:
                    logger.warning("releasing idle %s of %s failed: %s", instance_id, tool_id, error.message)
            reaped.append(instance_id)
        if reaped:
            logger.info("reaped %d idle instance(s)", len(reaped))
            self.reaped.extend(reaped)
        return reaped

    async def release_all(self) -> None:
        for instance_id, instance in list(self.instances.items()):
            for tool_id in instance.tools:
                with contextlib.suppress(ApiError):
                    await self._call(self.tools[tool_id].release(instance_id))
        self.instances.clear()


def advertised_url(settings: WorkerSettings, port: int) -> str:
    """The URL the master reaches this worker at: the bound address, or the interface that routes to the master."""
    if settings.advertise_url:
        return settings.advertise_url.rstrip("/")
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
        master = urlsplit(settings.master_url or "").hostname
        if master:
            with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((master, 9))  # UDP connect sends nothing; it picks the outgoing interface
                host = probe.getsockname()[0]
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class Worker:
    """The worker process's state: its tools, its identity for the master, and its background loops."""

    def __init__(self, host: ToolHost, settings: WorkerSettings) -> None:
        self.host = host
        self.settings = settings
        self.url = ""
        self.registered = False
        self.secret: str | None = None  # issued by the master at the first registration; proves this worker later
        self.registrations = 0  # successful registrations, with any master (a restarted one, a rejoin)
        self.rejoins = 0  # times the master had declared this worker dead and it joined again under a new id
        self.info = host_info()
        self._tasks: list[asyncio.Task] = []
        self._client: Any = None

    # -------------------------------------------------------------------------------------------- HTTP handlers
    async def tool_call(self, path: str, body: bytes) -> tuple[int, bytes]:
        namespace, name, action = split_tool_path(path)
        if action not in ACTIONS:
            raise ApiError(404, "not_found", f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        try:
            result = await self.host.handle(f"{namespace}/{name}", action, parse_object(body))
        except (ApiError, asyncio.CancelledError):
            raise
        except Exception as error:  # e.g. kwargs the tool's signature refuses: the caller sees why, as in-process
            raise ApiError(500, "tool", f"{type(error).__name__}: {error}") from None
        return 200, dumps(result)

    async def tools(self, request: Request):
        try:
            require_token(request, self.settings.token)
        except ApiError as error:
            return error.response()
        return json_response({"tools": self.host.schemas})

    async def health(self, request: Request):
        return json_response({
            "status": "ok",
            "role": "worker",
            "worker_id": self.settings.worker_id,
            "url": self.url,
            "master_url": self.settings.master_url,
            "registered": self.registered,
            "registrations": self.registrations,
            "rejoins": self.rejoins,
            "tools": sorted(self.host.tools),
            "instances": len(self.host.instances),
            "calls": self.host.calls,
        })

    def status_app(self) -> Starlette:
        """Every route but the tool calls."""
        return Starlette(
            routes=[
                Route("/tools", self.tools, methods=["GET"]),
                Route("/health", self.health, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    def app(self) -> Any:
        return tool_route(self.status_app(), self.tool_call, token=self.settings.token,
                          max_body_bytes=self.settings.max_body_bytes)

    # ------------------------------------------------------------------------------------------ background work
    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette):
        self._tasks.append(asyncio.create_task(self._reaper()))
        if self.settings.master_url:
            self._tasks.append(asyncio.create_task(self._keep_registered()))
        try:
            yield
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self.registered:
                with contextlib.suppress(Exception):
                    await self._post("/workers/unregister", {"worker_id": self.settings.worker_id,
                                                             "secret": self.secret}, timeout=2.0)
            await self.host.release_all()
            if self._client is not None:
                self._client.close()
            self.host.loop.close()

    async def _reaper(self) -> None:
        interval = max(0.02, min(self.settings.idle_timeout_s / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.host.reap()
            except Exception:  # never let one bad release stop the reaper
                logger.exception("reaping idle instances failed")

    def registration(self) -> dict:
        return {
            "worker_id": self.settings.worker_id,
            "url": self.url,
            "tools": self.host.schemas,
            "instances": {key: sorted(value.tools) for key, value in self.host.instances.items()},
            "host": self.info,
            "registrations": self.registrations + 1,
            **({"secret": self.secret} if self.secret else {}),
        }

    async def _post(self, path: str, payload: dict, timeout: float) -> tuple[int, dict]:
        if self._client is None:
            self._client = FastClient(limit_per_host=4, headers=auth_headers(self.settings.token))
        url = self.settings.master_url.rstrip("/") + path  # type: ignore[union-attr]
        status, body = await self._client.request("POST", url, dumps(payload), timeout_s=timeout)
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        return status, data if isinstance(data, dict) else {}

    async def _rejoin(self) -> None:
        """The master declared this worker dead (it was frozen or cut off) and gave up its instances, whose
        episodes failed and run again elsewhere: release them all and join again under a new id and secret."""
        held = len(self.host.instances)
        await self.host.release_all()
        self.host.reaped.clear()
        old = self.settings.worker_id
        self.settings.worker_id = uuid.uuid4().hex[:12]
        self.secret, self.registered = None, False
        self.rejoins += 1
        logger.warning("the master declared worker %s dead; released its %d instance(s), joining again as %s", old,
                       held, self.settings.worker_id)

    async def _keep_registered(self) -> None:
        """Register, then heartbeat; whenever the master is unreachable or has forgotten us, register again."""
        interval = self.settings.heartbeat_interval_s
        warned = False
        while True:
            try:
                if not self.registered:
                    status, data = await self._post("/workers/register", self.registration(), timeout=max(interval, 1))
                    if status == 410:
                        await self._rejoin()
                        continue
                    if status != 200:
                        raise RuntimeError(f"HTTP {status}: {(data.get('error') or {}).get('message', '')}")
                    if isinstance(data.get("secret"), str):
                        self.secret = data["secret"]
                    self.registered = True
                    self.registrations += 1
                    told = data.get("heartbeat_interval_s")
                    if isinstance(told, (int, float)) and 0 < told < interval:  # the master decides who is dead
                        interval = float(told)
                    warned = False
                    logger.info("registered with %s as %s (%s)", self.settings.master_url, self.settings.worker_id,
                                self.url)
                else:
                    reaped = list(self.host.reaped)
                    status, _ = await self._post("/workers/heartbeat", {
                        "worker_id": self.settings.worker_id,
                        "secret": self.secret,
                        "instances": len(self.host.instances),
                        "reaped": reaped,
                    }, timeout=max(interval, 1))
                    if status == 410:  # declared dead while frozen or cut off: start over, clean
                        await self._rejoin()
                        continue
                    if status == 404:  # the master restarted and does not know us: register again at once
                        self.registered = False
                        logger.info("the master does not know this worker any more; registering again")
                        continue
                    if status != 200:
                        raise RuntimeError(f"HTTP {status}")
                    del self.host.reaped[:len(reaped)]
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self.registered = False
                if not warned:
                    logger.warning("master %s unreachable (%s: %s); retrying every %g s", self.settings.master_url,
                                   type(error).__name__, error, interval)
                    warned = True
            await asyncio.sleep(interval)
