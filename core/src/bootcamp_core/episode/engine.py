"""The rollout engine: one episode of a policy with a record's tools, interaction and reward.

:func:`run_episode` is the documented entry point every runner shares (``bootcamp eval``, scripts, the demo)::

    import anyio
    from bootcamp_core.episode.policies import ReferencePolicy
    from bootcamp_core.episode.engine import run_episode

    result = anyio.run(run_episode, record, ReferencePolicy())
    print(result.score, result.finish_reason, len(result.messages))

Semantics (DESIGN.md): one instance id per episode shared by every tool and the interaction; tools are created once,
asked for ``calc_reward`` at the end and always released, the interaction always finalized; calls of one assistant
turn run concurrently only when every tool called is ``parallel_safe``; the reward sees the last assistant message's
content plus ``messages``, ``tool_rewards``, ``tool_scores``, ``turn_scores`` and the user's verify kwargs.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import itertools
import json
import logging
import marshal
import random
import threading
import time
import uuid
import weakref
from datetime import datetime, timezone
from typing import Any, Protocol

import anyio
import attrs

from bootcamp_core.__about__ import __version__
from bootcamp_core.plugin.errors import InfrastructureError, ModelError, UnknownIdError
from bootcamp_core.plugin.loader import Registry, get_registry
from bootcamp_core.data.records import EpisodeResult, GeneratedSample, ToolCall, normalize_record

__all__ = ["RolloutLimits", "PolicyTurn", "Policy", "episode_id", "run_episode", "FINISH_REASONS"]

logger = logging.getLogger("bootcamp_core.episode.engine")

FINISH_REASONS = (
    "answered", "terminated", "max_assistant_turns", "max_user_turns", "episode_timeout", "error", "cancelled",
)

_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")

#: Cleanup (release, finalize) of one episode may take this long before it is abandoned, so a hung plugin cannot
#: hold an evaluation forever.
CLEANUP_TIMEOUT_S = 30.0


@attrs.frozen(kw_only=True)
class RolloutLimits:
    """Bounds of one episode. Every tool message and every interaction reply counts as a user turn (as originally).

    The turn limits are checked between turns, never inside one: every tool call of an assistant turn is answered
    (the model needs a reply for every ``tool_call_id``), so ``user_turns`` may end above ``max_user_turns`` by the
    calls of the last turn; the episode then ends with ``finish_reason`` ``"max_user_turns"``.
    ``tool_timeout_s`` bounds each tool call on its own; ``episode_timeout_s`` the whole episode, cleanup excluded.
    """

    max_assistant_turns: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    max_user_turns: int = attrs.field(default=20, validator=attrs.validators.ge(1))
    tool_timeout_s: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    episode_timeout_s: float = attrs.field(default=600.0, validator=attrs.validators.gt(0))


@attrs.frozen(kw_only=True)
class PolicyTurn:
    """One assistant turn: the OpenAI-format message and its token usage (missing counts are 0)."""

    message: dict
    usage: dict = attrs.field(factory=dict)


class Policy(Protocol):
    async def __call__(
        self, messages: list[dict], tools: list[dict], record: GeneratedSample, rng: random.Random
    ) -> PolicyTurn:
        """The next assistant turn; raises :class:`InfrastructureError` when the endpoint keeps failing."""
        ...


def episode_id(record: dict | GeneratedSample, repeat: int) -> str:
    """The resume key: sha256 of the whole record's canonical JSON (identities as objects), then ``:<repeat>``."""
    if isinstance(record, GeneratedSample):
        record = record.to_record()
    elif _needs_normalizing(record):  # only then a copy: hashing must not rewrite the caller's record
        record = normalize_record(_copy(record))
    return _episode_id(record, repeat)


def _is_text(value: Any) -> bool:
    return isinstance(value, (str, bytes))


def _needs_normalizing(record: dict) -> bool:
    """Whether :func:`normalize_record` would change ``record`` (an identity stored as JSON text, as in parquet)."""
    reward_model = record.get("reward_model")
    if isinstance(reward_model, dict) and _is_text(reward_model.get("ground_truth")):
        return True
    extra = record.get("extra_info")
    if not isinstance(extra, dict):
        return False
    for kwargs in (extra.get("tools_kwargs") or {}).values():
        create = kwargs.get("create_kwargs") if isinstance(kwargs, dict) else None
        if isinstance(create, dict) and _is_text(create.get("identity")):
            return True
    interaction = extra.get("interaction_kwargs")
    return isinstance(interaction, dict) and _is_text(interaction.get("identity"))


