"""The rollout engine with real components: tiny plugins registered in an in-process registry, scripted policies."""

from __future__ import annotations

import json
import random
import types
from typing import Any, ClassVar

import anyio
import pytest

from bootcamp_core import InfrastructureError, Interaction, ModelError, Reward, TaskGenerator, Tool, hookimpl
from bootcamp_core import __version__ as core_version
from bootcamp_core.data.records import EpisodeResult, GeneratedSample
from bootcamp_core.episode.engine import PolicyTurn, RolloutLimits, episode_id, run_episode
from bootcamp_core.plugin.loader import Registry

EVENTS: list[tuple] = []


class Gen(TaskGenerator):
    name = "gen"
    tools = ("sleepy", "counter", "boom")
    interaction = "judge"
    reward = "exact"

    def case_generator(self, rng):
        return {"answer": "42"}

    def prompt_func(self, identity, rng):
        return "What is the answer?"


class Sleepy(Tool):
    """Sleeps ``seconds``; not parallel-safe. Records create/release so cleanup can be checked."""

    name = "sleepy"
    description = "sleep"
    parameters: ClassVar[dict] = {"type": "object", "properties": {"seconds": {"type": "number"}}}

    async def create(self, instance_id=None, identity=None, **kwargs):
        EVENTS.append(("create", self.name, instance_id, identity))
        return await super().create(instance_id, identity, **kwargs)

    async def execute(self, instance_id, parameters, **kwargs):
        self.state(instance_id)
        EVENTS.append(("start", self.name, parameters.get("tag")))
        await anyio.sleep(parameters.get("seconds", 0))
        EVENTS.append(("end", self.name, parameters.get("tag")))
        return f"slept {parameters.get('tag')}", 0.5, {"tag": parameters.get("tag")}

    async def calc_reward(self, instance_id, **kwargs):
        return 0.25

    async def release(self, instance_id, **kwargs):
        EVENTS.append(("release", self.name, instance_id))
        await super().release(instance_id)


class Counter(Tool):
    """Parallel-safe; records how many of its calls run at once."""

    name = "counter"
    description = "count"
    parameters: ClassVar[dict] = {"type": "object", "properties": {}}
    parallel_safe = True
    running = 0
    peak = 0

    async def create(self, instance_id=None, identity=None, **kwargs):
        EVENTS.append(("create", self.name, instance_id, identity))
        return await super().create(instance_id, identity, **kwargs)

    async def execute(self, instance_id, parameters, **kwargs):
        type(self).running += 1
        type(self).peak = max(type(self).peak, type(self).running)
        await anyio.sleep(parameters.get("seconds", 0.05))
        type(self).running -= 1
        return f"counted {parameters.get('tag')}", 1.0, {}

    async def release(self, instance_id, **kwargs):
        EVENTS.append(("release", self.name, instance_id))
        await super().release(instance_id)


class Boom(Tool):
    name = "boom"
    description = "raises"
    parameters: ClassVar[dict] = {"type": "object", "properties": {}}

    async def execute(self, instance_id, parameters, **kwargs):
        if parameters.get("infrastructure"):
            raise InfrastructureError("the sandbox died")
        raise RuntimeError("kaboom")


class ParallelBoom(Tool):
    """Parallel-safe and raising, so its error comes out of the task group of a concurrent turn."""

    name = "pboom"
    description = "raises, in parallel"
    parameters: ClassVar[dict] = {"type": "object", "properties": {}}
    parallel_safe = True

    async def execute(self, instance_id, parameters, **kwargs):
        await anyio.sleep(0.01)
        if parameters.get("infrastructure"):
            raise InfrastructureError("the sandbox died")
        raise RuntimeError("kaboom in parallel")


