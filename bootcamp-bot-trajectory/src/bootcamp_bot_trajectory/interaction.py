"""The answer interaction: feedback on a missing or malformed answer; a well-formed answer ends the episode."""

from __future__ import annotations

from typing import Any, ClassVar

import bootcamp_core
from bootcamp_bot_trajectory.answer import ANSWER_FORMAT, find_answer
from bootcamp_bot_trajectory.reward import TrajectoryReward
from bootcamp_bot_trajectory.robot import Task

__all__ = ["AnswerFeedback", "TrajectoryFeedback"]


class TrajectoryFeedback(bootcamp_core.AnswerFeedback):
    """A turn without tool calls is read as the final answer, judged once by :class:`TrajectoryReward`.

    No ``"waypoints"`` at all gets the required format; a malformed one (bad JSON, a waypoint of 6 angles, a NaN ...)
    gets what is wrong. Either way the model may try again, up to ``max_unanswered`` turns (config, default 3). A
    well-formed answer ends the episode, scored by the reward on the answer alone (an interaction never reads a tool,
    so failed checks do not enter its turn score; ``reward_config`` configures it), with no hint about the path: the
    path is judged once, as the final answer.
    """

    name: ClassVar[str] = "answer_feedback"
    reward: ClassVar[type[bootcamp_core.Reward]] = TrajectoryReward
    answer_format: ClassVar[str | None] = ANSWER_FORMAT
    reveal: ClassVar[bool] = False
    gave_up: ClassVar[str] = "No well-formed final answer was given; the episode ends."

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no answer given (an identity that is not a task of this bootcamp is refused)."""
        Task.from_identity(identity)
        return await super().start_interaction(instance_id, identity, **kwargs)

    def unanswered_feedback(self, text: str) -> str:
        """The format when no answer was attempted, else what makes the attempted one unreadable."""
        _, problem = find_answer(text)
        if problem is None:
            return super().unanswered_feedback(text)
        return f"Your answer could not be read: {problem}. Give it again in exactly this form:\n\n{ANSWER_FORMAT}"


#: The name this interaction had before it was built on :class:`bootcamp_core.AnswerFeedback`.
AnswerFeedback = TrajectoryFeedback
