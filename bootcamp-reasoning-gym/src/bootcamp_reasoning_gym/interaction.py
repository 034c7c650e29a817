"""The feedback interaction: a wrong answer is told so and may try again, up to ``max_attempts`` answers."""

from __future__ import annotations

from typing import ClassVar

from bootcamp_core import AnswerFeedback
from bootcamp_reasoning_gym.answer import ANSWER_INSTRUCTION
from bootcamp_reasoning_gym.reward import ReasoningGymReward

__all__ = ["FeedbackInteraction"]


class FeedbackInteraction(AnswerFeedback):
    """Scores each boxed answer with the dataset's verifier: "Correct." ends the episode, a wrong one gets another
    try (config ``max_attempts``, default 3); the right answer is never revealed."""

    name: ClassVar[str] = "feedback"
    reward = ReasoningGymReward
    max_attempts: ClassVar[int] = 3
    max_unanswered: ClassVar[int] = 3
    answer_format: ClassVar[str] = ANSWER_INSTRUCTION
    hint: ClassVar[str] = "Reread the question, check your reasoning and answer again in the same form."
