"""The answer interaction: feedback on a missing or unreadable answer, the end of the episode on a well-formed one."""

from __future__ import annotations

import asyncio

import pytest

from bootcamp_bot_trajectory.answer import ANSWER_FORMAT, format_answer
from bootcamp_bot_trajectory.interaction import AnswerFeedback
from bootcamp_core import Registry

REACHING_X = [0.0, 1.5708, 0.0, 0.0, 0.0, 0.0, 0.0]


@pytest.fixture
def interaction(registry: Registry) -> AnswerFeedback:
    return registry.component("interaction", "bot_trajectory/answer_feedback")


def converse(interaction: AnswerFeedback, identity: dict, *replies: object) -> tuple[list[tuple], float]:
    """Each assistant reply in turn until the episode ends: (every response, the final score)."""

    async def episode() -> tuple[list[tuple], float]:
        instance_id = await interaction.start_interaction(None, identity=identity)
        messages: list[dict] = [{"role": "user", "content": "plan a path"}]
        responses = []
        for reply in replies:
            messages.append({"role": "assistant", "content": reply})
            response = await interaction.generate_response(instance_id, list(messages))
            responses.append(response)
            if response[0]:
                break
            messages.append({"role": "user", "content": response[1]})
        score = await interaction.calculate_score(instance_id)
        await interaction.finalize_interaction(instance_id)
        await interaction.finalize_interaction(instance_id)
        return responses, score

    return asyncio.run(episode())


def test_a_solving_answer_ends_the_episode_with_score_one(interaction, identity_for) -> None:
    responses, score = converse(interaction, identity_for(), format_answer([[0.0] * 7, REACHING_X]))
    assert responses == [(True, "Answer received; the episode ends.", 1.0, {"unanswered": 0})]
    assert score == 1.0


def test_a_wrong_but_well_formed_answer_ends_it_too(interaction, identity_for) -> None:
    responses, score = converse(interaction, identity_for(), format_answer([[0.0] * 7]), "again")
    assert responses == [(True, "Answer received; the episode ends.", 0.0, {"unanswered": 0})]
    assert score == 0.0


def test_a_missing_answer_gets_the_format(interaction, identity_for) -> None:
    responses, score = converse(interaction, identity_for(), "Let me think.",
                                format_answer([[0.0] * 7, REACHING_X]))
    terminate, feedback, turn_score, extra = responses[0]
    assert (terminate, turn_score, extra) == (False, 0.0, {"unanswered": 1})
    assert feedback == f"I could not find a final answer. Give it in exactly this form:\n\n{ANSWER_FORMAT}"
    assert responses[1][0] is True and score == 1.0


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ('```json\n{"waypoints": [[0, 0, 0, 0, 0, 0, 0], [0, 1.57, 0, 0, 0, 0]]}\n```',
         "waypoint 1 has 6 values; the arm has 7 joints, give one angle each"),
        ('{"waypoints": [[0, 0, 0, 0, 0, 0, 0],]}', "the value of \"waypoints\" is not valid JSON"),
        ('{"waypoints": [[0, 0, 0, 0, 0, 0, NaN]]}', "waypoint 0[6] (joint 7) must be a finite number, got nan"),
        ('{"waypoints": []}', "waypoints is empty"),
        # hostile numbers and nesting get feedback too, never an exception out of the interaction
        ('{"waypoints": [[1' + "0" * 400 + ', 0, 0, 0, 0, 0, 0]]}',
         "waypoint 0[0] (joint 1) must be a finite number, got an integer of 401 digits"),
        ('{"waypoints": ' + "[" * 100_000, "the value of \"waypoints\" is nested too deeply"),
    ],
)
def test_an_unreadable_answer_gets_what_is_wrong(interaction, identity_for, reply: str, problem: str) -> None:
    responses, _ = converse(interaction, identity_for(), reply)
    terminate, feedback, _, extra = responses[0]
    assert not terminate and extra == {"unanswered": 1}
    assert feedback.startswith(f"Your answer could not be read: {problem}") and ANSWER_FORMAT in feedback


def test_it_always_ends(interaction, identity_for) -> None:
    responses, score = converse(interaction, identity_for(), *[f"hmm {turn}" for turn in range(10)])
    ending = "No well-formed final answer was given; the episode ends."
    assert len(responses) == 3 and responses[-1][:3] == (True, ending, 0.0)
    assert score == 0.0
    limited = AnswerFeedback(max_unanswered=1)
    responses, _ = converse(limited, identity_for(), "hmm", "hmm")
    assert len(responses) == 1 and responses[0][0] is True


def test_content_parts_are_read(interaction, identity_for) -> None:
    parts = [{"type": "text", "text": "Here:"}, {"type": "text", "text": format_answer([[0.0] * 7, REACHING_X])}]
    responses, score = converse(interaction, identity_for(), parts)
    assert responses[0][0] is True and score == 1.0
