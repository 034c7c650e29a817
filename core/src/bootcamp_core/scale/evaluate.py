"""``bootcamp eval --ray``: episodes run in a pool of Ray actors; the driver writes the results as a local run does.

The driver keeps all of a local run (:mod:`bootcamp_core.evaluate.run`): selection, resume, the crash-safe
``results.jsonl``, re-runs, summary, report and exit status. It hands each episode to the least-loaded actor of the
pool; each actor builds the policy and the bootcamps' components itself and runs the rollout engine on at most
``concurrency`` episodes at once, tools included, and sends the episode's result back.

Secrets (the API key, extra-header values, a tool server's token) reach the actors as constructor arguments only:
never through environment variables or ``runtime_env``, which Ray logs and shows on its dashboard. In the actors,
log records are masked as on the driver.

A worker process or node that dies takes its actor's episodes in flight with it: each is run again on the
least-loaded actor (Ray restarts the lost one in a new process), counted in ``this_run["reruns"]``, up to
:data:`MAX_LOSSES` times an episode; after that it is an infrastructure failure, which the run's own re-runs and
resume treat as any other. The driver writes an episode's line once, when its result comes back, so none is lost or
written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import attrs

from bootcamp_core.plugin.errors import ConfigError, InfrastructureError
from bootcamp_core.scale.cluster import cluster_cpus

logger = logging.getLogger("bootcamp_core")

#: How many times one episode is run again after the worker running it was lost.
MAX_LOSSES = 3


class EpisodeWorker:
    """In a Ray actor: one evaluation's policy and components, running its episodes with the rollout engine."""

    def __init__(self, config: Any, components: dict, evaluation_config: dict, secrets: list[str],
                 concurrency: int) -> None:
        from bootcamp_core.episode.policies import make_policy
        from bootcamp_core.episode.retries import RetryPolicy
        from bootcamp_core.evaluate.secrets import MaskedLogs, Redactor
        from bootcamp_core.plugin.loader import get_registry

        # for the actor's whole life: no log line of the engine, the retries or a plugin shows a secret
        MaskedLogs(Redactor(secrets)).__enter__()
        self.registry = get_registry()
        self.config, self.components, self.evaluation_config = config, components, evaluation_config
        retry = config.retry or RetryPolicy(budget_s=config.retry_budget_s, base_s=config.retry_backoff_s)
        self.policy = make_policy(
            config.policy, api_url=config.api_url, api_key=config.api_key, api_model=config.api_model,
            extra_headers=config.api_extra_headers, extra_params=config.api_extra_params, registry=self.registry,
            retry=retry, request_timeout_s=config.request_timeout_s, max_concurrency=concurrency,
            return_token_ids=config.return_token_ids)
        self.concurrency = concurrency

    async def ready(self) -> int:
        """The actor's process id, once it is built."""
        return os.getpid()

    async def run(self, record: dict, repeat: int, key: str | None, limits: Any) -> tuple[int, Any]:
        """(this process's id, the episode's :class:`~bootcamp_core.data.records.EpisodeResult`)."""
        from bootcamp_core.episode.engine import run_episode

        result = await run_episode(
            record, self.policy, registry=self.registry, limits=limits, system_prompt=self.config.system_prompt,
            verify_kwargs=dict(self.config.verify_kwargs), component_config=self.components, repeat=repeat,
            evaluation_config=self.evaluation_config, episode_key=key)
        return os.getpid(), result

    async def stats(self) -> dict:
        """The policy's retries since the actor started, and the lowest concurrency its endpoint allowed."""
        retries = getattr(self.policy, "retry_stats", None)
        concurrency = getattr(self.policy, "concurrency", None)
        return {"retries": retries.to_dict() if retries is not None else None,
                "lowest_concurrency": min(concurrency.lowest, self.concurrency) if concurrency is not None
                else self.concurrency}