def _episode_id(record: dict, repeat: int) -> str:
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}:{repeat}"


def _copy(value: Any) -> Any:
    """A copy of JSON-shaped data (dicts, lists, scalars): ``marshal`` copies those in C, many times faster than
    ``copy.deepcopy``, which matters per episode at thousands of episodes per second; other values fall back."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:  # a value marshal does not know (a numpy scalar, a datetime ...)
        return _copy_slow(value)


def _copy_slow(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy_slow(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_slow(item) for item in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return copy.deepcopy(value)


_INSTANCE_PREFIX = uuid.uuid4().hex[:20]
_instance_numbers = itertools.count()


def _new_instance_id() -> str:
    """A unique instance id: a random prefix per process plus a counter (uuid4 per episode costs a syscall)."""
    return f"{_INSTANCE_PREFIX}{next(_instance_numbers):012x}"


def message_text(content: Any) -> str:
    """The text of a message content: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its repr (an extracted answer may be any object)."""
    if value is None or type(value) in (str, int, float, bool):  # the common answers, without a trial dump
        return value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def score_trajectory(
    reward: Any,
    identity: dict,
    *,
    messages: list[dict],
    tool_rewards: list[float],
    tool_scores: dict[str, float],
    turn_scores: list[float],
    verify_kwargs: dict | None = None,
) -> tuple[float, Any]:
    """(score, extracted output) of a trajectory: what the reward sees, the same for every runner (DESIGN.md).

    ``output`` is the last assistant message's text; kwargs are the episode's plus the user's verify kwargs.
    """
    output = next(
        (message_text(message.get("content")) for message in reversed(messages)
         if isinstance(message, dict) and message.get("role") == "assistant"),
        "",
    )
    kwargs = {**(verify_kwargs or {}), "messages": messages, "tool_rewards": tool_rewards,
              "tool_scores": tool_scores, "turn_scores": turn_scores}
    try:
        extracted = jsonable(reward.extract_output(output))
    except Exception as error:  # informative only: verify_score records the crash and scores 0
        extracted = None
        logger.debug("extract_output failed: %s", error)
    return float(reward.verify_score(output, identity, **kwargs)), extracted


def _assistant_message(message: Any, turn: int) -> dict:
    """The policy's message as a trajectory entry: role set, content present, every tool call with an id and JSON text
    arguments (reference agents may give a dict); other keys such as ``reasoning_content`` kept as they are."""
    if not isinstance(message, dict):
        raise ModelError(f"the policy returned {type(message).__name__}, not an assistant message")
    message = dict(message)
    message["role"] = "assistant"
    message.setdefault("content", None)
    calls = message.get("tool_calls")
    if calls:
        normalised = []
        for index, call in enumerate(calls):
            call = dict(call) if isinstance(call, dict) else {}
            function = dict(call.get("function") or {})
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                function["arguments"] = json.dumps(arguments if arguments is not None else {})
            call["function"] = function
            call.setdefault("type", "function")
            if not call.get("id"):
                call["id"] = f"call_{turn}_{index}"
            normalised.append(call)
        message["tool_calls"] = normalised
    elif "tool_calls" in message:
        del message["tool_calls"]  # an empty list confuses chat templates
    return message


@attrs.define
class _Episode:
    """Mutable state of one episode while it runs."""

    instance_id: str
    tools: dict[str, Any]  # Tool.name -> tool
    messages: list[dict]
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    tool_rewards: list[float] = attrs.field(factory=list)
    turn_scores: list[float] = attrs.field(factory=list)
    usage: dict[str, int] = attrs.field(factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})
    assistant_turns: int = 0
    user_turns: int = 0
    model_errors: int = 0
    first_model_error: str | None = None
    policy_s: float = 0.0
    tools_s: float = 0.0


async def _execute(episode: _Episode, call: dict, limits: RolloutLimits) -> ToolCall:
    """One tool call; the model's mistakes (bad JSON, unknown tool, a raising or slow tool) become an Error: text."""
    function = call["function"]
    name, arguments = function.get("name"), function["arguments"]
    started = time.perf_counter()
    tool = episode.tools.get(name)  # type: ignore[arg-type]
    error_text: str | None = None
    step_reward, metrics = 0.0, {}
    try:
        if tool is None:
            raise ModelError(f"unknown tool {name!r}; available: {', '.join(sorted(episode.tools)) or 'none'}")
        try:
            parameters = json.loads(arguments) if arguments.strip() else {}
        except ValueError as error:
            raise ModelError(f"arguments of {name} are not valid JSON ({error})") from None
        if not isinstance(parameters, dict):
            raise ModelError(f"arguments of {name} must be a JSON object, got {type(parameters).__name__}")
        try:
            # what ``fail_after`` does, without its generator-based context manager and exception round trip
            with anyio.CancelScope(deadline=anyio.current_time() + limits.tool_timeout_s) as scope:
                output, step_reward, metrics = await tool.execute(episode.instance_id, parameters)
        except (ModelError, InfrastructureError):
            raise
        except Exception as error:  # the tool rejected what the model asked: the model sees why and goes on
            raise ModelError(f"{name} failed: {type(error).__name__}: {error}") from error
        if scope.cancelled_caught:
            raise ModelError(f"{name} timed out after {limits.tool_timeout_s:g} s")
        output = output if isinstance(output, str) else json.dumps(jsonable(output))
        step_reward = float(step_reward)
        metrics = metrics if isinstance(metrics, dict) else {}
    except ModelError as error:
        error_text = str(error)
        output, step_reward, metrics = f"Error: {error}", 0.0, {}
    # built once, complete: each attribute set on an attrs record afterwards costs a hook call
    return ToolCall(id=call["id"], name=str(name), arguments=arguments, output=output, step_reward=step_reward,
                    metrics=metrics, error=error_text, duration_s=time.perf_counter() - started)


