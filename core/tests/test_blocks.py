"""The shared building blocks: message text, tool-call messages, per-episode call budgets and answer feedback."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import anyio
import pytest

from bootcamp_core import (
    AnswerFeedback,
    CallBudget,
    ConfigError,
    ReferenceAgent,
    Reward,
    Tool,
    last_assistant_text,
    message_text,
    tool_call_message,
)


def test_message_text_and_last_assistant_text():
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]
    assert message_text(parts) == "a\nb" and message_text("plain") == "plain" and message_text(None) == ""
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": parts},
                {"role": "tool", "content": "t"}, {"role": "assistant", "content": None, "tool_calls": []}]
    assert last_assistant_text(messages) == ""
    assert last_assistant_text(messages[:3]) == "a\nb"
    assert last_assistant_text([{"role": "user", "content": "q"}]) == "" and last_assistant_text([]) == ""


def test_tool_call_message_numbers_its_calls_after_those_already_made():
    first = tool_call_message([], ("calculator", {"expression": "1+2"}))
    assert first == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "calculator", "arguments": json.dumps({"expression": "1+2"})}}]}
    messages = [first, {"role": "tool", "tool_call_id": "call_0", "content": "3"}]
    second = tool_call_message(messages, ("table", {}), ("act", {"action": "fold"}), content="Folding.")
    assert [call["id"] for call in second["tool_calls"]] == ["call_1", "call_2"]
    assert second["content"] == "Folding." and json.loads(second["tool_calls"][1]["function"]["arguments"]) == {
        "action": "fold"}
    with pytest.raises(ValueError, match="at least one"):
        tool_call_message(messages)


class Probe(Tool):
    """A tool with a budget from the identity, as bootcamps keep one."""

    name = "probe"
    description = "Counts calls."
    parameters = {"type": "object", "properties": {}}

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.budget = CallBudget()

    async def create(self, instance_id=None, identity=None, **kwargs):
        instance_id = await super().create(instance_id, identity, **kwargs)
        self.budget.open(instance_id, (identity or {}).get("budget", 2))
        return instance_id

    async def execute(self, instance_id, parameters, **kwargs):
        if not self.budget.take(instance_id):
            return "Error: the budget is used up.", 0.0, self.budget.metrics(instance_id)
        await anyio.sleep(0)
        return f"{self.budget.left(instance_id)} left", 0.0, self.budget.metrics(instance_id)

    async def release(self, instance_id, **kwargs):
        self.budget.close(instance_id)
        await super().release(instance_id, **kwargs)


def test_a_call_budget_survives_a_repeated_create_of_the_instance_and_ends_with_release():
    tool = Probe()

    async def episode() -> list[str]:
        instance = await tool.create("episode-1", {"budget": 2})
        outputs = [(await tool.execute(instance, {}))[0]]
        await tool.create(instance, {"budget": 2})  # a runner creating the instance again
        outputs += [(await tool.execute(instance, {}))[0] for _ in range(2)]
        metrics = (await tool.execute(instance, {}))[2]
        await tool.release(instance)
        await tool.create(instance, {"budget": 1})  # a new episode under the same id starts afresh
        outputs.append((await tool.execute(instance, {}))[0])
        return outputs + [metrics]

    *outputs, metrics = anyio.run(episode)
    assert outputs == ["1 left", "0 left", "Error: the budget is used up.", "0 left"]
    assert metrics == {"calls": 2, "calls_left": 0, "refused": 2}


def test_concurrent_calls_cannot_overdraw_a_budget():
    tool = Probe()
    outputs: list[str] = []

    async def turn() -> None:
        instance = await tool.create("e", {"budget": 3})
        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(lambda: _call(tool, instance, outputs))

    anyio.run(turn)
    assert sum(not output.startswith("Error") for output in outputs) == 3
    assert tool.budget.used("e") == tool.budget.limit("e") == 3


async def _call(tool: Tool, instance: str, outputs: list[str]) -> None:
    outputs.append((await tool.execute(instance, {}))[0])


@pytest.mark.parametrize("limit", [-1, 1.5, "3", True, None])
def test_a_budget_that_is_not_a_whole_number_is_a_config_error(limit):
    with pytest.raises(ConfigError, match="whole number") as raised:
        CallBudget().open("e", limit)
    assert raised.value.field == "budget"


def test_a_budget_of_an_episode_never_opened_is_a_clear_error():
    with pytest.raises(KeyError, match="call open"):
        CallBudget().take("never")


class NumberReward(Reward):
    """The last number of the output against ``identity["answer"]``; half a point when off by one."""

    name = "number"

    def extract_output(self, output):
        found = re.findall(r"-?\d+", output)
        return int(found[-1]) if found else None

    def verify_correction(self, extracted, identity, **kwargs):
        return {0: 1.0, 1: 0.5}.get(abs(extracted - identity["answer"]), 0.0)


class NumberFeedback(AnswerFeedback):
    name = "number_feedback"
    reward = NumberReward
    answer_format = "ANSWER: <number>"


def judge(interaction: AnswerFeedback, identity: dict, answers: list[str]) -> list[tuple]:
    async def run() -> list[tuple]:
        instance = await interaction.start_interaction(identity=identity)
        turns = []
        for answer in answers:
            turns.append(await interaction.generate_response(instance, [{"role": "user", "content": "?"},
                                                                        {"role": "assistant", "content": answer}]))
            if turns[-1][0]:
                break
        turns.append(await interaction.calculate_score(instance))
        await interaction.finalize_interaction(instance)
        return turns

    return anyio.run(run)


def test_answer_feedback_ends_with_correct_when_the_reward_says_solved():
    *turns, score = judge(NumberFeedback(), {"answer": 7}, ["it is 5", "it is 6", "it is 7"])
    assert [turn[0] for turn in turns] == [False, False, True]
    assert turns[0][1] == "That is not correct. Check your work and answer again in the same form. 2 attempts left."
    assert turns[1][1].endswith("1 attempt left.") and turns[1][2] == 0.5  # the reward's own partial score
    assert turns[2][1:] == ("Correct.", 1.0, {"attempts": 3}) and score == 1.0
    assert "7" not in turns[0][1] + turns[1][1]  # the answer is never revealed


def test_answer_feedback_gives_up_after_max_attempts_and_unanswered_turns():
    *turns, score = judge(NumberFeedback(max_attempts=1), {"answer": 7}, ["3"])
    assert turns == [(True, "That is not correct, and no attempts are left.", 0.0, {"attempts": 1})] and score == 0.0
    *turns, _ = judge(NumberFeedback(), {"answer": 7}, ["no idea"] * 5)
    assert [turn[0] for turn in turns] == [False, False, True]
    assert turns[0][1] == "I could not find a final answer. Give it in exactly this form:\n\nANSWER: <number>"
    assert turns[2][1] == "No final answer was given; the episode ends." and turns[2][3] == {"attempts": 0,
                                                                                               "unanswered": 3}


def test_answer_feedback_follows_the_rewards_solved_threshold_and_config():
    class Lenient(NumberReward):
        solved_threshold = 0.5

    class LenientFeedback(NumberFeedback):
        reward = Lenient

    *turns, score = judge(LenientFeedback(), {"answer": 7}, ["6"])
    assert turns[0][:2] == (True, "Correct.") and score == 0.5


def test_answer_feedback_without_a_reward_class_is_a_config_error():
    class Broken(AnswerFeedback):
        name = "broken"

    with pytest.raises(ConfigError, match="reward must be a Reward subclass"):
        Broken()


def test_a_reference_agent_built_from_the_blocks_plays_through_the_tool():
    class Agent(ReferenceAgent):
        name = "agent"
        generators = ("g",)

        async def act(self, messages, tools, identity, rng):
            if not any(message.get("role") == "tool" for message in messages):
                return tool_call_message(messages, ("probe", {}))
            return {"role": "assistant", "content": f"ANSWER: {messages[-1]['content']}"}

    async def play() -> str:
        agent, tool = Agent(), Probe()
        instance = await tool.create(identity={"budget": 1})
        messages: list[dict] = [{"role": "user", "content": "go"}]
        call = await agent.act(messages, [Probe.openai_schema()], {}, random.Random(0))
        messages.append(call)
        text, _, _ = await tool.execute(instance, json.loads(call["tool_calls"][0]["function"]["arguments"]))
        messages.append({"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": text})
        messages.append(await agent.act(messages, [], {}, random.Random(0)))
        return last_assistant_text(messages)

    assert anyio.run(play) == "ANSWER: 0 left"


@pytest.mark.parametrize(("config", "field"), [
    ({"max_attempts": "3"}, "max_attempts"), ({"max_attempts": 0}, "max_attempts"), ({"max_attempts": True}, "max_attempts"),
    ({"max_unanswered": 1.5}, "max_unanswered"), ({"reward_config": [1, 2]}, "reward_config"),
])
def test_answer_feedback_refuses_a_bad_config_when_built(config, field):
    with pytest.raises(ConfigError) as caught:
        NumberFeedback(**config)
    assert caught.value.field == field and f"NumberFeedback: config {field} must be" in str(caught.value)
    assert NumberFeedback(max_attempts=2.0, max_unanswered=1).attempt_limit == 2


def test_config_checks_take_defaults_and_bounds():
    from bootcamp_core import config_flag, config_mapping, config_number, config_whole_number

    owner = object()
    assert config_number(owner, {}, "scale", 2) == 2.0 and config_number(owner, {"scale": 0}, "scale", 1, low=0) == 0.0
    for bad in ("1", float("nan"), float("inf"), True, None):
        with pytest.raises(ConfigError, match="config scale must be a finite number"):
            config_number(owner, {"scale": bad}, "scale", 1)
    with pytest.raises(ConfigError, match="> 0"):
        config_number(owner, {"scale": 0}, "scale", 1, above=0)
    assert config_whole_number(owner, {"n": 3.0}, "n", 1, low=0) == 3
    with pytest.raises(ConfigError, match="whole number >= 1"):
        config_whole_number(owner, {"n": 2.5}, "n", 1, low=1)
    assert config_flag(owner, {}, "soft", False) is False
    with pytest.raises(ConfigError, match="true or false"):
        config_flag(owner, {"soft": 1}, "soft", False)
    assert config_mapping(owner, {"c": None}, "c") == {} and config_mapping(owner, {"c": {"a": 1}}, "c") == {"a": 1}
