"""The feedback interaction on a real reasoning-gym record: right, wrong, retry and the attempt limit."""

from __future__ import annotations

import random

import pytest
from bootcamp_reasoning_gym.answer import format_answer
from bootcamp_reasoning_gym.interaction import FeedbackInteraction

from bootcamp_core.testing import converse


@pytest.fixture(scope="module")
def identity(registry):
    return registry.component("generator", "reasoning_gym/chain_sum", {}).case_generator(random.Random(3))


def test_right_answer_ends_the_episode(registry, identity):
    interaction = registry.component("interaction", "reasoning_gym/feedback")
    responses, score = converse(interaction, identity, format_answer(str(identity["entry"]["answer"])))
    assert responses[0][:3] == (True, "Correct.", 1.0)
    assert score == 1.0


def test_wrong_answers_get_retries_up_to_max_attempts_without_the_answer(identity):
    right = str(identity["entry"]["answer"])
    wrong = format_answer(right + "1")
    responses, _ = converse(FeedbackInteraction(max_attempts=2), identity, wrong, wrong)
    assert [response[0] for response in responses] == [False, True]
    assert all(right not in response[1] for response in responses)
    responses, score = converse(FeedbackInteraction(max_attempts=3), identity, wrong, format_answer(right))
    assert [response[0] for response in responses] == [False, True]
    assert responses[-1][1:3] == ("Correct.", 1.0)
    assert score == 1.0


def test_feedback_on_a_sandboxed_verifier_retries_after_a_hostile_answer(registry, tmp_path):
    identity = registry.component("generator", "reasoning_gym/spiral_matrix", {}).case_generator(random.Random(1))
    hostile = format_answer(f"open({str(tmp_path / 'written')!r}, 'w')")
    responses, score = converse(FeedbackInteraction(max_attempts=2), identity, hostile,
                                format_answer(identity["entry"]["answer"]))
    assert [response[0] for response in responses] == [False, True]
    assert responses[0][2] == 0.0 and responses[-1][1:3] == ("Correct.", 1.0)
    assert score == 1.0 and list(tmp_path.iterdir()) == []