async def _run_tool_calls(episode: _Episode, calls: list[dict], limits: RolloutLimits) -> list[ToolCall]:
    started = time.perf_counter()
    # Unknown tools answer at once with an error, so they never force sequential execution.
    concurrent = len(calls) > 1 and all(
        getattr(episode.tools.get(call["function"].get("name")), "parallel_safe", True) for call in calls
    )
    if concurrent:
        results: list[ToolCall | None] = [None] * len(calls)
        failure: list[Exception] = []

        async def run(index: int, call: dict) -> None:
            try:
                results[index] = await _execute(episode, call, limits)
            except Exception as error:
                # Kept out of the task group, which would wrap it in an ExceptionGroup whose text hides the cause;
                # raised below as itself, so it is classified exactly as on the sequential path. The first failure
                # stops the turn's other calls, as it would stop the remaining calls there.
                failure.append(error)
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            for index, call in enumerate(calls):
                group.start_soon(run, index, call)
        if failure:
            raise failure[0]
        done = [result for result in results if result is not None]
    else:
        done = [await _execute(episode, call, limits) for call in calls]
    episode.tools_s += time.perf_counter() - started
    return done


async def _loop(episode: _Episode, policy: Policy, sample: GeneratedSample, schemas: list[dict], interaction: Any,
                limits: RolloutLimits, rng: random.Random) -> str:
    """Turns until an answer, a terminate, or a limit; returns the finish reason.

    The limits are checked before each assistant turn only: a turn's tool calls are all answered even when they take
    ``user_turns`` past ``max_user_turns`` (see :class:`RolloutLimits`).
    """
    messages = episode.messages
    while True:
        if episode.assistant_turns >= limits.max_assistant_turns:
            return "max_assistant_turns"
        if episode.user_turns >= limits.max_user_turns:
            return "max_user_turns"
        started = time.perf_counter()
        turn = await policy(messages, schemas, sample, rng)
        episode.policy_s += time.perf_counter() - started
        if turn.usage:
            totals = episode.usage
            for key in _USAGE_KEYS:
                totals[key] += int(turn.usage.get(key) or 0)
        message = _assistant_message(turn.message, episode.assistant_turns)
        messages.append(message)
        episode.assistant_turns += 1
        calls = message.get("tool_calls")
        if calls:
            for result in await _run_tool_calls(episode, calls, limits):
                episode.tool_calls.append(result)
                episode.tool_rewards.append(result.step_reward)
                messages.append(
                    {"role": "tool", "tool_call_id": result.id, "name": result.name, "content": result.output}
                )
                episode.user_turns += 1
                if result.error is not None:
                    episode.model_errors += 1
                    episode.first_model_error = episode.first_model_error or result.error
            continue
        if interaction is None:
            return "answered"
        terminate, feedback, turn_score, _extra = await interaction.generate_response(episode.instance_id, messages)
        episode.turn_scores.append(float(turn_score))
        episode.user_turns += 1
        if terminate:
            return "terminated"
        messages.append({"role": "user", "content": feedback})