def _lost_worker_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors for a call whose actor, worker process or node died (not the episode's own failure)."""
    names = ("RayActorError", "ActorUnavailableError", "WorkerCrashedError", "ObjectLostError", "NodeDiedError")
    return tuple(getattr(ray.exceptions, name) for name in names if hasattr(ray.exceptions, name))


class RayEpisodes:
    """Runs an evaluation's episodes on Ray: ``evaluate(config, runner=RayEpisodes(ray))`` (see the module docstring).

    ``actors`` defaults to the cluster's CPUs, ``concurrency`` (episodes at once per actor) to ``max_concurrent``
    shared among them. After the run, ``worker_pids`` holds the processes whose episodes were written and
    ``lost`` the episodes that were in flight on a lost worker."""

    def __init__(self, ray: Any, *, actors: int | None = None, concurrency: int | None = None,
                 max_losses: int = MAX_LOSSES) -> None:
        if actors is not None and actors < 1:
            raise ConfigError(f"--ray-actors must be at least 1, got {actors}")
        if concurrency is not None and concurrency < 1:
            raise ConfigError(f"--ray-concurrency must be at least 1, got {concurrency}")
        self.ray = ray
        self.actors, self.concurrency, self.max_losses = actors, concurrency, max_losses
        self.worker_pids: set[int] = set()
        #: the actors' processes as they started (the first incarnation of each)
        self.actor_pids: list[int] = []
        self.lost = 0
        self.reruns = 0
        self._pool: list[Any] = []
        self._load: list[int] = []
        #: actors whose worker was lost, not taking episodes until Ray has restarted them
        self._down: set[int] = set()
        self._recovering: set[asyncio.Task] = set()

    async def start(self, config: Any, components: dict, evaluation_config: dict) -> int:
        """Start the actors; returns how many episodes the pool runs at once."""
        from bootcamp_core.evaluate.secrets import config_secrets

        ray = self.ray
        cpus = cluster_cpus(ray)
        self.actors = self.actors or cpus
        self.concurrency = self.concurrency or max(1, -(-config.max_concurrent // self.actors))
        # the key is resolved here: the actors' environment is the cluster's, not this command's
        key = config.api_key if config.api_key is not None else os.environ.get("OPENAI_API_KEY")
        config = attrs.evolve(config, api_key=key)
        components = {tool_id: _with_token(entry) for tool_id, entry in components.items()}
        secrets = [*config.secrets(), *config_secrets(components)]
        worker = ray.remote(EpisodeWorker).options(
            # more actors than CPUs share them: an episode mostly waits on the endpoint
            num_cpus=min(1.0, cpus / self.actors), max_concurrency=self.concurrency,
            max_restarts=-1, max_task_retries=0)
        self._pool = [worker.remote(config, components, evaluation_config, secrets, self.concurrency)
                      for _ in range(self.actors)]
        self._load = [0] * self.actors
        try:
            self.actor_pids = list(await asyncio.gather(*(actor.ready.remote() for actor in self._pool)))
        except ray.exceptions.RayError as error:
            self.close()
            cause = getattr(error, "cause", None) or error
            raise ConfigError(f"the Ray actors could not start: {str(cause).strip().splitlines()[-1]}") from None
        logger.info("ray: %d actors, %d episodes at once each", self.actors, self.concurrency)
        return self.actors * self.concurrency

    async def run(self, record: dict, repeat: int, key: str | None, limits: Any) -> Any:
        """One episode on the least-loaded actor; again on another when its worker is lost (see the module doc)."""
        ray = self.ray
        lost_errors = _lost_worker_errors(ray)
        for attempt in range(self.max_losses + 1):
            while self._pool and len(self._down) == len(self._pool):  # all restarting: wait for the first back
                await asyncio.sleep(0.05)
            if not self._pool:
                raise InfrastructureError("the Ray actors are gone: the run was stopped", kind="infrastructure")
            index = min((number for number in range(len(self._pool)) if number not in self._down),
                        key=self._load.__getitem__)
            self._load[index] += 1
            try:
                pid, result = await self._pool[index].run.remote(record, repeat, key, limits)
            except lost_errors as error:
                self.lost += 1
                if index not in self._down:
                    self._down.add(index)
                    task = asyncio.get_running_loop().create_task(self._recover(index))
                    self._recovering.add(task)
                    task.add_done_callback(self._recovering.discard)
                logger.warning("ray: a worker was lost during an episode (%s)%s", type(error).__name__,
                               "; running it again" if attempt < self.max_losses else "")
                if attempt < self.max_losses:
                    self.reruns += 1
                continue
            except ray.exceptions.RayTaskError as error:
                cause = getattr(error, "cause", None)
                if isinstance(cause, Exception):  # the local run's own handling of an episode that raised
                    raise cause from None
                raise
            finally:
                self._load[index] -= 1
            self.worker_pids.add(pid)
            return result
        raise InfrastructureError(f"the Ray worker running this episode was lost {self.max_losses + 1} times",
                                  kind="infrastructure")

    async def _recover(self, index: int) -> None:
        """Take actor ``index`` back into the pool once Ray has restarted it in a new process."""
        lost_errors = _lost_worker_errors(self.ray)
        actor = self._pool[index]
        while True:
            try:
                await actor.ready.remote()
            except lost_errors:
                await asyncio.sleep(0.2)
                continue
            if index < len(self._pool) and self._pool[index] is actor:
                self._down.discard(index)
            return

    async def finish(self) -> dict:
        """What ``this_run`` reports of the workers: their retries, the re-runs after a lost worker, the pool."""
        totals: dict[str, Any] = {"retries": 0, "waiting_s": 0.0, "retries_by_kind": {}}
        lowest = 0
        stats = await asyncio.gather(*(actor.stats.remote() for actor in self._pool), return_exceptions=True)
        for entry in stats:
            if isinstance(entry, BaseException):  # an actor lost at the end: its counts are gone with it
                continue
            lowest += entry["lowest_concurrency"]
            retries = entry["retries"]
            if retries:
                totals["retries"] += retries["retries"]
                totals["waiting_s"] = round(totals["waiting_s"] + retries["waiting_s"], 3)
                for kind, count in retries["retries_by_kind"].items():
                    totals["retries_by_kind"][kind] = totals["retries_by_kind"].get(kind, 0) + count
        return {**totals, "reruns": self.reruns, "lowest_concurrency": lowest or self.actors * self.concurrency,
                "ray": {"actors": self.actors, "concurrency_per_actor": self.concurrency,
                        "worker_processes": len(self.worker_pids), "episodes_on_a_lost_worker": self.lost}}

    def close(self) -> None:
        """Remove the actors (a run's end, or its failure)."""
        for task in list(self._recovering):
            task.cancel()
        for actor in self._pool:
            with contextlib.suppress(self.ray.exceptions.RayError, ValueError):  # already gone
                self.ray.kill(actor, no_restart=True)
        self._pool, self._load, self._down = [], [], set()


def _with_token(entry: dict) -> dict:
    """A tool-server entry with this command's token (``$BOOTCAMP_TOKEN``) in it: the actors' environment lacks it."""
    if entry.get("type") != "remote" or entry.get("token"):
        return entry
    token = os.environ.get("BOOTCAMP_TOKEN")
    return {**entry, "token": token} if token else entry
