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

The engine plans each kind of record once (its components, looked up in the registry, or built by the tool backend
a tool-config entry's ``type:`` names), then runs the turns; a turn's tool calls are :mod:`.tool_calls`' and the
reward's view of the trajectory is :mod:`.scoring`'s.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import logging
import marshal
import random
import time
import uuid
import weakref
from datetime import datetime, timezone
from typing import Any, Protocol

import anyio
import attrs

from bootcamp_core.__about__ import __version__
from bootcamp_core.data.records import EpisodeResult, GeneratedSample, ToolCall, normalize_record

# defined in their own modules; importable here too, as plugins written against this module's first layout do
from bootcamp_core.episode.messages import jsonable, message_text, normalize_assistant_message  # noqa: F401
from bootcamp_core.episode.off_loop import run_off_loop
from bootcamp_core.episode.scoring import score_and_report
from bootcamp_core.episode.tool_calls import run_tool_calls
from bootcamp_core.plugin.backends import tool_backend
from bootcamp_core.plugin.components import is_solved
from bootcamp_core.plugin.errors import InfrastructureError, ModelError, UnknownIdError
from bootcamp_core.plugin.loader import Registry, get_registry
from bootcamp_core.plugin.off_loop import OffLoopTimeout, run_coroutine_off_loop

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
    ``reward_timeout_s`` bounds each call of plugin code run off the event loop (the reward's scoring, each
    ``generate_response`` of the interaction): past it the call is abandoned and the episode ends as a model-side
    ``reward_timeout`` with score 0.
    """

    max_assistant_turns: int = attrs.field(default=10, validator=attrs.validators.ge(1))
    max_user_turns: int = attrs.field(default=20, validator=attrs.validators.ge(1))
    tool_timeout_s: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    episode_timeout_s: float = attrs.field(default=600.0, validator=attrs.validators.gt(0))
    reward_timeout_s: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))


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
    else:
        record = normalize_record(_copy(record))  # a copy: hashing must not rewrite the caller's record
    return _episode_id(record, repeat)


def _episode_id(record: dict, repeat: int) -> str:
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}:{repeat}"


def _copy(value: Any) -> Any:
    """A copy of JSON-shaped data (dicts, lists, scalars); other values fall back to ``copy.deepcopy``.

    ``marshal`` copies in C: bench/bench_rollout.py (a) measured 0.129 ms harness CPU per turn with it and 0.136-0.140
    ms with ``copy.deepcopy`` (median of 11, two rounds), one copy per episode.
    """
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:  # a value marshal does not know (a numpy scalar, a datetime ...)
        return copy.deepcopy(value)


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
        message = normalize_assistant_message(turn.message, episode.assistant_turns)
        messages.append(message)
        episode.assistant_turns += 1
        calls = message.get("tool_calls")
        if calls:
            started = time.perf_counter()
            try:
                results = await run_tool_calls(episode.tools, episode.instance_id, calls,
                                               timeout_s=limits.tool_timeout_s)
            except InfrastructureError as error:  # a tool server or backend failed under the call
                error.kind = error.kind or "tool_server"
                raise
            episode.tools_s += time.perf_counter() - started
            for result in results:
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
        terminate, feedback, turn_score, _extra = await _respond(interaction, episode.instance_id, messages, limits)
        episode.turn_scores.append(float(turn_score))
        episode.user_turns += 1
        if terminate:
            return "terminated"
        messages.append({"role": "user", "content": feedback})


class _AnswerFailure(ModelError):
    """Plugin code gave up on the model's answer (past its limit, or crashed on it): the episode ends, score 0."""


async def _respond(interaction: Any, instance_id: str, messages: list[dict], limits: RolloutLimits) -> tuple:
    """The interaction's reply, run off the event loop (its sync work on model output cannot stall other episodes).

    Past ``limits.reward_timeout_s`` it is abandoned, and a crash other than an :class:`InfrastructureError` is the
    plugin failing on what the model wrote: either way a model-side error, never re-run.
    """
    try:
        return await run_coroutine_off_loop(lambda: interaction.generate_response(instance_id, messages),
                                            timeout_s=limits.reward_timeout_s)
    except OffLoopTimeout as error:
        raise _AnswerFailure(f"{type(interaction).name}.generate_response {error}", kind="reward_timeout") from None
    except (InfrastructureError, ModelError):
        raise
    except Exception as error:
        logger.warning("%s.generate_response failed on the model's answer: %s: %s", type(interaction).name,
                       type(error).__name__, error, exc_info=logger.isEnabledFor(logging.DEBUG))
        raise _AnswerFailure(f"{type(interaction).name}.generate_response failed on the model's answer: "
                             f"{type(error).__name__}: {error}", kind="model_error") from None


@attrs.frozen
class _Plan:
    """The components one kind of record uses, looked up once per registry instead of once per episode."""

    tools: dict[str, Any]  # Tool.name -> tool
    interaction: Any
    reward: Any
    schemas: list[dict]
    versions: dict[str, str]  # what runs: the installed distributions behind these components, and bootcamp-core


_INSTANCE_PREFIX = uuid.uuid4().hex[:20]
_instance_numbers = itertools.count()


def new_instance_id() -> str:
    """A unique instance id: a random prefix per process and a counter.

    uuid4 per episode reads os.urandom, a system call each time: bench/bench_rollout.py (a) under cProfile spent
    2% of the harness's CPU in those 1,000 calls per 1,000 episodes.
    """
    return f"{_INSTANCE_PREFIX}{next(_instance_numbers):012x}"


#: registry -> {(generator, tools, interaction, reward, configs): plan}; weak, so a test's registry goes with it
_PLANS: weakref.WeakKeyDictionary[Registry, dict[tuple, _Plan]] = weakref.WeakKeyDictionary()


def _plan(registry: Registry, sample: GeneratedSample, component_config: dict[str, dict]) -> _Plan:
    ids = (*sample.tools, sample.interaction, sample.reward)
    # most episodes run with no component config: skip the dump then (bench/bench_rollout.py (a) under cProfile:
    # dumping for every episode makes 3,000 instead of 2,000 JSON encodes per 1,000 episodes, +1.5% of the CPU)
    configs = (json.dumps([component_config.get(ref) for ref in ids], sort_keys=True, default=repr)
               if component_config and any(ref in component_config for ref in ids) else "")
    key = (sample.generator, sample.tools, sample.interaction, sample.reward, configs)
    plans = _PLANS.setdefault(registry, {})
    plan = plans.get(key)
    if plan is not None:
        return plan
    tools = {}
    used = []
    served: dict[str, str] = {}  # versions a backend reported for the tools it runs
    for tool_id in sample.tools:
        config = component_config.get(tool_id)
        if config and "type" in config:  # runs elsewhere: the backend the entry's type names provides it
            tool = tool_backend(config["type"]).tool(tool_id, config)
            served.update(getattr(type(tool), "versions", {}))
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
    - the interaction's ``generate_response`` or the reward's scoring (both run off the event loop) ran past
      ``limits.reward_timeout_s`` (abandoned: ``error_kind`` ``"reward_timeout"``) or crashed on the model's answer
      (``"model_error"``): the episode ends, ``finish_reason`` ``"error"``, ``error_type`` ``"model"``, ``success``
      True, score 0, never re-run;
    - the reward reported a model-side error kind for the answer with ``report_error`` (its own limit on a verifier,
      say) while it scored the episode: the same, with that ``error_kind`` and the reward's message;
    - an :class:`InfrastructureError` (or a plugin bug) from the policy, a tool or the interaction's start: ``success``
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
        sample = GeneratedSample.from_normalized(record)
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
    episode = _Episode(instance_id=new_instance_id(), tools=tools, messages=messages)
    created: list[Any] = []
    started_interaction = False
    infrastructure: str | None = None
    model_failure: str | None = None
    error_kind: str | None = None
    answer_failed = False  # plugin code gave up on the model's answer: score 0, no scoring
    finish = "error"
    tool_scores: dict[str, float] = {}
    try:
        with anyio.move_on_after(limits.episode_timeout_s) as deadline:
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
                    model_failure, error_kind = str(error), error.kind
                    answer_failed = isinstance(error, _AnswerFailure)
                # Whenever nothing outside the model failed, the tools say how the episode went (tool_scores).
                for name, tool in tools.items():
                    tool_scores[name] = float(await tool.calc_reward(episode.instance_id))
            except InfrastructureError as error:
                infrastructure, error_kind = str(error), error.kind or "infrastructure"
            except Exception as error:  # a plugin or policy bug: this episode fails, the evaluation goes on
                logger.warning("episode %s failed: %s: %s", key, type(error).__name__, error, exc_info=True)
                infrastructure, error_kind = f"{type(error).__name__}: {error}", "plugin_error"
        if deadline.cancelled_caught:
            finish, error_kind = "episode_timeout", "episode_timeout"
            infrastructure = f"the episode timed out after {limits.episode_timeout_s:g} s"
    finally:
        # Shielded: a cancelled evaluation still releases every tool and finalizes the interaction, within bounds.
        with anyio.move_on_after(CLEANUP_TIMEOUT_S, shield=True):
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

        def score_it() -> tuple[float, Any, tuple[str, str] | None]:
            return score_and_report(reward, sample.identity, verify_kwargs=verify_kwargs, **kwargs)

        # Sync reward code runs off the event loop (batched, see off_loop), so a slow verifier never stalls the
        # other episodes; past its limit it is abandoned, and a crash is the reward failing on the model's answer.
        if not answer_failed:
            try:
                score, extracted, reported = await run_off_loop(score_it, timeout_s=limits.reward_timeout_s)
                if reported is not None:  # the reward gave up on the answer itself (report_error): as past our limit
                    score = 0.0
                    if model_failure is None:
                        kind, message = reported
                        model_failure, error_kind, finish = f"{type(reward).name}.verify_score: {message}", kind, "error"
            except OffLoopTimeout as error:
                model_failure, error_kind, finish = f"{type(reward).name}.verify_score {error}", "reward_timeout", "error"
            except Exception as error:
                logger.warning("%s.verify_score failed on the model's answer: %s: %s", type(reward).name,
                               type(error).__name__, error, exc_info=logger.isEnabledFor(logging.DEBUG))
                model_failure = f"{type(reward).name}.verify_score failed: {type(error).__name__}: {error}"
                error_kind, finish = "model_error", "error"
        if model_failure is not None or episode.model_errors:
            error_type = "model"
            error_kind = error_kind or ("model_error" if model_failure is not None else "tool_call")
            error_text = model_failure or (
                f"{episode.model_errors} tool call error{'s' if episode.model_errors != 1 else ''}; "
                f"first: {episode.first_model_error}"
            )
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
        solved=success and is_solved(score, getattr(reward, "solved_threshold", 1.0)),
        success=success,
        error_type=error_type,
        error_kind=error_kind,
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
