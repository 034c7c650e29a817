"""The feedback interaction: checks each final answer with the arithmetic reward and lets the model retry, without
revealing the value."""

from __future__ import annotations

from typing import ClassVar

from bootcamp_core import AnswerFeedback
from bootcamp_example.answer import ANSWER_FORMAT
from bootcamp_example.reward import ArithmeticReward

__all__ = ["FeedbackInteraction"]


class FeedbackInteraction(AnswerFeedback):
    """Scores each answer with the reward: "Correct." ends the episode; a wrong one gets a hint, up to ``max_attempts``
    answers. Turns with no answer get the format reminder; after ``max_unanswered`` of them the episode ends as well.
    """

    name: ClassVar[str] = "feedback"
    reward = ArithmeticReward
    max_attempts: ClassVar[int] = 3
    max_unanswered: ClassVar[int] = 3
    answer_format: ClassVar[str] = ANSWER_FORMAT
    hint: ClassVar[str] = (
        "Check your work: use the `calculator` tool on sub-expressions (each product or quotient first, then the "
        "sums), or on the whole expression, and answer again in the same form."
    )
