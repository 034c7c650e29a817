"""Tool workers as Ray actors, with the tool server's semantics, in the caller's Ray cluster.

    from bootcamp_core.scale.tools import ToolActors

    with ToolActors.start({"example/calculator": {}}, actors=4) as pool:   # in a Ray driver (a verl job's, say)
        calculator = pool.tool("example/calculator")                     # a Tool, as a local one
        instance = await calculator.create(identity=...)

Each actor (:class:`ToolWorker`) holds the tool server worker's :class:`~bootcamp_core.serve.worker.ToolHost`, so
creates, calls, timeouts, idle reaping and the typed errors are the worker's own code. One small router actor
(:class:`ToolRouter`) starts the actors and keeps the placement: the first create of an instance id goes to the
least-loaded live actor and every later call of that id to the same actor, so one episode's tools live in one
process (DESIGN.md). Callers cache the route and call the actor directly: the router sees creates and releases only.

A dead actor (its process killed, its node lost) fails the calls of its instances with
:class:`~bootcamp_core.plugin.errors.InfrastructureError` (their state is gone; an evaluation runs those episodes
again) and is replaced by a fresh actor for new episodes; a create that met a dead actor is placed again at once,
since nothing of it survived. Releasing an instance of a dead actor is a no-op.

The actors are removed when the caller exits: the router belongs to the process that started it and the tool actors
to the router, and Ray ends an actor whose owner has gone. :meth:`ToolActors.close` (also run at exit) releases
every instance still held first. Secrets in the tool configs reach the actors as constructor arguments only, and
their log lines are masked.

This module is also the ``ray`` tool backend (:mod:`bootcamp_core.plugin.backends`): a tool-config entry
``{type: ray, name?, address?, actors?, concurrency?, num_cpus?, tools?}`` runs its tool on the pool called
``name`` in the current Ray job, started by the first process that asks for it. ``tools`` ({tool id: constructor
config}) or ``bootcamps`` (namespaces) is what every actor builds; by default every installed bootcamp's tools, as
``bootcamp serve`` serves them. :func:`serve_on_ray` puts a pool behind
the tool server's HTTP API (``bootcamp serve --ray``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from bootcamp_core.plugin.errors import ConfigError, InfrastructureError, ModelError

logger = logging.getLogger("bootcamp_core.scale.tools")

#: the pool a ``type: ray`` entry without a name uses
DEFAULT_NAME = "bootcamp-tools"
#: tool calls at once per actor, by default
DEFAULT_CONCURRENCY = 64
#: how long starting the actors may take (Ray waits for free CPUs without a word)
START_TIMEOUT_S = 300.0
#: dead actors replaced at most this many times per pool: an actor that cannot start is not retried for ever
MAX_REPLACEMENTS = 20


def _lost_actor_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors for a call whose actor, worker process or node died (not the tool's own failure)."""
    names = ("RayActorError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError")
    return tuple(getattr(ray.exceptions, name) for name in names if hasattr(ray.exceptions, name))