class Judge(Interaction):
    name = "judge"

    async def start_interaction(self, instance_id=None, identity=None, **kwargs):
        EVENTS.append(("start_interaction", instance_id, identity))
        return await super().start_interaction(instance_id, identity, **kwargs)

    async def generate_response(self, instance_id, messages, **kwargs):
        right = messages[-1]["content"] == self.state(instance_id)["identity"]["answer"]
        return right, "correct" if right else "try again", float(right), {}

    async def finalize_interaction(self, instance_id, **kwargs):
        EVENTS.append(("finalize", instance_id))
        await super().finalize_interaction(instance_id)


class Exact(Reward):
    name = "exact"
    seen: ClassVar[list] = []

    def extract_output(self, output):
        return output.strip() or None

    def verify_correction(self, extracted, identity, **kwargs):
        type(self).seen.append(kwargs)
        return float(extracted == identity["answer"])


def plugin() -> types.ModuleType:
    module = types.ModuleType("rollout_test_plugin")
    hooks = {
        "bootcamp_register_task_generators": [Gen],
        "bootcamp_register_tools": [Sleepy, Counter, Boom, ParallelBoom],
        "bootcamp_register_interactions": [Judge],
        "bootcamp_register_rewards": [Exact],
    }
    for hook_name, classes in hooks.items():
        def hook(register, classes=classes):
            for cls in classes:
                register(cls)
        hook.__name__ = hook_name
        setattr(module, hook_name, hookimpl(hook))
    return module


@pytest.fixture(scope="module")
def registry() -> Registry:
    registry = Registry(strict=True)
    registry.add_plugin(plugin(), "t", distribution="bootcamp-t", version="9.9")
    return registry


@pytest.fixture(autouse=True)
def _clean() -> None:
    EVENTS.clear()
    Exact.seen.clear()
    Counter.peak = Counter.running = 0


def record(*, interaction: bool = True, tools: tuple[str, ...] = ("sleepy", "counter", "boom"),
           versions: dict | None = None) -> dict:
    return GeneratedSample(
        data_source="bootcamp/t",
        prompt=[{"role": "user", "content": "What is the answer?"}],
        identity={"answer": "42"},
        index=3,
        split="test",
        generator_name="g",
        generator="t/gen",
        reward="t/exact",
        tools=[f"t/{name}" for name in tools],
        tool_names=tools,
        interaction="t/judge" if interaction else None,
        versions=versions if versions is not None else {"bootcamp-t": "9.9"},
    ).to_record()


def call(name: str, arguments: Any, call_id: str | None = None) -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"c{random.random()}", "type": "function", "function": {"name": name, "arguments": text}}


class Scripted:
    """A policy playing fixed assistant messages in order; records what it was given."""

    def __init__(self, *messages: dict | BaseException, usage: dict | None = None) -> None:
        self.messages = list(messages)
        self.seen: list[tuple[list[dict], list[dict], int]] = []
        self.usage = usage or {}

    async def __call__(self, messages, tools, record, rng):
        self.seen.append(([dict(message) for message in messages], tools, rng.random()))
        message = self.messages.pop(0)
        if isinstance(message, BaseException):
            raise message
        return PolicyTurn(message=message, usage=self.usage)


def answer(text: str) -> dict:
    return {"role": "assistant", "content": text}


def tools_turn(*calls: dict, **extra: Any) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": list(calls), **extra}


def run(record_: dict, policy, registry: Registry, **kwargs) -> EpisodeResult:
    return anyio.run(lambda: run_episode(record_, policy, registry=registry, **kwargs))