#: Reward code of at most this many finished episodes runs per thread hop, in at most this many threads at once.
OFF_LOOP_BATCH = 8
OFF_LOOP_THREADS = 8


@attrs.define
class _Job:
    call: Any
    result: Any = None
    error: BaseException | None = None
    taken: bool = False  # in a batch that some episode is driving
    done: bool = False
    waiter: Any = None  # an anyio.Event while the job's episode waits without driving a batch


class _OffLoop(threading.local):
    """Sync callables run in worker threads, several per thread hop.

    One ``to_thread.run_sync`` per reward costs a thread wake-up and an event-loop wake-up each (~0.2 ms of CPU per
    episode, most of the engine's own cost at thousands of episodes per second). Here an episode that finds fewer
    than :data:`OFF_LOOP_THREADS` batches running drives one: it takes up to :data:`OFF_LOOP_BATCH` waiting jobs to
    a worker thread and wakes their episodes when it is back; the others wait for theirs. Reward code stays off the
    event loop, and a slow verifier holds up at most the few jobs of its own batch, never the loop. Per thread,
    since each event loop runs in one thread.
    """

    def __init__(self) -> None:
        self.pending: collections.deque[_Job] = collections.deque()
        self.drivers = 0

    def wake_next(self) -> None:
        """Hand driving to the next waiting job, so no job waits for a batch that nobody will start."""
        for job in self.pending:
            if job.waiter is not None:
                job.waiter.set()
                return

    async def run(self, call: Any) -> Any:
        job = _Job(call)
        self.pending.append(job)
        try:
            while not job.done:
                if not job.taken and self.drivers < OFF_LOOP_THREADS:
                    batch = [self.pending.popleft() for _ in range(min(OFF_LOOP_BATCH, len(self.pending)))]
                    for taken in batch:
                        taken.taken = True
                    self.drivers += 1
                    try:
                        await anyio.to_thread.run_sync(_run_jobs, batch)
                    finally:
                        self.drivers -= 1
                        for other in batch:
                            if other.waiter is not None:
                                other.waiter.set()
                        self.wake_next()
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


def _run_jobs(batch: list[_Job]) -> None:
    for job in batch:
        try:
            job.result = job.call()
        except BaseException as error:  # re-raised in the job's own episode
            job.error = error
        job.done = True


_OFF_LOOP = _OffLoop()


@attrs.frozen
class _Plan:
    """The components one kind of record uses, looked up once per registry instead of once per episode."""

    tools: dict[str, Any]  # Tool.name -> tool
    interaction: Any
    reward: Any
    schemas: list[dict]
    versions: dict[str, str]  # what runs: the installed distributions behind these components, and bootcamp-core


#: registry -> {(generator, tools, interaction, reward, configs): plan}; weak, so a test's registry goes with it
_PLANS: weakref.WeakKeyDictionary[Registry, dict[tuple, _Plan]] = weakref.WeakKeyDictionary()


def _plan(registry: Registry, sample: GeneratedSample, component_config: dict[str, dict]) -> _Plan:
    ids = (*sample.tools, sample.interaction, sample.reward)
    configs = (
        json.dumps([component_config.get(ref) for ref in ids], sort_keys=True, default=repr)
        if component_config and any(ref in component_config for ref in ids)
        else ""
    )
    key = (sample.generator, sample.tools, sample.interaction, sample.reward, configs)
    plans = _PLANS.get(registry)
    if plans is None:
        plans = _PLANS.setdefault(registry, {})
    plan = plans.get(key)
    if plan is not None:
        return plan
    tools = {}
    used = []
    served: dict[str, str] = {}  # versions a tool server reported for the tools it runs
    for tool_id in sample.tools:
        config = component_config.get(tool_id)
        if config and config.get("type") == "remote":
            from bootcamp_core.serve.client import remote_tool

            tool = remote_tool(tool_id, config)
            served.update(type(tool).versions)
        else:
            tool = registry.component("tool", tool_id, config)
            used.append(("tool", registry.resolve("tool", tool_id)))
        tools[type(tool).name] = tool
    interaction = None
    if sample.interaction:
        interaction = registry.component("interaction", sample.interaction, component_config.get(sample.interaction))
        used.append(("interaction", registry.resolve("interaction", sample.interaction)))
    reward = registry.component("reward", sample.reward, component_config.get(sample.reward))
    used.append(("reward", registry.resolve("reward", sample.reward)))
    try:  # the generator does not run here; its version is recorded when it is installed
        used.append(("generator", registry.resolve("generator", sample.generator)))
    except UnknownIdError:
        pass
    versions = {**served, **registry.versions_for(used), "bootcamp-core": __version__}
    plan = _Plan(
        tools=tools,
        interaction=interaction,
        reward=reward,
        schemas=[type(tool).openai_schema() for tool in tools.values()],
        versions=dict(sorted(versions.items())),
    )
    plans[key] = plan
    return plan


