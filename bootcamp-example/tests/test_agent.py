"""The reference agent driving the real tool, interaction and reward to a solved episode."""

from __future__ import annotations

import asyncio
import json
import random
from importlib import resources

import pytest
import yaml
from bootcamp_core.plugins import Registry

from bootcamp_example.agent import CalculatorAgent

LEVELS = yaml.safe_load((resources.files("bootcamp_example") / "configs" / "default.yaml").read_text())[
    "instruction_generators"
]


async def run_episode(registry: Registry, identity: dict, prompt: str, seed: int) -> tuple[list[dict], float, float]:
    """One episode wired as the rollout engine does it; returns (messages, reward score, interaction score)."""
    agent = registry.component("reference_agent", "example/calculator_agent")
    tool = registry.component("tool", "example/calculator")
    interaction = registry.component("interaction", "example/feedback")
    reward = registry.component("reward", "example/arithmetic")
    rng = random.Random(seed)
    instance_id = await tool.create(None, identity=identity)
    await interaction.start_interaction(instance_id, identity=identity)
    messages: list[dict] = [{"role": "user", "content": prompt}]
    try:
        for _ in range(6):
            message = await agent.act(messages, [tool.openai_schema()], identity, rng)
            messages.append(message)
            if message.get("tool_calls"):
                for call in message["tool_calls"]:
                    assert call["function"]["name"] == tool.name
                    text, _, _ = await tool.execute(instance_id, json.loads(call["function"]["arguments"]))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                continue
            terminate, feedback, _, _ = await interaction.generate_response(instance_id, messages)
            if terminate:
                break
            messages.append({"role": "user", "content": feedback})
        score = reward.verify_score(messages[-1]["content"], identity, messages=messages)
        return messages, score, await interaction.calculate_score(instance_id)
    finally:
        await tool.release(instance_id)
        await interaction.finalize_interaction(instance_id)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_solves_every_level(registry: Registry, level: str) -> None:
    generator = registry.component("generator", "example/arithmetic", LEVELS[level]["config"])
    for seed in range(5):
        rng = random.Random(seed)
        identity = generator.case_generator(rng)
        prompt = generator.prompt_func(identity, rng)
        messages, score, interaction_score = asyncio.run(run_episode(registry, identity, prompt, seed))
        assert (score, interaction_score) == (1.0, 1.0)
        # one tool call, then the answer
        assert [message["role"] for message in messages] == ["user", "assistant", "tool", "assistant"]


def test_first_move_is_one_calculator_call() -> None:
    identity = {"expression": "1 + 2 * 3"}
    message = asyncio.run(CalculatorAgent().act([{"role": "user", "content": "..."}], [], identity, random.Random(0)))
    assert message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "calculator", "arguments": json.dumps({"expression": "1 + 2 * 3"})},
            }
        ],
    }


def test_answers_from_the_tool_output_only() -> None:
    # No expected_result in the identity, and a tool output that disagrees with the expression: the agent reports
    # what the tool said, as a model would.
    identity = {"expression": "1 + 2 * 3"}
    messages = [
        {"role": "user", "content": "..."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_0"}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "0.33333333333333331"},
    ]
    message = asyncio.run(CalculatorAgent().act(messages, [], identity, random.Random(0)))
    assert message["role"] == "assistant" and not message.get("tool_calls")
    assert '```json\n{"result": 0.33333333333333331}\n```' in message["content"]


def test_a_tool_error_gives_no_answer(registry: Registry) -> None:
    messages = [
        {"role": "user", "content": "..."},
        {"role": "tool", "tool_call_id": "call_0", "content": "Error: division by zero."},
    ]
    message = asyncio.run(CalculatorAgent().act(messages, [], {"expression": "1 / 0"}, random.Random(0)))
    reward = registry.component("reward", "example/arithmetic")
    assert reward.extract_output(message["content"]) is None