# ------------------------------------------------------------------------------------------------ happy path
def test_a_full_episode_sees_the_prompt_tools_and_scores_with_the_episode_kwargs(registry):
    policy = Scripted(
        tools_turn(call("sleepy", {"tag": "a"}, "c1"), reasoning_content="let me think"),
        answer("41"),
        answer("42"),
        usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    )
    result = run(record(), policy, registry, system_prompt="Be brief.", verify_kwargs={"strict": True},
                 evaluation_config={"policy": "scripted"})
    first_messages, tools, _ = policy.seen[0]
    assert first_messages == [{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "What is the answer?"}]
    assert [tool["function"]["name"] for tool in tools] == ["sleepy", "counter", "boom"]
    assert result.tools == tools
    assert [message["role"] for message in result.messages] == [
        "system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert result.messages[2]["reasoning_content"] == "let me think"
    assert result.messages[3] == {"role": "tool", "tool_call_id": "c1", "name": "sleepy", "content": "slept a"}
    assert result.messages[5] == {"role": "user", "content": "try again"}
    assert (result.score, result.success, result.error_type, result.finish_reason) == (1.0, True, None, "terminated")
    assert result.extracted_output == "42"
    assert result.turn_scores == [0.0, 1.0] and result.tool_rewards == [0.5]
    assert result.tool_scores == {"sleepy": 0.25, "counter": 0.0, "boom": 0.0}
    kwargs = Exact.seen[-1]
    assert kwargs["strict"] is True and kwargs["messages"] == result.messages
    assert kwargs["tool_rewards"] == [0.5] and kwargs["turn_scores"] == [0.0, 1.0]
    assert kwargs["tool_scores"] == result.tool_scores
    assert result.turn_record == {"assistant_turns": 3, "user_turns": 3, "tool_calls": 1, "model_errors": 0}
    assert result.token_usage == {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
    assert result.evaluation_config == {"policy": "scripted"}
    assert result.id == episode_id(record(), 0) and result.ground_truth == {"answer": "42"}
    assert set(result.timings) == {"started_at", "duration_s", "policy_s", "tools_s"}
    json.dumps(result.to_dict())  # a results.jsonl line


def test_one_instance_id_for_every_tool_and_the_interaction_and_cleanup_always(registry):
    run(record(), Scripted(answer("42")), registry)
    creates = [event for event in EVENTS if event[0] == "create"]
    started = [event for event in EVENTS if event[0] == "start_interaction"]
    instance_ids = {event[2] for event in creates} | {event[1] for event in started}
    assert len(creates) == 2 and len(started) == 1 and len(instance_ids) == 1
    assert all(event[3] == {"answer": "42"} for event in creates)
    instance_id = instance_ids.pop()
    assert ("release", "sleepy", instance_id) in EVENTS and ("release", "counter", instance_id) in EVENTS
    assert ("finalize", instance_id) in EVENTS
    assert registry.component("tool", "t/sleepy").instances == {}


def test_without_an_interaction_a_turn_without_tool_calls_ends_the_episode(registry):
    result = run(record(interaction=False), Scripted(answer("7"), answer("42")), registry)
    assert (result.finish_reason, result.score, result.turn_record["assistant_turns"]) == ("answered", 0.0, 1)


def test_the_episode_rng_and_id_depend_only_on_record_and_repeat(registry):
    draws = []
    for repeat in (0, 0, 1):
        policy = Scripted(answer("42"))
        run(record(), policy, registry, repeat=repeat)
        draws.append(policy.seen[0][2])
    assert draws[0] == draws[1] != draws[2]
    parquet_form = record()
    parquet_form["reward_model"]["ground_truth"] = json.dumps(parquet_form["reward_model"]["ground_truth"])
    assert episode_id(parquet_form, 0) == episode_id(record(), 0) != episode_id(record(), 1)


# ------------------------------------------------------------------------------------------ tool execution
def test_parallel_safe_calls_run_concurrently_and_results_keep_call_order(registry):
    calls = [call("counter", {"tag": i, "seconds": 0.2 - 0.05 * i}, f"c{i}") for i in range(3)]
    result = run(record(), Scripted(tools_turn(*calls), answer("42")), registry)
    assert Counter.peak == 3
    tool_messages = [message for message in result.messages if message["role"] == "tool"]
    assert [message["tool_call_id"] for message in tool_messages] == ["c0", "c1", "c2"]
    assert [message["content"] for message in tool_messages] == ["counted 0", "counted 1", "counted 2"]


def test_a_turn_with_an_unsafe_tool_runs_its_calls_one_by_one_in_call_order(registry):
    calls = [call("sleepy", {"tag": "slow", "seconds": 0.1}), call("counter", {"tag": "x"}),
             call("sleepy", {"tag": "fast"})]
    result = run(record(), Scripted(tools_turn(*calls), answer("42")), registry)
    assert Counter.peak == 1
    assert [event[2] for event in EVENTS if event[0] in ("start", "end")] == ["slow", "slow", "fast", "fast"]
    assert [call_.output for call_ in result.tool_calls] == ["slept slow", "counted x", "slept fast"]


def test_model_mistakes_become_error_messages_and_the_episode_goes_on(registry):
    turn = tools_turn(
        call("sleepy", '{"tag": ', "bad-json"),
        call("nowhere", {}, "unknown"),
        call("boom", {}, "raises"),
        call("sleepy", {"tag": "slow", "seconds": 5}, "slow"),
        call("sleepy", "[1, 2]", "not-object"),
    )
    result = run(record(), Scripted(turn, answer("42")), registry, limits=RolloutLimits(tool_timeout_s=0.1))
    outputs = {message["tool_call_id"]: message["content"] for message in result.messages if message["role"] == "tool"}
    assert all(text.startswith("Error: ") for text in outputs.values())
    assert "not valid JSON" in outputs["bad-json"]
    assert "unknown tool 'nowhere'" in outputs["unknown"] and "sleepy" in outputs["unknown"]
    assert "RuntimeError: kaboom" in outputs["raises"]
    assert "timed out after 0.1 s" in outputs["slow"]
    assert "JSON object" in outputs["not-object"]
    assert (result.success, result.error_type, result.finish_reason, result.score) == (True, "model", "terminated", 1.0)
    assert result.turn_record["model_errors"] == 5 and result.tool_rewards == [0.0] * 5
    assert [call_.error is not None for call_ in result.tool_calls] == [True] * 5


def test_an_infrastructure_error_from_a_tool_fails_the_episode_but_keeps_the_trajectory(registry):
    result = run(record(), Scripted(tools_turn(call("boom", {"infrastructure": True}))), registry)
    assert (result.success, result.error_type, result.finish_reason) == (False, "infrastructure", "error")
    assert "the sandbox died" in result.error and result.messages[-1]["role"] == "assistant"
    assert any(event[0] == "finalize" for event in EVENTS)


# ------------------------------------------------------------------------------------------------- limits
def test_max_assistant_turns(registry):
    result = run(record(), Scripted(*[answer("no")] * 5), registry, limits=RolloutLimits(max_assistant_turns=3))
    assert (result.finish_reason, result.reached_max_turns, result.success) == ("max_assistant_turns", True, True)
    assert result.turn_record["assistant_turns"] == 3


def test_every_tool_message_and_reply_counts_as_a_user_turn(registry):
    turn = tools_turn(call("counter", {}), call("counter", {}), call("counter", {}))
    result = run(record(), Scripted(turn, answer("x")), registry, limits=RolloutLimits(max_user_turns=3))
    assert (result.finish_reason, result.reached_max_turns) == ("max_user_turns", True)
    assert result.turn_record["user_turns"] == 3 and result.turn_record["assistant_turns"] == 1


def test_the_episode_timeout_ends_the_episode_and_still_cleans_up(registry):
    turn = tools_turn(call("sleepy", {"seconds": 30}))
    result = run(record(), Scripted(turn), registry,
                 limits=RolloutLimits(tool_timeout_s=60, episode_timeout_s=0.2))
    assert (result.finish_reason, result.success, result.error_type) == ("episode_timeout", False, "infrastructure")
    assert any(event[:2] == ("release", "sleepy") for event in EVENTS)
    assert any(event[0] == "finalize" for event in EVENTS)


def test_cancellation_propagates_after_releasing_tools_and_finalizing(registry):
    async def main() -> None:
        with anyio.move_on_after(0.2):
            await run_episode(record(), Scripted(tools_turn(call("sleepy", {"seconds": 30}))), registry=registry)
            raise AssertionError("not cancelled")

    anyio.run(main)
    assert [event[0] for event in EVENTS][-3:] == ["release", "release", "finalize"]


# ------------------------------------------------------------------------------------------------- policy
def test_an_infrastructure_error_from_the_policy_keeps_the_trajectory_so_far(registry):
    policy = Scripted(tools_turn(call("counter", {}, "c1")), InfrastructureError("endpoint down after 5 attempts"))
    result = run(record(), policy, registry)
    assert (result.success, result.error_type, result.finish_reason, result.score) == (
        False, "infrastructure", "error", 0.0)
    assert result.error == "endpoint down after 5 attempts"
    assert [message["role"] for message in result.messages] == ["user", "assistant", "tool"]
    assert any(event[0] == "finalize" for event in EVENTS)


def test_a_model_error_from_the_policy_ends_the_episode_scored_with_tool_scores(registry):
    policy = Scripted(tools_turn(call("sleepy", {"tag": "a"}, "c1"), content="41"),
                      ModelError("HTTP 400 from http://x/v1: maximum context length exceeded"))
    result = run(record(), policy, registry)
    assert (result.success, result.error_type, result.finish_reason) == (True, "model", "error")
    assert result.error == "HTTP 400 from http://x/v1: maximum context length exceeded"
    assert result.tool_scores == {"sleepy": 0.25, "counter": 0.0, "boom": 0.0}  # calc_reward ran
    assert Exact.seen[-1]["tool_scores"] == result.tool_scores and result.score == 0.0
    assert [message["role"] for message in result.messages] == ["user", "assistant", "tool"]


def test_an_infrastructure_error_leaves_no_tool_scores(registry):
    result = run(record(), Scripted(tools_turn(call("boom", {"infrastructure": True}))), registry)
    assert result.tool_scores == {} and Exact.seen == []


# ------------------------------------------------------------------------------------ parallel-safe failures
def test_an_infrastructure_error_from_a_parallel_safe_tool_is_classified_as_on_the_sequential_path(registry):
    turn = tools_turn(call("counter", {"seconds": 5}, "c1"), call("pboom", {"infrastructure": True}, "c2"))
    result = run(record(tools=("counter", "pboom")), Scripted(turn), registry)
    sequential = run(record(), Scripted(tools_turn(call("boom", {"infrastructure": True}))), registry)
    assert (result.success, result.error_type, result.finish_reason) == (False, "infrastructure", "error")
    assert result.error == sequential.error == "the sandbox died"  # not "unhandled errors in a TaskGroup"
    assert result.tool_calls == [] and result.messages[-1]["role"] == "assistant"  # the turn stopped there
    assert any(event[:2] == ("release", "counter") for event in EVENTS)


def test_a_plain_exception_from_a_parallel_safe_tool_is_a_model_error_and_the_episode_goes_on(registry):
    turn = tools_turn(call("counter", {"tag": 0}, "c1"), call("pboom", {}, "c2"))
    result = run(record(tools=("counter", "pboom")), Scripted(turn, answer("42")), registry)
    assert (result.success, result.error_type, result.finish_reason, result.score) == (True, "model", "terminated", 1.0)
    outputs = {message["tool_call_id"]: message["content"] for message in result.messages if message["role"] == "tool"}
    assert outputs == {"c1": "counted 0", "c2": "Error: pboom failed: RuntimeError: kaboom in parallel"}
    assert Counter.peak == 1 and result.turn_record["model_errors"] == 1


# ----------------------------------------------------------------------------------------- limits, versions
def test_max_user_turns_is_checked_between_turns_so_every_call_of_the_last_turn_is_answered(registry):
    turn = tools_turn(*[call("counter", {"tag": i, "seconds": 0}, f"c{i}") for i in range(5)])
    result = run(record(), Scripted(turn, answer("42")), registry, limits=RolloutLimits(max_user_turns=2))
    assert (result.finish_reason, result.reached_max_turns) == ("max_user_turns", True)
    assert result.turn_record["user_turns"] == 5 and result.turn_record["assistant_turns"] == 1
    answered = [message["tool_call_id"] for message in result.messages if message["role"] == "tool"]
    assert answered == [f"c{i}" for i in range(5)]


def test_versions_are_those_that_ran_not_those_that_generated_the_record(registry):
    old = record(versions={"bootcamp-t": "0.1", "bootcamp-gone": "2.0"})
    result = run(old, Scripted(answer("42")), registry)
    assert result.versions == {"bootcamp-core": core_version, "bootcamp-t": "9.9"}
    assert result.input["extra_info"]["bootcamp"]["versions"] == {"bootcamp-t": "0.1", "bootcamp-gone": "2.0"}


def test_many_concurrent_episodes_are_all_scored_and_cancelled_ones_do_not_stall_the_rest(registry):
    class Slow:
        """Answers after a pause, so the episodes reach their rewards together."""

        async def __call__(self, messages, tools, record_, rng):
            await anyio.sleep(0.01)
            return PolicyTurn(message=answer("42"))

    results: list[EpisodeResult] = []

    async def one() -> None:
        results.append(await run_episode(record(interaction=False), Slow(), registry=registry))

    async def main() -> None:
        async with anyio.create_task_group() as outer:
            with anyio.CancelScope() as doomed:
                async with anyio.create_task_group() as group:
                    for _ in range(40):
                        group.start_soon(one)
                    doomed.cancel()  # these 40 never finish ...
            for _ in range(60):
                outer.start_soon(one)  # ... and these 60 are not held up by them

    anyio.run(main)
    assert len(results) == 60 and all(result.score == 1.0 and result.success for result in results)


def test_episodes_leave_no_reference_cycles_behind(registry):
    # What an episode makes is freed by reference counting as soon as it is done with, the off-loop runner's jobs and
    # batches included: what is left in cycles waits for the garbage collector, whose passes cost a long run CPU.
    import gc

    async def one() -> None:
        policy = Scripted(tools_turn(call("counter", {"seconds": 0}), call("sleepy", {"tag": "a"})), answer("41"),
                          answer("42"))
        result = await run_episode(record(), policy, registry=registry)
        assert result.score == 1.0

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(32):  # at once, so the interaction's and the reward's calls share thread hops
                group.start_soon(one)

    anyio.run(main)  # what is built once (plans, worker threads) is built here
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        anyio.run(main)
        gc.collect()
        left = sorted({f"{type(value).__module__}.{type(value).__qualname__}" for value in gc.garbage
                       if str(getattr(value, "__module__", type(value).__module__)).startswith("bootcamp_core")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == []


# ------------------------------------------------------------------------------------ one tool call, as verl makes it
def test_execute_tool_sorts_the_models_mistakes_from_infrastructure_failures():
    from bootcamp_core.episode.tool_calls import execute_tool

    async def call(tool: Tool, parameters: Any, timeout_s: float = 5.0) -> Any:
        try:
            return await execute_tool(tool, "i1", parameters, timeout_s=timeout_s)
        except (ModelError, InfrastructureError) as error:
            return type(error).__name__, str(error)

    async def calls() -> list:
        sleepy = Sleepy()
        await sleepy.create("i1", identity={})
        return [
            await call(sleepy, {"tag": "a"}),
            await call(sleepy, ["not", "an", "object"]),
            await call(sleepy, {"seconds": 5}, timeout_s=0.05),
            await call(Boom(), {}),
            await call(Boom(), {"infrastructure": True}),
        ]

    assert anyio.run(calls) == [
        ("slept a", 0.5, {"tag": "a"}),
        ("ModelError", "arguments of sleepy must be a JSON object, got list"),
        ("ModelError", "sleepy timed out after 0.05 s"),
        ("ModelError", "boom failed: RuntimeError: kaboom"),
        ("InfrastructureError", "the sandbox died"),
    ]
