"""The master: routes tool calls to workers by instance id, tracks worker health, serves ``/health`` and ``/``.

Routing (DESIGN.md): the first create of an instance id picks the least-loaded live worker serving the tool's
bootcamp (a heap per namespace with lazy deletion: O(log n) per pick and per load change); every later call of that
id goes to the same worker. A worker silent for longer than the worker timeout, or refusing connections, is dead at
once: it leaves routing, the routes of its instances are released at once (calls for them fail fast with 503
``worker_dead``, and their episodes end in an infrastructure error that eval runs again), and if it comes back (it
was frozen, or cut off) it is told to drop what it held and join again under a new id. Workers report the instances
they hold when they register, so a restarted master routes running episodes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import hmac
import itertools
import logging
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from bootcamp_core.evaluate.secrets import mask_url
from bootcamp_core.serve.common import (
    ACTIONS,
    DEFAULT_MAX_BODY_BYTES,
    ApiError,
    auth_headers,
    dumps,
    host_info,
    json_response,
    monotonic,
    parse_object,
    read_body,
    require_token,
)
from bootcamp_core.serve.http import ConnectError, FastClient, split_tool_path, tool_route

logger = logging.getLogger("bootcamp_core.serve.master")
#: a dead worker that holds no routed instance is forgotten this long after its last heartbeat
FORGET_DEAD_S = 3600.0
#: instances lost with a dead worker, remembered (to answer their calls with ``worker_dead``) up to this many
MAX_LOST = 100_000


@attrs.define
class MasterSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = attrs.field(default=None, repr=False)
    expected_workers: int = 1
    timeout_per_query_s: float = 600.0
    worker_timeout_s: float = 15.0  # no heartbeat for this long: the worker is dead
    heartbeat_interval_s: float = 5.0  # told to workers when they register
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_connections: int = 1024  # to each worker


@attrs.define(eq=False)
class WorkerEntry:
    id: str
    url: str
    tools: dict[str, dict]
    namespaces: frozenset[str]
    host: dict
    registered_at: float
    last_heartbeat: float
    alive: bool = True
    load: int = 0  # instances the master routed here and not yet released
    reported_instances: int = 0
    death: str = ""
    calls: int = 0  # tool calls the master forwarded here
    registrations: int = 1  # how often this worker process registered (with any master): >1 after a master restart
    told_dead: bool = False  # it came back after being declared dead and was told to join again
    secret: str = attrs.field(default="", repr=False)  # issued at the first registration; proves the worker later

    def proves(self, given: Any) -> bool:
        return bool(self.secret) and isinstance(given, str) and hmac.compare_digest(given.encode(), self.secret.encode())

    def public(self, now: float) -> dict:
        return {
            "id": self.id,
            "url": mask_url(self.url),  # shown on /health and the dashboard: credentials in it stay here
            "tools": sorted(self.tools),
            "load": self.load,
            "instances": self.reported_instances,
            "heartbeat_age_s": round(now - self.last_heartbeat, 3),
            "alive": self.alive,
            "calls": self.calls,
            "registrations": self.registrations,
            "host": self.host,
            **({"death": self.death} if self.death else {}),
        }


@attrs.define(slots=True)
class _Route:
    worker: WorkerEntry
    tools: set[str]


class Router:
    """Which worker holds which instance, and which live worker is least loaded per bootcamp."""

    def __init__(self) -> None:
        self.workers: dict[str, WorkerEntry] = {}
        self.instances: dict[str, _Route] = {}
        self.lost: dict[str, WorkerEntry] = {}  # instance id -> the dead worker it was on (oldest first, bounded)
        self.deaths = 0
        self._heaps: dict[str, list[tuple[int, int, WorkerEntry]]] = {}
        self._order = itertools.count()

    def _push(self, worker: WorkerEntry) -> None:
        for namespace in worker.namespaces:
            heap = self._heaps.setdefault(namespace, [])
            heapq.heappush(heap, (worker.load, next(self._order), worker))
            if len(heap) > 64 + 8 * len(self.workers):  # stale entries pile up under releases without picks
                self._heaps[namespace] = heap = [
                    (w.load, next(self._order), w) for w in self.workers.values()
                    if w.alive and namespace in w.namespaces
                ]
                heapq.heapify(heap)

    def add(self, worker: WorkerEntry, instances: dict[str, list[str]]) -> WorkerEntry:
        """Register ``worker``, or update it in place when it registers again (so calls in flight keep its entry).

        ``instances``: what the worker holds, {instance id: tool ids}; they are routed to it again.
        """
        entry = self.workers.get(worker.id)
        if entry is None:
            entry = self.workers[worker.id] = worker
        else:
            entry.url, entry.tools, entry.namespaces, entry.host = worker.url, worker.tools, worker.namespaces, worker.host
            entry.last_heartbeat, entry.reported_instances = worker.last_heartbeat, worker.reported_instances
            entry.registrations, entry.alive, entry.death = worker.registrations, True, ""
        for instance_id, tools in instances.items():
            route = self.instances.get(instance_id)
            if route is not None and route.worker is not entry:
                self.forget(instance_id)  # routed elsewhere while this worker was away: the worker's word wins
                route = None
            if route is None:
                self.instances[instance_id] = _Route(entry, set(tools))
                self.lost.pop(instance_id, None)
                entry.load += 1
            else:
                route.tools.update(tools)
        self._push(entry)
        return entry

    def pick(self, namespace: str) -> WorkerEntry | None:
        """The least-loaded live worker serving ``namespace``; stale heap entries are dropped on the way."""
        heap = self._heaps.get(namespace)
        while heap:
            load, _, worker = heap[0]
            if worker.alive and worker.load == load:
                return worker
            heapq.heappop(heap)
        return None

    def assign(self, instance_id: str, worker: WorkerEntry, tool_id: str) -> None:
        route = self.instances.get(instance_id)
        if route is None:
            self.instances[instance_id] = _Route(worker, {tool_id})
            if self.lost:
                self.lost.pop(instance_id, None)
            worker.load += 1
            self._push(worker)
        else:
            route.tools.add(tool_id)

    def release(self, instance_id: str, tool_id: str) -> None:
        route = self.instances.get(instance_id)
        if route is None:
            return
        route.tools.discard(tool_id)
        if not route.tools:
            self.forget(instance_id)

    def forget(self, instance_id: str) -> None:
        route = self.instances.pop(instance_id, None)
        if route is not None:
            route.worker.load -= 1
            if route.worker.alive:
                self._push(route.worker)

    def kill(self, worker: WorkerEntry, reason: str) -> bool:
        """Declare ``worker`` dead: it leaves routing and the routes of its instances are released now (their
        state is lost; calls for them are answered ``worker_dead`` while :attr:`lost` remembers them)."""
        if not worker.alive:
            return False
        worker.alive = False
        worker.death = reason
        self.deaths += 1
        gone = [instance_id for instance_id, route in self.instances.items() if route.worker is worker]
        for instance_id in gone:
            del self.instances[instance_id]
            self.lost[instance_id] = worker
        worker.load = 0
        while len(self.lost) > MAX_LOST:
            del self.lost[next(iter(self.lost))]
        logger.warning("worker %s (%s) is dead: %s; %d instance(s) lost with it", worker.id, worker.url, reason,
                       len(gone))
        return True


class Master:
    def __init__(self, settings: MasterSettings) -> None:
        self.settings = settings
        self.router = Router()
        self.info = host_info()
        self.started = monotonic()
        self._client: Any = None
        self._tasks: list[asyncio.Task] = []
        self.worker_restarts = 0  # dead worker processes unified mode started again
        self.worker_rejoins = 0  # workers declared dead that came back (frozen, cut off) and joined under a new id
        self.on_ready: Callable[[dict], None] | None = None  # called once, when every expected worker is there
        # after a (re)start, unknown instances may belong to workers that have not re-registered yet: for this long
        # after the master starts serving, a call for one is answered not_ready (the client waits), not unknown
        self.grace_s = 2 * settings.heartbeat_interval_s + 1.0
        self.serving_since = self.started

    # ----------------------------------------------------------------------------------------- worker protocol
    async def register(self, request: Request) -> Response:
        try:
            require_token(request, self.settings.token)
            data = parse_object(await read_body(request, self.settings.max_body_bytes))
            worker_id, url, tools = data.get("worker_id"), data.get("url"), data.get("tools")
            if not isinstance(worker_id, str) or not worker_id or not isinstance(url, str) or not url:
                raise ApiError(400, "bad_request", "register needs worker_id and url")
            if not isinstance(tools, dict) or not all(isinstance(key, str) and "/" in key for key in tools):
                raise ApiError(400, "bad_request", "tools must map tool ids (namespace/name) to schemas")
            reported = data.get("instances") or {}
            if isinstance(reported, list):  # ids only: the instance holds every tool of the worker
                reported = {item: list(tools) for item in reported if isinstance(item, str)}
            instances = {key: [tool for tool in value if isinstance(tool, str)] for key, value in reported.items()
                         if isinstance(key, str) and isinstance(value, list)}
            known = self.router.workers.get(worker_id)
            if known is not None and not known.proves(data.get("secret")):
                raise ApiError(403, "worker_id_taken", f"worker id {worker_id!r} is registered already; only that "
                               "worker (with the secret it was issued) can register under it again")
            if known is not None and not known.alive:
                raise self._declared_dead(known)
            registrations = data.get("registrations")
            now = monotonic()
            worker = WorkerEntry(
                id=worker_id, url=url.rstrip("/"), tools=tools,
                namespaces=frozenset(key.split("/", 1)[0] for key in tools),
                host=data.get("host") if isinstance(data.get("host"), dict) else {},
                registered_at=now, last_heartbeat=now, reported_instances=len(instances),
                secret=known.secret if known is not None else secrets.token_urlsafe(24),
                registrations=registrations if isinstance(registrations, int) and registrations > 0 else 1,
            )
            entry = self.router.add(worker, instances)
            self._check_ready()
            logger.info("worker %s registered at %s serving %d tool(s)", worker_id, worker.url, len(tools))
            return json_response({"worker_id": worker_id, "heartbeat_interval_s": self.settings.heartbeat_interval_s,
                                  "worker_timeout_s": self.settings.worker_timeout_s, "secret": entry.secret})
        except ApiError as error:
            return error.response()

    async def heartbeat(self, request: Request) -> Response:
        try:
            require_token(request, self.settings.token)
            data = parse_object(await read_body(request, self.settings.max_body_bytes))
            worker = self.router.workers.get(data.get("worker_id"))  # type: ignore[arg-type]
            if worker is None:
                raise ApiError(404, "unknown_worker", "unknown worker: register again")
            if not worker.proves(data.get("secret")):
                raise ApiError(403, "wrong_secret", "the worker's secret is missing or wrong")
            if not worker.alive:
                raise self._declared_dead(worker)
            worker.last_heartbeat = monotonic()
            if isinstance(data.get("instances"), int):
                worker.reported_instances = data["instances"]
            for instance_id in data.get("reaped") or ():
                route = self.router.instances.get(instance_id) if isinstance(instance_id, str) else None
                if route is not None and route.worker is worker:
                    self.router.forget(instance_id)
            return json_response({"ok": True})
        except ApiError as error:
            return error.response()

    async def unregister(self, request: Request) -> Response:
        try:
            require_token(request, self.settings.token)
            data = parse_object(await read_body(request, self.settings.max_body_bytes))
            worker = self.router.workers.get(data.get("worker_id"))  # type: ignore[arg-type]
            if worker is not None and not worker.proves(data.get("secret")):
                raise ApiError(403, "wrong_secret", "the worker's secret is missing or wrong")
            if worker is not None:
                self.router.kill(worker, "unregistered (shut down)")
            return json_response({"ok": worker is not None})
        except ApiError as error:
            return error.response()

    def _declared_dead(self, worker: WorkerEntry) -> ApiError:
        """What a worker declared dead hears when it comes back: its instances were given up (their episodes
        failed and run again elsewhere), so it drops them and joins again under a new id."""
        if not worker.told_dead:
            worker.told_dead = True
            self.worker_rejoins += 1
        return ApiError(410, "declared_dead", f"worker {worker.id} was declared dead ({worker.death}) and its "
                        "instances given up: release them and register again under a new id")

    # ------------------------------------------------------------------------------------------------ tool calls
    async def tool_call(self, path: str, body: bytes) -> tuple[int, bytes]:
        namespace, name, action = split_tool_path(path)
        if action not in ACTIONS:
            raise ApiError(404, "not_found", f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        tool_id = f"{namespace}/{name}"
        data = parse_object(body)
        instance_id = data.get("instance_id")
        if instance_id is not None and not isinstance(instance_id, str):
            raise ApiError(400, "bad_request", "instance_id must be a string")
        route = self.router.instances.get(instance_id) if instance_id else None
        if route is None:
            if action == "create":
                return await self._create(namespace, tool_id, path, data, body)
            dead = self.router.lost.get(instance_id) if instance_id else None
            if dead is not None:
                if action == "release":
                    del self.router.lost[instance_id]  # type: ignore[arg-type]
                    return 200, b'{"released":false}'
                raise ApiError(503, "worker_dead", f"instance {instance_id} was on worker {dead.id} ({dead.url}), "
                               f"which is dead ({dead.death}); the episode's tool state is lost")
            if monotonic() - self.serving_since < self.grace_s:  # workers may not have re-registered after a restart
                raise ApiError(503, "not_ready", f"unknown instance {instance_id!r} while workers register; retry")
            if action == "release":
                return 200, b'{"released":false}'
            raise ApiError(404, "unknown_instance",
                           f"unknown instance {instance_id!r} (never created, released, or reaped when idle)")
        worker = route.worker
        if not worker.alive:
            if action == "release":
                self.router.forget(instance_id)  # type: ignore[arg-type]  # its state died with the worker
                return 200, b'{"released":false}'
            raise ApiError(503, "worker_dead", f"instance {instance_id} was on worker {worker.id} ({worker.url}), "
                           f"which is dead ({worker.death}); the episode's tool state is lost")
        if tool_id not in worker.tools:
            raise ApiError(404, "unknown_tool", f"worker {worker.id}, which holds instance {instance_id}, does not "
                           f"serve {tool_id} (an episode's tools must all be served by the same workers)")
        if action == "create":
            route.tools.add(tool_id)  # before the call: a concurrent create of the same instance follows it
        try:
            status, payload = await self._forward(worker, path, body)
        except ApiError as error:
            if action in ("create", "release"):
                self.router.release(instance_id, tool_id)  # type: ignore[arg-type]
            if action == "release" and error.kind in ("worker_refused", "worker_dead"):
                return 200, b'{"released":false}'  # its state died with the worker: nothing left to release
            raise
        if action == "release" or (status != 200 and action == "create") or (status == 404 and action != "create"):
            self.router.release(instance_id, tool_id)  # type: ignore[arg-type]
        return status, payload

    async def _create(self, namespace: str, tool_id: str, path: str, data: dict, body: bytes) -> tuple[int, bytes]:
        """The first create of an instance: reserve the least-loaded worker before the call (so a burst of creates
        spreads at once), and try the next one when a worker refuses connections."""
        instance_id = data.get("instance_id")
        if not instance_id:
            instance_id = data["instance_id"] = uuid.uuid4().hex
            body = dumps(data)
        for _ in range(max(1, len(self.router.workers))):
            worker = self.router.pick(namespace)
            if worker is None:
                break
            if tool_id not in worker.tools:
                raise ApiError(404, "unknown_tool", f"no worker serving bootcamp {namespace!r} serves {tool_id}")
            self.router.assign(instance_id, worker, tool_id)
            try:
                status, payload = await self._forward(worker, path, body)
            except ApiError as error:
                self.router.release(instance_id, tool_id)
                if error.kind == "worker_refused":
                    continue  # nothing reached that worker: the next one gets this create
                raise
            if status != 200:
                self.router.release(instance_id, tool_id)
            return status, payload
        raise ApiError(503, "no_worker", f"no live worker serves bootcamp {namespace!r} "
                       f"({self._alive()} live worker(s) in all)")

    async def _forward(self, worker: WorkerEntry, path: str, body: bytes) -> tuple[int, bytes]:
        worker.calls += 1
        try:
            return await self._client.request("POST", worker.url + path, body)
        except asyncio.TimeoutError:
            raise ApiError(504, "timeout", f"worker {worker.id} did not answer within "
                           f"{self.settings.timeout_per_query_s:g} s") from None
        except ConnectError as error:
            if error.refused:
                # nothing listens there any more: dead now, not after the heartbeat timeout
                self.router.kill(worker, "connection refused")
                raise ApiError(503, "worker_refused", f"worker {worker.id} ({worker.url}) is dead: connection "
                               "refused; the episode's tool state is lost") from None
            raise ApiError(503, "worker_unreachable", f"cannot reach worker {worker.id} ({worker.url}): {error}; "
                           "the episode's tool state is out of reach") from None
        except OSError as error:  # dropped mid-call: crashed, declared dead, or the network broke
            death = f" ({worker.death})" if worker.death else ""
            raise ApiError(503, "worker_dead", f"worker {worker.id} ({worker.url}) dropped the call "
                           f"({type(error).__name__}: {error}); it may be dead{death}, and the episode's tool state "
                           "is lost or uncertain") from None

    # ------------------------------------------------------------------------------------------- status pages
    def _alive(self) -> int:
        return sum(worker.alive for worker in self.router.workers.values())

    def status(self) -> dict:
        now = monotonic()
        alive = self._alive()
        return {
            "status": "ok",
            "role": "master",
            "ready": alive >= max(self.settings.expected_workers, 1),
            "expected_workers": self.settings.expected_workers,
            "live_workers": alive,
            "worker_restarts": self.worker_restarts,
            "worker_deaths": self.router.deaths,
            "worker_rejoins": self.worker_rejoins,
            "dead_workers": len(self.router.workers) - alive,
            "instances": len(self.router.instances),
            "uptime_s": round(now - self.started, 1),
            "host": self.info,
            "workers": [worker.public(now) for worker in self.router.workers.values()],
        }

    async def health(self, request: Request) -> Response:
        return json_response(self.status())

    async def dashboard(self, request: Request) -> Response:
        from bootcamp_core.serve.dashboard import render_dashboard

        return HTMLResponse(render_dashboard(self.status()))

    async def tools(self, request: Request) -> Response:
        try:
            require_token(request, self.settings.token)
        except ApiError as error:
            return error.response()
        tools: dict[str, dict] = {}
        for worker in self.router.workers.values():
            if worker.alive:
                for tool_id, schema in worker.tools.items():
                    tools.setdefault(tool_id, schema)
        return json_response({"tools": dict(sorted(tools.items()))})

    def status_app(self) -> Starlette:
        """Every route but the tool calls."""
        return Starlette(
            routes=[
                Route("/tools", self.tools, methods=["GET"]),
                Route("/workers/register", self.register, methods=["POST"]),
                Route("/workers/heartbeat", self.heartbeat, methods=["POST"]),
                Route("/workers/unregister", self.unregister, methods=["POST"]),
                Route("/health", self.health, methods=["GET"]),
                Route("/", self.dashboard, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    def app(self) -> Any:
        return tool_route(self.status_app(), self.tool_call, token=self.settings.token,
                          max_body_bytes=self.settings.max_body_bytes)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette):
        self._client = FastClient(limit_per_host=self.settings.max_connections,
                                  timeout_s=self.settings.timeout_per_query_s, connect_timeout_s=5.0,
                                  headers=auth_headers(self.settings.token))
        self._tasks.append(asyncio.create_task(self._watch_workers()))
        self.serving_since = monotonic()
        try:
            yield
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._client.close()

    async def _watch_workers(self) -> None:
        timeout = self.settings.worker_timeout_s
        period = max(0.02, min(timeout / 4, 1.0))
        last = monotonic()
        while True:
            await asyncio.sleep(period)
            now = monotonic()
            if now - last > period + timeout / 2:
                # the master itself stood still (frozen, or starved of CPU): heartbeats may be waiting unread, so
                # nobody is declared dead for the time the master did not look
                for worker in self.router.workers.values():
                    worker.last_heartbeat = max(worker.last_heartbeat, now - period)
            last = now
            for worker in list(self.router.workers.values()):
                if worker.alive and now - worker.last_heartbeat > timeout:
                    self.router.kill(worker, f"no heartbeat for {now - worker.last_heartbeat:.1f} s")
                    self._client.abort(worker.url)  # calls in flight there fail now, not at their timeout
                elif not worker.alive and worker.load <= 0 and now - worker.last_heartbeat > FORGET_DEAD_S:
                    del self.router.workers[worker.id]  # long gone and holding nothing: off the dashboard
            self._check_ready()

    def _check_ready(self) -> None:
        if self.on_ready is not None:
            status = self.status()
            if status["ready"]:
                callback, self.on_ready = self.on_ready, None
                try:
                    callback(status)
                except Exception:
                    logger.exception("the on-ready action failed")
