"""The feedback interaction: no answer, wrong, right, and the attempt limit."""

from __future__ import annotations

import asyncio

import pytest

from bootcamp_core import Registry
from bootcamp_example.answer import ANSWER_FORMAT
from bootcamp_example.interaction import FeedbackInteraction

IDENTITY = {"expression": "123 + 456 * 789 / 12", "expected_result": 30105.0, "tolerance": 1e-8}
PROMPT = {"role": "user", "content": "Compute 123 + 456 * 789 / 12."}


def answer(value: object) -> dict:
    return {"role": "assistant", "content": f'```json\n{{"result": {value}}}\n```'}


def play(interaction: FeedbackInteraction, turns: list[dict]) -> tuple[list[tuple], float]:
    """Each assistant turn in order, judged; returns every (terminate, feedback, score, extra) and the final score."""

    async def episode() -> tuple[list[tuple], float]:
        instance_id = await interaction.start_interaction(None, identity=IDENTITY)
        messages, results = [PROMPT], []
        for turn in turns:
            messages.append(turn)
            result = await interaction.generate_response(instance_id, list(messages))
            results.append(result)
            messages.append({"role": "user", "content": result[1]})
        score = await interaction.calculate_score(instance_id)
        await interaction.finalize_interaction(instance_id)
        assert instance_id not in interaction.instances
        await interaction.finalize_interaction(instance_id)  # twice is harmless
        return results, score

    return asyncio.run(episode())


@pytest.fixture
def interaction(registry: Registry) -> FeedbackInteraction:
    return registry.component("interaction", "example/feedback")


def test_no_answer_asks_for_the_format(interaction: FeedbackInteraction) -> None:
    results, score = play(interaction, [{"role": "assistant", "content": "Let me think about it."}])
    terminate, feedback, turn_score, extra = results[0]
    assert (terminate, turn_score, extra) == (False, 0.0, {"attempts": 0, "unanswered": 1})
    assert ANSWER_FORMAT in feedback
    assert score == 0.0


def test_turns_without_an_answer_end_the_episode_after_max_unanswered() -> None:
    silent = {"role": "assistant", "content": "Still thinking."}
    results, _ = play(FeedbackInteraction(max_unanswered=2), [silent, silent])
    assert [result[0] for result in results] == [False, True]
    assert results[-1][3] == {"attempts": 0, "unanswered": 2}
    results, _ = play(FeedbackInteraction(), [silent, answer(1), silent, silent])
    assert [result[0] for result in results] == [False, False, False, True]


def test_right_answer_ends_the_episode(interaction: FeedbackInteraction) -> None:
    results, score = play(interaction, [answer(30105)])
    assert results == [(True, "Correct.", 1.0, {"attempts": 1})]
    assert score == 1.0


def test_wrong_answer_gets_a_hint_without_the_value(interaction: FeedbackInteraction) -> None:
    results, score = play(interaction, [answer(30104)])
    terminate, feedback, turn_score, extra = results[0]
    assert (terminate, turn_score, extra) == (False, 0.0, {"attempts": 1})
    assert "not correct" in feedback and "calculator" in feedback and "2 attempts left" in feedback
    assert "30105" not in feedback
    assert score == 0.0


def test_retry_after_a_wrong_answer(interaction: FeedbackInteraction) -> None:
    results, score = play(interaction, [answer(1), {"role": "assistant", "content": "hmm"}, answer(30105)])
    assert [result[0] for result in results] == [False, False, True]
    assert [result[2] for result in results] == [0.0, 0.0, 1.0]
    assert score == 1.0


def test_max_attempts_ends_the_episode(interaction: FeedbackInteraction) -> None:
    results, score = play(interaction, [answer(1), answer(2), answer(3)])
    assert [result[0] for result in results] == [False, False, True]
    assert results[-1][3] == {"attempts": 3}
    assert "no attempts are left" in results[-1][1]
    assert score == 0.0


def test_max_attempts_is_configurable() -> None:
    results, _ = play(FeedbackInteraction(max_attempts=1), [answer(1)])
    assert results[0][0] is True


def test_judges_the_last_assistant_message_and_content_parts(interaction: FeedbackInteraction) -> None:
    parts = {"role": "assistant", "content": [{"type": "text", "text": '```json\n{"result": 30105.0}\n```'}]}
    results, score = play(interaction, [parts])
    assert results[0][:3] == (True, "Correct.", 1.0)

    async def trailing_tool_message() -> tuple:
        instance_id = await interaction.start_interaction(None, identity=IDENTITY)
        messages = [PROMPT, answer(30105), {"role": "tool", "content": '{"result": 1}'}]
        return await interaction.generate_response(instance_id, messages)

    assert asyncio.run(trailing_tool_message())[0] is True


def test_episodes_are_independent(interaction: FeedbackInteraction) -> None:
    async def episodes() -> tuple[float, float]:
        first = await interaction.start_interaction(None, identity=IDENTITY)
        second = await interaction.start_interaction(None, identity={**IDENTITY, "expected_result": 1.0})
        await interaction.generate_response(first, [PROMPT, answer(30105)])
        await interaction.generate_response(second, [PROMPT, answer(30105)])
        scores = await interaction.calculate_score(first), await interaction.calculate_score(second)
        await interaction.finalize_interaction(first)
        await interaction.finalize_interaction(second)
        return scores

    assert asyncio.run(episodes()) == (1.0, 0.0)
