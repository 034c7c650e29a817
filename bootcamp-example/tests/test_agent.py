"""The reference agent through the real rollout engine: solves every level, uses the tool, answers from its output."""

from __future__ import annotations

import asyncio
import json
import random
from importlib import resources

import pytest
import yaml

from bootcamp_core import EpisodeResult, Registry, RolloutLimits
from bootcamp_core.testing import generate_records, play_episodes
from bootcamp_example.agent import CalculatorAgent
from bootcamp_example.answer import format_answer

LEVELS = yaml.safe_load((resources.files("bootcamp_example") / "configs" / "default.yaml").read_text())[
    "instruction_generators"
]


@pytest.fixture(scope="module")
def episodes(registry: Registry) -> dict[str, list[EpisodeResult]]:
    """Every level of the default config, played by the reference agent through the real rollout engine."""
    records = generate_records("example", registry, overrides={"split_samples": "test:200"})
    by_level: dict[str, list[EpisodeResult]] = {}
    for result in play_episodes(records, registry):
        by_level.setdefault(result.generator_name, []).append(result)
    return by_level


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_solves_every_level_within_the_default_limits(episodes: dict[str, list[EpisodeResult]], level: str) -> None:
    limits = RolloutLimits()
    assert episodes.get(level), f"no {level} records generated"
    for result in episodes[level]:
        assert (result.score, result.success, result.error_type, result.finish_reason) == (1.0, True, None, "terminated")
        assert result.turn_record["assistant_turns"] <= limits.max_assistant_turns
        assert result.turn_record["user_turns"] <= limits.max_user_turns
        assert not result.reached_max_turns


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_calls_the_tool_and_answers_from_its_output(episodes: dict[str, list[EpisodeResult]], level: str) -> None:
    for result in episodes[level]:
        assert result.turn_record["tool_calls"] >= 1 and result.tool_calls[0].name == "calculator"
        tool_output = [message for message in result.messages if message["role"] == "tool"][-1]["content"]
        final = result.messages[-1]
        assert final["role"] == "assistant" and not final.get("tool_calls")
        # the answer is the tool's output, verbatim, in the required format
        assert format_answer(tool_output) in final["content"]
        assert result.extracted_output == float(tool_output)


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