# ------------------------------------------------------------------------------------------------------ actors
class ToolWorker:
    """In a Ray actor: the tools of a selection, served by the tool server worker's own :class:`ToolHost`."""

    def __init__(self, selection: dict[str, dict], secrets: list[str], timeout_per_query_s: float,
                 idle_timeout_s: float) -> None:
        from bootcamp_core.evaluate.secrets import MaskedLogs, Redactor
        from bootcamp_core.plugin.loader import get_registry
        from bootcamp_core.serve.worker import ToolHost, WorkerSettings

        # for the actor's whole life: no log line of the host or a plugin shows a secret of the tool configs
        MaskedLogs(Redactor(secrets)).__enter__()
        registry = get_registry()
        tools, schemas = {}, {}
        for tool_id, tool_config in selection.items():
            tool = registry.component("tool", tool_id, tool_config or None)
            cls = type(tool)
            schemas[tool_id] = {**cls.openai_schema(), "parallel_safe": bool(cls.parallel_safe),
                                "versions": registry.versions_for([("tool", tool_id)])}
            tools[tool_id] = tool
        settings = WorkerSettings(timeout_per_query_s=timeout_per_query_s, idle_timeout_s=idle_timeout_s)
        self.host = ToolHost(tools, schemas, settings)
        self._reaper: asyncio.Task | None = None

    async def ready(self) -> int:
        """The actor's process id, once its tools are built (and its idle reaper runs)."""
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return os.getpid()

    async def _reap(self) -> None:
        interval = max(0.02, min(self.host.settings.idle_timeout_s / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.host.reap()
            except Exception:  # never let one bad release stop the reaper
                logger.exception("reaping idle instances failed")

    async def call(self, tool_id: str, action: str, data: dict) -> dict:
        """``{"ok": answer}`` as a tool server worker answers, or ``{"error": {status, type, message}}``."""
        from bootcamp_core.serve.common import ApiError

        try:
            return {"ok": await self.host.handle(tool_id, action, data)}
        except ApiError as error:
            return {"error": {"status": error.status, "type": error.kind, "message": error.message}}
        except Exception as error:  # noqa: BLE001  # e.g. kwargs the tool refuses: the caller sees why, as in-process
            return {"error": {"status": 500, "type": "tool", "message": f"{type(error).__name__}: {error}"}}

    async def schemas(self) -> dict[str, dict]:
        return self.host.schemas

    async def held(self) -> int:
        """How many instances the actor holds."""
        return len(self.host.instances)

    async def release_all(self) -> int:
        """Release every instance held; returns how many there were."""
        held = len(self.host.instances)
        await self.host.release_all()
        return held


class ToolRouter:
    """In a Ray actor: starts the tool actors and keeps which holds which instance (least-loaded placement)."""

    def __init__(self, selection: dict[str, dict], secrets: list[str], actors: int, concurrency: int,
                 num_cpus: float, timeout_per_query_s: float, idle_timeout_s: float, creator: str = "") -> None:
        self.creator = creator
        self.worker_args = (selection, secrets, timeout_per_query_s, idle_timeout_s)
        self.size, self.concurrency, self.num_cpus = actors, concurrency, num_cpus
        self.slots: list[dict] = []
        self.routes: dict[str, dict] = {}  # instance id -> {"slot", "generation", "tools"}
        self.lost: dict[str, str] = {}  # instance id -> why its state is gone (bounded, oldest first)
        self.deaths = 0
        self.replacements = 0
        self._started: asyncio.Future | None = None

    def _spawn(self) -> Any:
        import ray

        worker = ray.remote(ToolWorker).options(
            num_cpus=self.num_cpus, max_concurrency=self.concurrency, max_restarts=0, max_task_retries=0)
        return worker.remote(*self.worker_args)

    async def created_by(self) -> str:
        """The token of the pool that started this router (a pool that joined it by name has another)."""
        return self.creator

    async def start(self) -> list[int]:
        """Start the actors once (every caller waits for the same start); returns their process ids."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_future()
            try:
                self.slots = [{"actor": self._spawn(), "generation": 0, "load": 0, "pid": None, "alive": True}
                              for _ in range(self.size)]
                pids = await asyncio.gather(*(slot["actor"].ready.remote() for slot in self.slots))
                for slot, pid in zip(self.slots, pids):
                    slot["pid"] = pid
                self._started.set_result(None)
            except BaseException as error:
                self._started.set_exception(error)
                self._started.exception()  # retrieved: every later start raises it again
                raise
        await asyncio.shield(self._started)
        return [slot["pid"] for slot in self.slots]

    def _route(self, instance_id: str, route: dict) -> dict:
        slot = self.slots[route["slot"]]
        return {"slot": route["slot"], "generation": route["generation"], "actor": slot["actor"], "pid": slot["pid"]}

    async def place(self, instance_id: str, tool_id: str) -> dict:
        """The route of ``instance_id``: where it is, else the least-loaded live actor, which it is counted on."""
        await self.start()
        route = self.routes.get(instance_id)
        if route is None:
            live = [index for index, slot in enumerate(self.slots) if slot["alive"]]
            if not live:
                raise InfrastructureError(f"every tool actor is dead ({self.deaths} deaths, {self.replacements} "
                                          "replacements)", kind="tool_server")
            index = min(live, key=lambda number: self.slots[number]["load"])
            route = self.routes[instance_id] = {"slot": index, "generation": self.slots[index]["generation"],
                                                "tools": set()}
            self.lost.pop(instance_id, None)
            self.slots[index]["load"] += 1
        route["tools"].add(tool_id)
        return self._route(instance_id, route)

    async def route(self, instance_id: str) -> dict:
        """The route of ``instance_id``, or ``{"lost": why}`` for one whose actor died, or ``{}`` when unknown."""
        route = self.routes.get(instance_id)
        if route is not None:
            return self._route(instance_id, route)
        return {"lost": self.lost[instance_id]} if instance_id in self.lost else {}

    async def released(self, instance_id: str, tool_id: str) -> bool:
        """Forget ``tool_id`` of ``instance_id``; True once the instance has no tool left."""
        route = self.routes.get(instance_id)
        if route is None:
            self.lost.pop(instance_id, None)
            return True
        route["tools"].discard(tool_id)
        if route["tools"]:
            return False
        del self.routes[instance_id]
        slot = self.slots[route["slot"]]
        if slot["generation"] == route["generation"]:
            slot["load"] -= 1
        return True

    async def died(self, slot_number: int, generation: int, reason: str) -> None:
        """A caller saw the actor of ``slot_number`` (this generation of it) die: its instances are lost, and a new
        actor takes its place for new episodes."""
        slot = self.slots[slot_number]
        if slot["generation"] != generation or not slot["alive"]:
            return  # reported already
        self.deaths += 1
        gone = [key for key, route in self.routes.items()
                if route["slot"] == slot_number and route["generation"] == generation]
        why = f"the tool actor (pid {slot['pid']}) holding it died ({reason}); the episode's tool state is lost"
        for instance_id in gone:
            del self.routes[instance_id]
            self.lost[instance_id] = why
        while len(self.lost) > 100_000:
            del self.lost[next(iter(self.lost))]
        logger.warning("tool actor pid %s died (%s); %d instance(s) lost with it", slot["pid"], reason, len(gone))
        slot.update(alive=False, load=0)
        if self.replacements >= MAX_REPLACEMENTS:
            logger.error("tool actor not replaced: %d replacements already", MAX_REPLACEMENTS)
            return
        self.replacements += 1
        actor = self._spawn()
        slot.update(actor=actor, generation=generation + 1, alive=True, pid=None)
        try:
            slot["pid"] = await actor.ready.remote()
        except Exception as error:  # noqa: BLE001  # the new one could not start either: out of placement
            slot["alive"] = False
            logger.error("a replacement tool actor could not start: %s", error)

    async def status(self) -> dict:
        """The pool as ``/health`` shows it."""
        await self.start()
        return {
            "actors": [{"slot": number, "pid": slot["pid"], "load": slot["load"], "alive": slot["alive"],
                        "generation": slot["generation"]} for number, slot in enumerate(self.slots)],
            "live_workers": sum(slot["alive"] for slot in self.slots),
            "instances": len(self.routes),
            "deaths": self.deaths,
            "replacements": self.replacements,
            "concurrency_per_actor": self.concurrency,
        }

    async def schemas(self) -> dict[str, dict]:
        await self.start()
        for slot in self.slots:
            if slot["alive"]:
                with contextlib.suppress(Exception):
                    return await slot["actor"].schemas.remote()
        raise InfrastructureError("no tool actor is alive to list its tools", kind="tool_server")

    async def close(self) -> int:
        """Release every instance the actors hold, then end them; returns how many instances were released."""
        import ray

        if self._started is None:
            return 0
        actors = [slot["actor"] for slot in self.slots if slot["alive"]]
        held = await asyncio.gather(*(actor.release_all.remote() for actor in actors), return_exceptions=True)
        for actor in actors:
            with contextlib.suppress(Exception):  # already gone
                ray.kill(actor, no_restart=True)
        for slot in self.slots:
            slot["alive"] = False
        self.routes.clear()
        return sum(count for count in held if isinstance(count, int))


# ------------------------------------------------------------------------------------------ the caller's side
class RemoteToolError(Exception):
    """The tool raised in its actor; subclasses carry the tool's exception class name."""


_ERROR_CLASSES: dict[str, type[RemoteToolError]] = {}


def _error_of(kind: str, status: int, message: str) -> Exception:
    """An actor's error answer as the exception the tool server's client raises for it."""
    if kind == "model":
        return ModelError(message)
    if kind == "tool" or status in (400, 413, 504):
        # "ValueError: bad" from the actor reads "ValueError: bad" here, as it would in-process
        name, sep, rest = message.partition(": ")
        if kind == "tool" and sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            cls = _ERROR_CLASSES.get(name)
            if cls is None:
                cls = _ERROR_CLASSES[name] = type(name, (RemoteToolError,), {"__module__": __name__})
            return cls(rest)
        return RemoteToolError(message)
    return InfrastructureError(f"tool actor: {message}", kind="tool_server")


class ToolActors:
    """A pool of tool actors in the current Ray job, reached through its router (see the module docstring)."""

    def __init__(self, ray: Any, router: Any, name: str | None = None, owned: bool = False) -> None:
        self.ray, self.router, self.name, self.owned = ray, router, name, owned
        self._routes: dict[str, dict] = {}
        self._tools: dict[tuple[str, float | None], Any] = {}
        self._schemas: dict[str, dict] | None = None
        self._lost_errors = _lost_actor_errors(ray)
        self._closed = False

    # ---------------------------------------------------------------------------------------------- making
    @classmethod
    def start(cls, tools: Mapping[str, Mapping] | None = None, *, bootcamps: list[str] | None = None,
              actors: int | None = None, concurrency: int = DEFAULT_CONCURRENCY, num_cpus: float | None = None,
              name: str | None = None, address: str | None = None, timeout_per_query_s: float = 600.0,
              idle_timeout_s: float = 3600.0, wait: bool = True) -> ToolActors:
        """Start a pool serving ``tools`` ({tool id: constructor config}) or the tools of ``bootcamps`` (default:
        every installed bootcamp's) in the current Ray job (connecting to ``address`` first when Ray is not
        initialized); a pool called ``name`` that exists already is joined instead.

        ``actors`` defaults to the cluster's CPUs, each given ``num_cpus`` (default: a share of one CPU each)."""
        from bootcamp_core.evaluate.secrets import config_secrets
        from bootcamp_core.scale.cluster import cluster_cpus

        if actors is not None and actors < 1:
            raise ConfigError(f"actors must be at least 1, got {actors}", field="actors")
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}", field="concurrency")
        if num_cpus is not None and num_cpus < 0:
            raise ConfigError(f"num_cpus must not be negative, got {num_cpus:g}", field="num_cpus")
        selection = select(tools, bootcamps)
        ray = _connect(address)
        cpus = cluster_cpus(ray)
        actors = actors or cpus
        num_cpus = min(1.0, cpus / actors) if num_cpus is None else float(num_cpus)
        options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": 1000, "max_restarts": 0}
        if name:
            options.update(name=name, get_if_exists=True)
        creator = uuid.uuid4().hex
        router = ray.remote(ToolRouter).options(**options).remote(
            selection, config_secrets(selection), actors, concurrency, num_cpus, timeout_per_query_s, idle_timeout_s,
            creator)
        # a pool of that name started by another process is joined: that process ends it, not this one
        owned = not name or ray.get(router.created_by.remote()) == creator
        pool = cls(ray, router, name, owned=owned)
        if wait:
            pool.pids()
        if owned:
            # registered after Ray's own exit handler, so it runs first: the instances are released while Ray is up
            atexit.register(pool.close)
        return pool

    @classmethod
    def connect(cls, name: str = DEFAULT_NAME, *, address: str | None = None) -> ToolActors:
        """The pool called ``name`` of the current Ray job (started by another process of it)."""
        ray = _connect(address)
        try:
            router = ray.get_actor(name)
        except ValueError:
            raise ConfigError(f"no pool of tool actors called {name!r} in this Ray job", field="name") from None
        return cls(ray, router, name)

    def pids(self, timeout_s: float = START_TIMEOUT_S) -> list[int]:
        """The actors' process ids (waiting up to ``timeout_s`` for them to start)."""
        try:
            return self.ray.get(self.router.start.remote(), timeout=timeout_s)
        except self.ray.exceptions.GetTimeoutError:
            free = self.ray.available_resources().get("CPU", 0)
            raise ConfigError(f"the tool actors did not start within {timeout_s:g} s: the cluster has {free:g} CPU(s) "
                              "free; give fewer actors or a smaller num_cpus each", field="num_cpus") from None
        except self.ray.exceptions.RayError as error:
            cause = getattr(error, "cause", None) or error
            raise ConfigError(f"the tool actors could not start: {str(cause).strip().splitlines()[-1]}") from None

    def status(self) -> dict:
        return self.ray.get(self.router.status.remote())

    def __enter__(self) -> ToolActors:  # noqa: PYI034  # typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> int:
        """Release every instance the actors hold and end them (a pool joined by name is left to its starter);
        returns how many instances were released."""
        if self._closed or not self.owned:
            return 0
        self._closed = True
        released = 0
        if not self.ray.is_initialized():  # Ray shut down first: the actors went with it (and a call would start Ray)
            return released
        with contextlib.suppress(Exception):  # Ray shut down first: the actors went with it
            released = self.ray.get(self.router.close.remote(), timeout=30)
            self.ray.kill(self.router, no_restart=True)
        _POOLS.pop(self.name or "", None)
        return released

    # ------------------------------------------------------------------------------------------------ tools
    async def schemas(self) -> dict[str, dict]:
        """{tool id: OpenAI function schema (plus ``parallel_safe``, ``versions``)} of the pool's tools."""
        if self._schemas is None:
            try:
                self._schemas = await self.router.schemas.remote()
            except self.ray.exceptions.RayError as error:
                raise InfrastructureError(f"the tool actors' router is unreachable: {error}", kind="tool_server"
                                          ) from None
        return dict(self._schemas)

    def tool(self, tool_id: str, schema: dict | None = None, *, call_timeout_s: float | None = None) -> Any:
        """The pool's tool ``tool_id`` as a :class:`~bootcamp_core.Tool` (the tool server client's ``RemoteTool``,
        calling the actors instead of HTTP)."""
        from bootcamp_core.serve.client import RemoteTool

        tool = self._tools.get((tool_id, call_timeout_s))
        if tool is not None:
            return tool
        if schema is None and self._schemas is not None:
            schema = self._schemas.get(tool_id)
        if schema is None:
            schema = self.ray.get(self.router.schemas.remote()).get(tool_id)
        if schema is None:
            raise ConfigError(f"the tool actors do not serve {tool_id!r}", field="tool_id")
        function = schema.get("function", schema)
        cls = type(f"RayTool_{re.sub(r'[^0-9A-Za-z_]', '_', tool_id)}", (RemoteTool,), {
            "name": function["name"],
            "description": function.get("description", ""),
            "parameters": function.get("parameters") or {"type": "object", "properties": {}},
            "parallel_safe": bool(schema.get("parallel_safe", False)),
            "tool_id": tool_id,
            "versions": dict(schema.get("versions") or {}),
        })
        tool = self._tools[(tool_id, call_timeout_s)] = cls(client=self, call_timeout_s=call_timeout_s)
        return tool

    async def call(self, tool_id: str, action: str, payload: dict) -> dict:
        """One tool call as the tool server's API takes it; raises what its client raises."""
        from bootcamp_core.serve.common import ApiError

        try:
            return await self.answer(tool_id, action, payload)
        except ApiError as error:
            raise _error_of(error.kind, error.status, error.message) from None

    async def answer(self, tool_id: str, action: str, payload: dict) -> dict:
        """One tool call; an error is the :class:`~bootcamp_core.serve.common.ApiError` the tool server answers."""
        from bootcamp_core.serve.common import ApiError

        instance_id = payload.get("instance_id")
        if instance_id is not None and not isinstance(instance_id, str):
            raise ApiError(400, "bad_request", "instance_id must be a string")
        if action == "create":
            instance_id = payload["instance_id"] = instance_id or uuid.uuid4().hex
            return await self._create(tool_id, instance_id, payload)
        if not instance_id:
            raise ApiError(400, "bad_request", f"{action} needs an instance_id")
        route = self._routes.get(instance_id) or await self._ask("route", instance_id)
        if not route or "lost" in route:
            if action == "release":
                await self._ask("released", instance_id, tool_id)
                return {"released": False}
            if route:
                raise ApiError(503, "worker_dead", f"instance {instance_id}: {route['lost']}")
            raise ApiError(404, "unknown_instance",
                           f"unknown instance {instance_id!r} (never created, released, or reaped when idle)")
        try:
            answer = await route["actor"].call.remote(tool_id, action, payload)
        except self._lost_errors as error:
            await self._died(route, error)
            if action == "release":
                self._forget(instance_id, await self._ask("released", instance_id, tool_id))
                return {"released": False}  # its state died with the actor: nothing left to release
            raise ApiError(503, "worker_dead", f"instance {instance_id}: the tool actor (pid {route['pid']}) holding "
                           f"it died ({type(error).__name__}); the episode's tool state is lost") from None
        if action == "release":
            self._forget(instance_id, await self._ask("released", instance_id, tool_id))
        return _unwrap(answer)

    async def _create(self, tool_id: str, instance_id: str, payload: dict) -> dict:
        # a create that met a dead actor left nothing behind: place it again (the router replaced that actor)
        for _ in range(MAX_REPLACEMENTS + 1):
            route = await self._ask("place", instance_id, tool_id)
            try:
                answer = await route["actor"].call.remote(tool_id, "create", payload)
            except self._lost_errors as error:
                await self._died(route, error)
                continue
            if "error" in answer:
                self._forget(instance_id, await self._ask("released", instance_id, tool_id))
            else:
                self._routes[instance_id] = route
            return _unwrap(answer)
        from bootcamp_core.serve.common import ApiError

        raise ApiError(503, "no_worker", "no tool actor stayed alive to create the instance")

    async def _ask(self, method: str, *args: Any) -> Any:
        from bootcamp_core.serve.common import ApiError

        try:
            return await getattr(self.router, method).remote(*args)
        except self.ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            raise ApiError(503, "no_worker", str(cause or error).strip().splitlines()[-1]) from None
        except self.ray.exceptions.RayError as error:
            raise ApiError(503, "infrastructure", f"the tool actors' router is unreachable ({type(error).__name__})"
                           ) from None

    async def _died(self, route: dict, error: BaseException) -> None:
        with contextlib.suppress(Exception):  # the router may be going away too: the call fails either way
            await self.router.died.remote(route["slot"], route["generation"], type(error).__name__)
        for key in [key for key, value in self._routes.items()
                    if (value["slot"], value["generation"]) == (route["slot"], route["generation"])]:
            del self._routes[key]

    def _forget(self, instance_id: str, gone: bool) -> None:
        if gone:
            self._routes.pop(instance_id, None)


def _unwrap(answer: dict) -> dict:
    from bootcamp_core.serve.common import ApiError

    error = answer.get("error")
    if error is not None:
        raise ApiError(int(error.get("status", 500)), str(error.get("type", "")), str(error.get("message", "")))
    return answer["ok"]


def _connect(address: str | None) -> Any:
    """Ray, connected: the caller's connection when it has one, else to ``address`` (Ray's forms, see
    :func:`bootcamp_core.scale.cluster.connected`), kept for the process's life."""
    from bootcamp_core.scale.cluster import connected, import_ray

    ray = import_ray()
    if not ray.is_initialized():
        with _lock:
            if not ray.is_initialized():
                connection = connected(address or "")
                connection.__enter__()
                atexit.register(connection.__exit__, None, None, None)
    return ray


_lock = threading.Lock()


def select(tools: Mapping[str, Mapping] | None, bootcamps: list[str] | None) -> dict[str, dict]:
    """{tool id: constructor config} of what every actor serves: ``tools``, else the tools of ``bootcamps``, else
    of every installed bootcamp. Ids are resolved (a dotted class path names its id)."""
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    if tools:
        return {registry.resolve("tool", tool_id): dict(config or {}) for tool_id, config in tools.items()}
    namespaces = list(dict.fromkeys(bootcamps or registry.namespaces()))
    selection: dict[str, dict] = {}
    for namespace in namespaces:
        registry.namespace_plugin(namespace)  # unknown or broken: a clear error naming it
        selection.update({tool_id: {} for tool_id in registry.ids("tool", namespace=namespace)})
    if not selection:
        raise ConfigError(f"no tools to serve: bootcamp(s) {', '.join(namespaces) or '(none installed)'} register none")
    return selection


# ------------------------------------------------------------------------------------ the ``ray`` backend
_POOLS: dict[str, ToolActors] = {}

_ENTRY_KEYS = {"type", "name", "address", "actors", "concurrency", "num_cpus", "tools", "bootcamps", "tool_id",
               "call_timeout_s", "schema", "timeout_per_query_s", "idle_timeout_s"}


def pool_for(config: Mapping[str, Any]) -> ToolActors:
    """The pool a ``type: ray`` entry names, started in this Ray job by the first process that asks for it."""
    unknown = sorted(set(config) - _ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"a ray tool entry does not take {', '.join(unknown)}; it takes "
                          f"{', '.join(sorted(_ENTRY_KEYS))}", field=unknown[0])
    name = config.get("name") or DEFAULT_NAME
    if not isinstance(name, str):
        raise ConfigError(f"name must be a string, got {name!r}", field="name")
    pool = _POOLS.get(name)
    if pool is None:
        bootcamps = config.get("bootcamps")
        if bootcamps is not None and (not isinstance(bootcamps, list)
                                      or not all(isinstance(name, str) for name in bootcamps)):
            raise ConfigError(f"bootcamps must be a list of namespaces, got {bootcamps!r}", field="bootcamps")
        for key in ("actors", "concurrency"):
            if config.get(key) is not None and (not isinstance(config[key], int) or isinstance(config[key], bool)):
                raise ConfigError(f"{key} must be an integer, got {config[key]!r}", field=key)
        pool = _POOLS[name] = ToolActors.start(
            config.get("tools"), bootcamps=bootcamps, actors=config.get("actors"),
            concurrency=config.get("concurrency") or DEFAULT_CONCURRENCY, num_cpus=config.get("num_cpus"),
            name=name, address=config.get("address"), wait=False,
            timeout_per_query_s=float(config.get("timeout_per_query_s", 600.0)),
            idle_timeout_s=float(config.get("idle_timeout_s", 3600.0)))
    return pool


def tool(tool_id: str, config: Mapping[str, Any]) -> Any:
    """The tool a tool-config entry ``{type: ray, ...}`` names (see the module docstring)."""
    try:
        pool = pool_for(config)
    except ConfigError as error:
        raise ConfigError(f"tool {tool_id}: {error}", field=error.field) from None
    schema = config.get("schema")
    if schema is None:
        schema = _installed_schema(str(config.get("tool_id") or tool_id))
    return pool.tool(str(config.get("tool_id") or tool_id), schema, call_timeout_s=config.get("call_timeout_s"))



async def served_tools(config: Mapping[str, Any]) -> set[str]:
    """The tool ids the pool of ``config`` serves, once its actors have started."""
    pool = pool_for(config)
    return set(await pool.schemas())


async def close(config: Mapping[str, Any]) -> None:
    """Nothing to close per entry: the pool lives as long as this process (or until :meth:`ToolActors.close`)."""


def _installed_schema(tool_id: str) -> dict | None:
    from bootcamp_core.plugin.loader import get_registry

    try:
        cls = get_registry().get_class("tool", tool_id)
    except Exception:  # noqa: BLE001  # not installed here, or broken: the pool's own schema is asked instead
        return None
    return {**cls.openai_schema(), "parallel_safe": cls.parallel_safe}


# --------------------------------------------------------------------------------------- bootcamp serve --ray
class RayToolServer:
    """The tool server's HTTP API (``POST /tools/<id>/<action>``, ``GET /tools``, ``GET /health``) over a pool."""

    def __init__(self, pool: ToolActors, *, token: str | None, max_body_bytes: int) -> None:
        self.pool, self.token, self.max_body_bytes = pool, token, max_body_bytes

    async def tool_call(self, path: str, body: bytes) -> tuple[int, bytes]:
        from bootcamp_core.serve.common import ACTIONS, ApiError, dumps, parse_object
        from bootcamp_core.serve.http import split_tool_path

        namespace, name, action = split_tool_path(path)
        if action not in ACTIONS:
            raise ApiError(404, "not_found", f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        tool_id = f"{namespace}/{name}"
        schemas = await self._schemas()
        if tool_id not in schemas:
            raise ApiError(404, "unknown_tool", f"the tool actors do not serve tool {tool_id!r}; they serve: "
                           f"{', '.join(sorted(schemas)) or 'none'}")
        return 200, dumps(await self.pool.answer(tool_id, action, parse_object(body)))

    async def _schemas(self) -> dict[str, dict]:
        from bootcamp_core.serve.common import ApiError

        try:
            return await self.pool.schemas()
        except InfrastructureError as error:
            raise ApiError(503, "infrastructure", str(error)) from None

    async def tools(self, request: Any) -> Any:
        from bootcamp_core.serve.common import ApiError, json_response, require_token

        try:
            require_token(request, self.token)
            return json_response({"tools": dict(sorted((await self._schemas()).items()))})
        except ApiError as error:
            return error.response()

    async def health(self, request: Any) -> Any:
        from bootcamp_core.serve.common import json_response

        status = await self.pool.router.status.remote()
        return json_response({"status": "ok", "role": "ray", "ready": status["live_workers"] > 0,
                              "expected_workers": len(status["actors"]), **status})

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        from bootcamp_core.serve.http import tool_route

        status = Starlette(routes=[Route("/tools", self.tools, methods=["GET"]),
                                   Route("/health", self.health, methods=["GET"])])
        return tool_route(status, self.tool_call, token=self.token, max_body_bytes=self.max_body_bytes)


def serve_on_ray(config: Any, *, address: str | None = "", actors: int | None = None,
                 concurrency: int = DEFAULT_CONCURRENCY, registry: Any = None) -> int:
    """``bootcamp serve --ray``: the tools ``config`` (a :class:`~bootcamp_core.serve.ServeConfig`) selects, in a
    pool of tool actors on Ray, behind the tool server's HTTP API, in the foreground until Ctrl-C or SIGTERM."""
    import signal

    import uvicorn

    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.scale.cluster import connected
    from bootcamp_core.serve.common import check_bind
    from bootcamp_core.serve.launch import select_tools, url_of, write_remote_tool_config

    token = config.resolved_token
    check_bind(config.host, token)
    selection = select_tools(config, registry or get_registry())
    with connected(address) as _ray:
        pool = ToolActors.start(selection, actors=actors, concurrency=concurrency,
                                timeout_per_query_s=config.timeout_per_query_s, idle_timeout_s=config.idle_timeout_s)
        try:
            server = RayToolServer(pool, token=token, max_body_bytes=config.max_body_bytes)
            port = 8000 if config.port is None else config.port
            uvicorn_server = uvicorn.Server(uvicorn.Config(
                server.app(), host=config.host, port=port, loop="asyncio", log_level="warning", lifespan="off",
                access_log=config.access_log, timeout_graceful_shutdown=3, server_header=False))
            pids = pool.pids()

            async def run() -> None:
                task = asyncio.ensure_future(uvicorn_server.serve())
                while not uvicorn_server.started and not task.done():
                    await asyncio.sleep(0.05)
                if uvicorn_server.started:
                    bound = uvicorn_server.servers[0].sockets[0].getsockname()[1]
                    url = url_of(config.host, bound)
                    if config.write_tool_config is not None:
                        write_remote_tool_config(config.write_tool_config, url, await pool.schemas())
                    logger.warning("serving %d tool(s) on %s from %d Ray actor(s) (pids %s)", len(selection), url,
                                   len(pids), ", ".join(map(str, pids)))
                await task

            with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
                signal.signal(signal.SIGTERM, lambda signum, frame: setattr(uvicorn_server, "should_exit", True))
            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(run())
        finally:
            pool.close()
    return 0
