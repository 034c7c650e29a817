"""The verl ``BaseTool`` adapter: any bootcamp tool (installed, or on a ``bootcamp serve`` tool server) inside verl.

verl 0.9's ``ToolAgentLoop`` calls ``create`` -> ``execute`` -> ``release`` for every single tool call, with no
instance id, and never calls ``calc_reward``; a bootcamp tool keeps state for a whole episode. The adapter keeps one
bootcamp instance per trajectory across those calls:

- the trajectory is verl's ``AgentData`` object, which every ``execute`` receives as ``agent_data``; its instance
  id is stored on it (:data:`INSTANCE_ATTRIBUTE`), so every tool of the trajectory shares one id (DESIGN.md);
- under :class:`bootcamp_verl.agent_loop.BootcampAgentLoop` the loop opens the episode with the identity, asks
  ``calc_reward`` at the end and releases it (:meth:`BootcampTool.open_episode` / :meth:`episode_reward` /
  :meth:`close_episode`);
- under verl's stock loop, which never says when a trajectory ends, the instance is made on the first call and
  released once its ``AgentData`` is gone or it has been idle for ``idle_timeout_s`` (checked at most every few
  seconds during calls, or by :meth:`reap_idle`);
- verl's older lifecycle (``create(instance_id, **create_kwargs)`` once per trajectory, then ``release``) works too.
- calls on one trajectory's instance of a tool that is not ``parallel_safe`` run one at a time, in call order (verl's
  stock loop runs a turn's calls concurrently).

Tool config entry (``tool_config.yaml``, written by ``bootcamp verl export``)::

    - class_name: bootcamp_verl.tool.BootcampTool
      config:
        type: native                  # the only type verl 0.9's loader accepts
        tool_id: example/calculator   # the bootcamp tool's id
        tool_config: {}               # its constructor config (optional)
        json_parameters: []           # parameters the model passes as JSON text (see bootcamp_verl.schemas)
        url: http://host:8000         # optional: the tool runs on this tool server (token: BOOTCAMP_TOKEN)
        ray_tools: {name: ..., tools: {<tool id>: <constructor config>}, actors: N}
                                      # optional: the tool runs on tool actors in verl's own Ray job
                                      #   (bootcamp_core.scale.tools; written by export --ray-tools)
        idle_timeout_s: 1800          # optional: stock-loop instances unused this long are released
        tool_timeout_s: 60            # optional: one call's limit, as ``bootcamp eval --tool-timeout``; a served
                                      #   tool's server stops the call at the same limit
        parallel_safe: false          # served tools: the server's parallel_safe (export writes it)
      tool_schema: {type: function, function: {name: ..., description: ..., parameters: ...}}

Errors read like ``bootcamp eval``'s: a raising, slow or misused tool answers ``Error: ...`` (the model's mistake);
an :class:`~bootcamp_core.InfrastructureError` (a tool server down) is recorded on the trajectory
(:data:`FAILURE_ATTRIBUTE`) and raised.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import time
import uuid
import weakref
from typing import Any

import attrs
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.utils.rollout_trace import rollout_trace_op

from bootcamp_core import ConfigError, InfrastructureError, ModelError, execute_tool, normalize_record
from bootcamp_verl.schemas import decode_json_parameters, verl_schema

__all__ = ["FAILURE_ATTRIBUTE", "INSTANCE_ATTRIBUTE", "BootcampTool", "identity_from"]

logger = logging.getLogger("bootcamp_verl")

#: Attribute of verl's ``AgentData`` holding the trajectory's bootcamp instance id.
INSTANCE_ATTRIBUTE = "bootcamp_instance_id"
#: Attribute of verl's ``AgentData`` set to the message of an infrastructure failure.
FAILURE_ATTRIBUTE = "bootcamp_infrastructure_error"
DEFAULT_IDLE_TIMEOUT_S = 1800.0
DEFAULT_TOOL_TIMEOUT_S = 60.0
#: Idle instances are looked for at most this often (and never more often than half the idle timeout).
SWEEP_INTERVAL_S = 5.0
REMEMBERED_REAPED = 4096
# ids: a random prefix per process and a counter (a uuid4 per call costs a system call)
_ID_PREFIX = uuid.uuid4().hex[:16]
_id_numbers = itertools.count()


def identity_from(create_kwargs: Any) -> dict:
    """The identity in a record's ``create_kwargs``: an object or its JSON text (Parquet), nested or not."""
    if not isinstance(create_kwargs, dict):
        return {}
    inner = create_kwargs.get("create_kwargs")
    if isinstance(inner, dict) and "identity" in inner:  # verl 0.9 passes create(create_kwargs={...})
        create_kwargs = inner
    record = normalize_record({"extra_info": {"tools_kwargs": {"_": {"create_kwargs": dict(create_kwargs)}}}})
    identity = record["extra_info"]["tools_kwargs"]["_"]["create_kwargs"].get("identity")
    return identity if isinstance(identity, dict) else {}


