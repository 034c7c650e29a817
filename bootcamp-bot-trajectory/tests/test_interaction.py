"""The answer interaction: feedback on a missing or unreadable answer, the end of the episode on a well-formed one."""

from __future__ import annotations

import pytest

from bootcamp_bot_trajectory.answer import ANSWER_FORMAT, format_answer
from bootcamp_bot_trajectory.interaction import TrajectoryFeedback
from bootcamp_core import Registry
from bootcamp_core.testing import converse

REACHING_X = [0.0, 1.5708, 0.0, 0.0, 0.0, 0.0, 0.0]
RECEIVED = "Answer received; the episode ends."


@pytest.fixture
def interaction(registry: Registry) -> TrajectoryFeedback:
    return registry.component("interaction", "bot_trajectory/answer_feedback")


def talk(interaction: TrajectoryFeedback, identity: dict, *replies: object) -> tuple[list[tuple], float]:
    return converse(interaction, identity, *replies, prompt="plan a path")


def test_a_solving_answer_ends_the_episode_with_score_one(interaction, identity_for) -> None:
    responses, score = talk(interaction, identity_for(), format_answer([[0.0] * 7, REACHING_X]))
    assert responses == [(True, RECEIVED, 1.0, {"attempts": 1})]
    assert score == 1.0


def test_a_wrong_but_well_formed_answer_ends_it_too_with_the_same_words(interaction, identity_for) -> None:
    # the feedback must not tell a solving path from a failing one: the path is judged once, as the final answer
    responses, score = talk(interaction, identity_for(), format_answer([[0.0] * 7]), "again")
    assert responses == [(True, RECEIVED, 0.0, {"attempts": 1})]
    assert score == 0.0


def test_a_missing_answer_gets_the_format(interaction, identity_for) -> None:
    responses, score = talk(interaction, identity_for(), "Let me think.", format_answer([[0.0] * 7, REACHING_X]))
    terminate, feedback, turn_score, extra = responses[0]
    assert (terminate, turn_score, extra) == (False, 0.0, {"attempts": 0, "unanswered": 1})
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
    responses, _ = talk(interaction, identity_for(), reply)
    terminate, feedback, _, extra = responses[0]
    assert not terminate and extra == {"attempts": 0, "unanswered": 1}
    assert feedback.startswith(f"Your answer could not be read: {problem}")
    assert feedback.endswith(f". Give it again in exactly this form:\n\n{ANSWER_FORMAT}")


def test_it_always_ends(interaction, identity_for) -> None:
    responses, score = talk(interaction, identity_for(), *[f"hmm {turn}" for turn in range(10)])
    assert len(responses) == 3 and responses[-1][:3] == (True, "No well-formed final answer was given; the episode ends.", 0.0)
    assert score == 0.0
    responses, _ = talk(TrajectoryFeedback(max_unanswered=1), identity_for(), "hmm", "hmm")
    assert len(responses) == 1 and responses[0][0] is True


def test_content_parts_are_read(interaction, identity_for) -> None:
    parts = [{"type": "text", "text": "Here:"}, {"type": "text", "text": format_answer([[0.0] * 7, REACHING_X])}]
    responses, score = talk(interaction, identity_for(), parts)
    assert responses[0][0] is True and score == 1.0


def test_the_reward_config_sets_how_the_answer_is_scored(identity_for) -> None:
    # a path through a box: strict scores it 0, the soft reward gives the share of the path before the collision
    identity = identity_for([([0.45, 0.0, 1.05], [0.05, 0.05, 0.05])])
    answer = format_answer([[0.0] * 7, REACHING_X])
    _, strict = talk(TrajectoryFeedback(), identity, answer)
    [(terminate, feedback, turn_score, _)], soft = talk(TrajectoryFeedback(reward_config={"soft": True}), identity,
                                                        answer)
    assert strict == 0.0 and 0.0 < soft == turn_score < 0.4
    assert (terminate, feedback) == (True, RECEIVED)


def test_an_identity_of_another_bootcamp_is_refused(interaction) -> None:
    with pytest.raises(ValueError, match="no 'start'"):
        talk(interaction, {"expression": "1 + 2"}, "hmm")