async def run_episode(
    record: dict | GeneratedSample,
    policy: Policy,
    *,
    registry: Registry | None = None,
    limits: RolloutLimits = RolloutLimits(),
    system_prompt: str | None = None,
    verify_kwargs: dict | None = None,
    component_config: dict[str, dict] | None = None,
    repeat: int = 0,
    evaluation_config: dict | None = None,
    episode_key: str | None = None,
) -> EpisodeResult:
    """Run one episode of ``record`` with ``policy`` and score it.

    Never raises for model or infrastructure failures: they are in the result (``error_type``, ``error``,
    ``finish_reason``), with the trajectory so far. A record that names no bootcamp components raises ``ValueError``
    and a component that is not installed ``UnknownIdError`` (configuration, checked before any work). Cancellation
    propagates after cleanup: tools released and the interaction finalized in every case.

    Outcomes:

    - the model made mistakes (bad tool arguments, unknown tools, raising or slow tools): told to the model, the
      episode goes on; ``error_type`` ``"model"``;
    - the policy raised :class:`ModelError` (the endpoint rejected the request itself, e.g. HTTP 400 "maximum context
      length exceeded"): the episode ends, ``finish_reason`` ``"error"``, ``error_type`` ``"model"``, ``success``
      True and scored as usual, since running it again gives the same answer (resume does not repeat it);
    - an :class:`InfrastructureError` (or a plugin bug) from the policy, a tool or the interaction: ``success``
      False, ``error_type`` ``"infrastructure"``, ``finish_reason`` ``"error"`` (``"episode_timeout"`` for the
      episode timeout), score 0, not rewarded.

    ``calc_reward`` of every tool runs (``tool_scores``) whenever no infrastructure error happened.

    Turn limits are checked between turns: all tool calls of the last turn are answered, so ``user_turns`` may exceed
    ``limits.max_user_turns`` by that turn's calls (``finish_reason`` ``"max_user_turns"``).

    ``versions`` holds what ran: the installed distributions behind the record's generator, tools, interaction and
    reward, and ``bootcamp-core`` (the record's own ``versions`` say what generated it, and stay in ``input``).

    ``episode_key``: ``episode_id(record, repeat)`` when the caller has it already (resume checks compute it), so
    it is not hashed twice; it is taken as given.
    """
    registry = registry or get_registry()
    component_config = component_config or {}
    if isinstance(record, GeneratedSample):
        sample, record = record, record.to_record()
    else:
        record = normalize_record(_copy(record))  # our own copy: it goes into the result as ``input``
        sample = GeneratedSample.from_record(record, copy_record=False)
    started_at = datetime.now(timezone.utc).isoformat()
    clock = time.perf_counter()
    key = episode_key or _episode_id(record, repeat)
    rng = random.Random(key)  # a string seed: deterministic across processes, unlike hash()

    plan = _plan(registry, sample, component_config)
    tools, interaction, reward = plan.tools, plan.interaction, plan.reward
    extra = record.get("extra_info") or {}
    tools_kwargs = extra.get("tools_kwargs") or {}

    messages: list[dict] = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    messages.extend(dict(message) for message in sample.prompt)  # the prompt entries stay as in ``input``
    episode = _Episode(instance_id=_new_instance_id(), tools=tools, messages=messages)
    created: list[Any] = []
    started_interaction = False
    infrastructure: str | None = None
    model_failure: str | None = None
    finish = "error"
    tool_scores: dict[str, float] = {}
    try:
        with anyio.CancelScope(deadline=anyio.current_time() + limits.episode_timeout_s) as deadline:
            try:
                for name, tool in tools.items():
                    create_kwargs = dict((tools_kwargs.get(name) or {}).get("create_kwargs") or {})
                    create_kwargs.setdefault("identity", sample.identity)
                    created.append(tool)
                    await tool.create(episode.instance_id, **create_kwargs)
                if interaction is not None:
                    interaction_kwargs = dict(extra.get("interaction_kwargs") or {})
                    interaction_kwargs.pop("name", None)
                    interaction_kwargs.setdefault("identity", sample.identity)
                    started_interaction = True
                    await interaction.start_interaction(episode.instance_id, **interaction_kwargs)
                try:
                    finish = await _loop(episode, policy, sample, plan.schemas, interaction, limits, rng)
                except ModelError as error:  # the policy could not produce a usable turn: the episode ends, scored
                    model_failure = str(error)
                # Whenever nothing outside the model failed, the tools say how the episode went (tool_scores).
                for name, tool in tools.items():
                    tool_scores[name] = float(await tool.calc_reward(episode.instance_id))
            except InfrastructureError as error:
                infrastructure = str(error)
            except Exception as error:  # a plugin or policy bug: this episode fails, the evaluation goes on
                logger.warning("episode %s failed: %s: %s", key, type(error).__name__, error, exc_info=True)
                infrastructure = f"{type(error).__name__}: {error}"
        if deadline.cancelled_caught:
            finish = "episode_timeout"
            infrastructure = f"the episode timed out after {limits.episode_timeout_s:g} s"
    finally:
        # Shielded: a cancelled evaluation still releases every tool and finalizes the interaction, within bounds.
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + CLEANUP_TIMEOUT_S):
            for tool in created:
                try:
                    await tool.release(episode.instance_id)
                except Exception as error:
                    logger.warning("releasing %s failed: %s: %s", type(tool).name, type(error).__name__, error)
            if started_interaction:
                try:
                    await interaction.finalize_interaction(episode.instance_id)
                except Exception as error:
                    logger.warning("finalizing %s failed: %s: %s", type(interaction).name, type(error).__name__, error)

    success, error_type, error_text, score, extracted = True, None, None, 0.0, None
    if infrastructure is not None:
        success, error_type, error_text = False, "infrastructure", infrastructure
        if finish != "episode_timeout":
            finish = "error"
        tool_scores = {}  # partial scores of an episode that did not finish would read as real ones
    else:
        kwargs = {
            "messages": messages,
            "tool_rewards": list(episode.tool_rewards),
            "tool_scores": dict(tool_scores),
            "turn_scores": list(episode.turn_scores),
        }

        def score_it() -> tuple[float, Any]:
            return score_trajectory(reward, sample.identity, verify_kwargs=verify_kwargs, **kwargs)

        # Sync reward code runs off the event loop (batched, see _OffLoop), so a slow verifier never stalls the
        # other episodes.
        score, extracted = await _OFF_LOOP.run(score_it)
        if model_failure is not None or episode.model_errors:
            error_type = "model"
            error_text = model_failure or (
                f"{episode.model_errors} tool call error{'s' if episode.model_errors != 1 else ''}; "
                f"first: {episode.first_model_error}"
            )
    # built once, complete: each attribute set on an attrs record afterwards costs a hook call
    return EpisodeResult(
        id=key,
        input=record,
        repeat=repeat,
        data_source=sample.data_source,
        generator=sample.generator,
        generator_name=sample.generator_name,
        tools=list(plan.schemas),
        messages=messages,
        extracted_output=extracted,
        ground_truth=sample.identity,
        score=score,
        success=success,
        error_type=error_type,
        error=error_text,
        finish_reason=finish,
        reached_max_turns=finish in ("max_assistant_turns", "max_user_turns"),
        turn_record={
            "assistant_turns": episode.assistant_turns,
            "user_turns": episode.user_turns,
            "tool_calls": len(episode.tool_calls),
            "model_errors": episode.model_errors,
        },
        tool_calls=episode.tool_calls,
        tool_rewards=episode.tool_rewards,
        tool_scores=tool_scores,
        turn_scores=episode.turn_scores,
        token_usage=episode.usage,
        timings={
            "started_at": started_at,
            "duration_s": time.perf_counter() - clock,
            "policy_s": episode.policy_s,
            "tools_s": episode.tools_s,
        },
        versions=dict(plan.versions),
        evaluation_config=dict(evaluation_config or {}),
    )