@attrs.define
class _Episode:
    """One trajectory's bootcamp instance of this tool."""

    instance_id: str
    #: opened by our agent loop, which also releases it: never reaped
    managed: bool
    #: the trajectory's AgentData (stock loop), or None
    owner: Any = None
    last_used: float = attrs.field(factory=time.monotonic)
    #: done once the bootcamp tool's create returned (a failed create removes the episode)
    opened: asyncio.Future | None = None


class BootcampTool(BaseTool):
    """A verl tool that serves one bootcamp tool, one bootcamp instance per trajectory."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        # BaseTool.__init__ sets config, tool_schema and name, and prints the schema once per tool per worker
        # (verl issue #5567); the same three attributes are set here without the print.
        config = dict(config or {})
        tool_id = config.get("tool_id")
        if not isinstance(tool_id, str) or not tool_id:
            # the keys only: a config may hold a token
            raise ConfigError(f"{type(self).__name__}: the tool config needs tool_id (a bootcamp tool id); it has "
                              f"{', '.join(sorted(map(str, config))) or 'nothing'}")
        self.config = config
        self.tool_id = tool_id
        self.tool_timeout_s = float(config.get("tool_timeout_s", DEFAULT_TOOL_TIMEOUT_S))
        self.tool = self._bootcamp_tool(tool_id, config, tool_schema, self.tool_timeout_s)
        if tool_schema is None:
            tool_schema = OpenAIFunctionToolSchema.model_validate(
                verl_schema(tool_id, type(self.tool).openai_schema()["function"]).schema
            )
        self.tool_schema = tool_schema
        self.name = tool_schema.function.name
        if self.name != self.tool.name:
            raise ConfigError(
                f"tool {tool_id} is named {self.tool.name!r}, but its tool_schema says {self.name!r}: records "
                "address tools by that name, so they must agree. Export the dataset again."
            )
        self.json_parameters = frozenset(config.get("json_parameters") or ())
        self.idle_timeout_s = float(config.get("idle_timeout_s", DEFAULT_IDLE_TIMEOUT_S))
        if not (self.idle_timeout_s > 0 and self.tool_timeout_s > 0):
            raise ConfigError(f"tool {tool_id}: idle_timeout_s and tool_timeout_s must be positive")
        self.parallel_safe = bool(getattr(self.tool, "parallel_safe", False))
        #: per trajectory instance: calls of a tool that is not parallel_safe run one at a time (verl's stock loop
        #: runs the calls of one turn concurrently)
        self._locks: dict[str, asyncio.Lock] = {}
        self._episodes: dict[str, _Episode] = {}
        self._calls: dict[str, dict] = {}  # per-call handle (verl 0.9) -> the create kwargs of that call
        #: ids released as idle, newest last (bounded), to warn when such a trajectory comes back
        self._reaped: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._next_sweep = time.monotonic() + self._sweep_interval()

    @staticmethod
    def _bootcamp_tool(tool_id: str, config: dict, tool_schema: OpenAIFunctionToolSchema | None,
                       call_timeout_s: float) -> Any:
        if config.get("ray_tools") is not None:
            return BootcampTool._ray_tool(tool_id, config, tool_schema, call_timeout_s)
        if config.get("url") or config.get("type") == "remote":
            from bootcamp_core import tool_server_client

            if not config.get("url"):
                raise ConfigError(f"tool {tool_id}: a remote tool needs url (the tool server)")
            if config.get("tool_config"):
                raise ConfigError(f"tool {tool_id}: a served tool is built by its server; give its constructor "
                                  "config to `bootcamp serve --tool-config`, not tool_config here")
            schema = None
            if tool_schema is not None:  # a server of another machine need not have the tool installed here
                schema = {**tool_schema.model_dump(), "parallel_safe": bool(config.get("parallel_safe", False))}
            # the server stops a call at the same limit as the adapter (it would otherwise run on)
            return tool_server_client(config["url"], config.get("token")).tool(tool_id, schema,
                                                                               call_timeout_s=call_timeout_s)
        from bootcamp_core import get_registry

        return get_registry().component("tool", tool_id, config.get("tool_config") or None)

    @staticmethod
    def _ray_tool(tool_id: str, config: dict, tool_schema: OpenAIFunctionToolSchema | None,
                  call_timeout_s: float) -> Any:
        """The tool on the pool of tool actors in verl's own Ray job (``bootcamp verl export --ray-tools``): the
        first adapter to ask starts the pool, every agent-loop worker's adapter uses it, and it ends with the job."""
        ray_tools = config["ray_tools"]
        if not isinstance(ray_tools, dict):
            raise ConfigError(f"tool {tool_id}: ray_tools must be a mapping (name, tools, actors, concurrency), got "
                              f"{type(ray_tools).__name__}")
        if config.get("url") or config.get("tool_config"):
            raise ConfigError(f"tool {tool_id}: a tool on Ray actors takes its constructor config from "
                              "ray_tools.tools; give neither url nor tool_config")
        from bootcamp_core import tool_backend

        entry = {**ray_tools, "type": "ray", "call_timeout_s": call_timeout_s}
        if tool_schema is not None:
            entry["schema"] = {**tool_schema.model_dump(), "parallel_safe": bool(config.get("parallel_safe", False))}
        return tool_backend("ray").tool(tool_id, entry)

    def _sweep_interval(self) -> float:
        return min(SWEEP_INTERVAL_S, self.idle_timeout_s / 2)

    # ---------------------------------------------------------------------------------- episodes (our loop)
    async def open_episode(self, instance_id: str, identity: dict) -> None:
        """Start the trajectory ``instance_id`` with its identity; it lives until :meth:`close_episode`."""
        await self._open(instance_id, identity, managed=True)

    async def episode_reward(self, instance_id: str) -> float:
        """The bootcamp tool's ``calc_reward`` for the trajectory."""
        return float(await self.tool.calc_reward(instance_id))

    async def close_episode(self, instance_id: str) -> None:
        """Release the trajectory's instance (safe to call twice)."""
        episode = self._episodes.pop(instance_id, None)
        self._locks.pop(instance_id, None)
        if episode is not None:
            await self.tool.release(instance_id)

    @property
    def open_instances(self) -> list[str]:
        """Instance ids this adapter holds open."""
        return list(self._episodes)

    async def reap_idle(self, now: float | None = None) -> list[str]:
        """Release stock-loop instances whose trajectory is gone or idle past ``idle_timeout_s``; returns their ids.

        ``now`` is a ``time.monotonic()`` reading (default: the current one).
        """
        now = time.monotonic() if now is None else now
        self._next_sweep = now + self._sweep_interval()
        stale = [
            episode.instance_id for episode in self._episodes.values()
            if not episode.managed and episode.opened is not None and episode.opened.done()
            and ((episode.owner is not None and episode.owner() is None) or now - episode.last_used > self.idle_timeout_s)
        ]
        for instance_id in stale:
            self._episodes.pop(instance_id, None)
            self._locks.pop(instance_id, None)
            self._reaped[instance_id] = None
            while len(self._reaped) > REMEMBERED_REAPED:
                self._reaped.popitem(last=False)
            try:
                await self.tool.release(instance_id)
            except Exception as error:  # a failed release must not fail the call that happened to sweep
                logger.warning("releasing %s of %s failed: %s: %s", instance_id, self.tool_id, type(error).__name__,
                               error)
        if stale:
            logger.info("%s: released %d idle instance(s)", self.tool_id, len(stale))
        return stale

    async def _open(self, instance_id: str, identity: dict, *, managed: bool, owner: Any = None) -> _Episode:
        episode = self._episodes.get(instance_id)
        if episode is None:
            episode = self._episodes[instance_id] = _Episode(instance_id, managed, owner)
            episode.opened = asyncio.get_running_loop().create_future()
            try:
                await self.tool.create(instance_id, identity=identity)
            except BaseException as error:
                self._episodes.pop(instance_id, None)
                if isinstance(error, asyncio.CancelledError):
                    episode.opened.cancel()
                else:
                    episode.opened.set_exception(error)
                    episode.opened.exception()  # retrieved here, so an unawaited failure is never logged as lost
                raise
            episode.opened.set_result(None)
        elif not episode.opened.done():  # a concurrent call of the same trajectory is creating it
            await asyncio.shield(episode.opened)
        episode.last_used = time.monotonic()
        return episode

    async def _maybe_sweep(self) -> None:
        if time.monotonic() >= self._next_sweep:
            await self.reap_idle()

    # --------------------------------------------------------------------------------------- verl's BaseTool
    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        """verl 0.9 (no ``instance_id``): a handle for one call. Older verl: start the trajectory ``instance_id``."""
        await self._maybe_sweep()
        if instance_id is None:
            handle = f"{_ID_PREFIX}{next(_id_numbers):x}"
            self._calls[handle] = kwargs
            return handle, ToolResponse()
        await self._open(instance_id, identity_from(kwargs), managed=False)
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        """Run one call on the trajectory's instance: (text, step reward, metrics), errors as ``Error: ...`` text."""
        agent_data = kwargs.get("agent_data")
        call_kwargs = self._calls.get(instance_id)
        if call_kwargs is not None:  # verl 0.9: a handle of one call; the trajectory is agent_data
            instance_id = await self._trajectory_instance(instance_id, call_kwargs, agent_data)
        episode = self._episodes.get(instance_id)
        if episode is None:
            raise KeyError(f"{self.tool_id}: no open instance {instance_id!r}; call create first")
        episode.last_used = time.monotonic()
        if self.parallel_safe:
            text, reward, metrics = await self._run(instance_id, parameters, agent_data)
        else:
            lock = self._locks.get(instance_id)
            if lock is None:
                lock = self._locks[instance_id] = asyncio.Lock()
            async with lock:  # waiters get it in call order
                text, reward, metrics = await self._run(instance_id, parameters, agent_data)
        episode.last_used = time.monotonic()
        return ToolResponse(text=text), reward, metrics

    async def _trajectory_instance(self, handle: str, call_kwargs: dict, agent_data: Any) -> str:
        """The instance id of the trajectory a call belongs to, opened on its first call."""
        if agent_data is None:  # nothing says which trajectory: the instance lives for this call only
            instance_id, owner = handle, None
        else:
            instance_id = getattr(agent_data, INSTANCE_ATTRIBUTE, None)
            if instance_id is None:
                instance_id = f"{_ID_PREFIX}t{next(_id_numbers):x}"
                setattr(agent_data, INSTANCE_ATTRIBUTE, instance_id)
            owner = weakref.ref(agent_data)
        episode = self._episodes.get(instance_id)
        if episode is None:
            if instance_id in self._reaped:
                logger.warning("%s: instance %s was released as idle while its trajectory still ran; it starts over. "
                               "Raise idle_timeout_s in the tool config.", self.tool_id, instance_id)
            identity = identity_from(call_kwargs) or self._identity_of(agent_data)
            await self._open(instance_id, identity, managed=False, owner=owner)
        elif episode.opened is not None and not episode.opened.done():
            await asyncio.shield(episode.opened)  # a parallel call of this trajectory is creating it (remote: HTTP)
        return instance_id

    def _identity_of(self, agent_data: Any) -> dict:
        tools_kwargs = getattr(agent_data, "tools_kwargs", None) or {}
        return identity_from(tools_kwargs.get(self.name) or {})

    async def _run(self, instance_id: str, parameters: Any, agent_data: Any) -> tuple[str, float, dict]:
        """The call as ``bootcamp eval`` runs it (:func:`bootcamp_core.execute_tool`): the model's mistakes become
        ``Error:`` text and the episode goes on; an infrastructure failure is recorded on the trajectory."""
        try:
            if isinstance(parameters, dict):
                try:
                    parameters = decode_json_parameters(parameters, self.json_parameters)
                except ValueError as error:
                    raise ModelError(f"{self.name}: {error}") from None
            return await execute_tool(self.tool, instance_id, parameters, timeout_s=self.tool_timeout_s,
                                      name=self.name)
        except ModelError as error:
            return f"Error: {error}", 0.0, {}
        except InfrastructureError as error:
            if agent_data is not None:
                setattr(agent_data, FAILURE_ATTRIBUTE, f"{self.tool_id}: {error}")
            raise

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """``calc_reward`` of the trajectory the id (or a call handle's trajectory) belongs to."""
        agent_data = kwargs.get("agent_data")
        if instance_id in self._calls and agent_data is not None:
            instance_id = getattr(agent_data, INSTANCE_ATTRIBUTE, instance_id)
        return await self.episode_reward(instance_id)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """verl 0.9: the end of one call (the trajectory's instance lives on). Older verl: end the trajectory."""
        if self._calls.pop(instance_id, None) is not None:
            if instance_id in self._episodes:  # a call without agent_data: its instance lived for that call
                await self.close_episode(instance_id)
            return
        episode = self._episodes.get(instance_id)
        if episode is not None and not episode.managed:
            await self.close_episode(instance_id)
