"""The feedback interaction: no answer, wrong, right, and the attempt limit."""

from __future__ import annotations

import asyncio

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import converse
from bootcamp_example.answer import ANSWER_FORMAT
from bootcamp_example.interaction import FeedbackInteraction

IDENTITY = {"expression": "123 + 456 * 789 / 12", "expected_result": 30105.0, "tolerance": 1e-8}
PROMPT = "Compute 123 + 456 * 789 / 12."


def answer(value: object) -> str:
    return f'```json\n{{"result": {value}}}\n```'


@pytest.fixture
def interaction(registry: Registry) -> FeedbackInteraction:
    return registry.component("interaction", "example/feedback")


def test_no_answer_asks_for_the_format(interaction: FeedbackInteraction) -> None:
    responses, score = converse(interaction, IDENTITY, "Let me think about it.", prompt=PROMPT)
    assert responses == [
        (False, f"I could not find a final answer. Give it in exactly this form:\n\n{ANSWER_FORMAT}", 0.0,
         {"attempts": 0, "unanswered": 1}),
    ]
    assert score == 0.0


def test_turns_without_an_answer_end_the_episode_after_max_unanswered() -> None:
    responses, _ = converse(FeedbackInteraction(max_unanswered=2), IDENTITY, "Still thinking.", "Still thinking.")
    assert [response[0] for response in responses] == [False, True]
    assert responses[-1][1:] == ("No final answer was given; the episode ends.", 0.0, {"attempts": 0, "unanswered": 2})
    responses, _ = converse(FeedbackInteraction(), IDENTITY, "Still thinking.", answer(1), "hmm", "hmm")
    assert [response[0] for response in responses] == [False, False, False, True]


def test_right_answer_ends_the_episode(interaction: FeedbackInteraction) -> None:
    responses, score = converse(interaction, IDENTITY, answer(30105), prompt=PROMPT)
    assert responses == [(True, "Correct.", 1.0, {"attempts": 1})]
    assert score == 1.0


def test_wrong_answer_gets_a_hint_without_the_value(interaction: FeedbackInteraction) -> None:
    responses, score = converse(interaction, IDENTITY, answer(30104), prompt=PROMPT)
    hint = ("That is not correct. Check your work: use the `calculator` tool on sub-expressions (each product or "
            "quotient first, then the sums), or on the whole expression, and answer again in the same form. "
            "2 attempts left.")
    assert responses == [(False, hint, 0.0, {"attempts": 1})]
    assert "30105" not in responses[0][1]
    assert score == 0.0


def test_retry_after_a_wrong_answer(interaction: FeedbackInteraction) -> None:
    responses, score = converse(interaction, IDENTITY, answer(1), "hmm", answer(30105))
    assert [response[0] for response in responses] == [False, False, True]
    assert [response[2] for response in responses] == [0.0, 0.0, 1.0]
    assert responses[0][1].endswith("2 attempts left.")
    assert score == 1.0


def test_max_attempts_ends_the_episode(interaction: FeedbackInteraction) -> None:
    responses, score = converse(interaction, IDENTITY, answer(1), answer(2), answer(3))
    assert [response[0] for response in responses] == [False, False, True]
    assert responses[1][1].endswith("1 attempt left.")
    assert responses[-1][1:] == ("That is not correct, and no attempts are left.", 0.0, {"attempts": 3})
    assert score == 0.0


def test_max_attempts_is_configurable() -> None:
    responses, _ = converse(FeedbackInteraction(max_attempts=1), IDENTITY, answer(1))
    assert responses[0][0] is True


def test_an_answer_within_the_tolerance_is_correct(interaction: FeedbackInteraction) -> None:
    identity = {**IDENTITY, "tolerance": 1e-3}
    assert converse(interaction, identity, answer(30120))[0][0][1] == "Correct."
    assert converse(interaction, identity, answer(30140))[0][0][1].startswith("That is not correct.")


def test_judges_the_last_assistant_message_and_content_parts(interaction: FeedbackInteraction) -> None:
    parts = {"content": [{"type": "text", "text": '```json\n{"result": 30105.0}\n```'}]}
    responses, score = converse(interaction, IDENTITY, parts)
    assert responses[0][:3] == (True, "Correct.", 1.0) and score == 1.0

    async def trailing_tool_message() -> tuple:
        instance_id = await interaction.start_interaction(None, identity=IDENTITY)
        messages = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": answer(30105)},
                    {"role": "tool", "content": '{"result": 1}'}]
        response = await interaction.generate_response(instance_id, messages)
        await interaction.finalize_interaction(instance_id)
        return response

    assert asyncio.run(trailing_tool_message())[0] is True


def test_episodes_are_independent(interaction: FeedbackInteraction) -> None:
    async def episodes() -> tuple[float, float]:
        prompt = {"role": "user", "content": PROMPT}
        first = await interaction.start_interaction(None, identity=IDENTITY)
        second = await interaction.start_interaction(None, identity={**IDENTITY, "expected_result": 1.0})
        await interaction.generate_response(first, [prompt, {"role": "assistant", "content": answer(30105)}])
        await interaction.generate_response(second, [prompt, {"role": "assistant", "content": answer(30105)}])
        scores = await interaction.calculate_score(first), await interaction.calculate_score(second)
        await interaction.finalize_interaction(first)
        await interaction.finalize_interaction(second)
        return scores

    assert asyncio.run(episodes()) == (1.0, 0.0)
