"""The answer interaction: feedback on a missing or malformed answer; a well-formed answer ends the episode."""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_bot_trajectory.answer import ANSWER_FORMAT, find_answer
from bootcamp_bot_trajectory.judge import judge_path
from bootcamp_bot_trajectory.robot import Task
from bootcamp_bot_trajectory.simulator import simulate
from bootcamp_core import Interaction, last_assistant_text

__all__ = ["AnswerFeedback"]

#: Turns without a well-formed answer the interaction tolerates before it ends the episode (so it always ends).
MAX_UNANSWERED = 3


class AnswerFeedback(Interaction):
    """A turn without tool calls is read as the final answer.

    No ``"waypoints"`` at all gets the required format; a malformed one (bad JSON, a waypoint of 6 angles, a NaN ...)
    gets what is wrong. Either way the model may try again, up to ``max_unanswered`` turns (config, default 3). A
    well-formed answer ends the episode, scored by the judge (1 solved, 0 not), with no hint about the path.
    """

    name: ClassVar[str] = "answer_feedback"

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no answer given."""
        task = Task.from_identity(identity)
        instance_id = await super().start_interaction(instance_id, identity, **kwargs)
        self.state(instance_id).update(task=task, unanswered=0, score=0.0)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """Judge the last assistant message: (terminate, feedback, turn score, ``{"unanswered"}``)."""
        state = self.state(instance_id)
        waypoints, problem = find_answer(last_assistant_text(messages))
        if waypoints is None:
            state["unanswered"] += 1
            extra = {"unanswered": state["unanswered"]}
            if state["unanswered"] >= int(self.config.get("max_unanswered", MAX_UNANSWERED)):
                return True, "No well-formed final answer was given; the episode ends.", 0.0, extra
            if problem is None:
                feedback = f"I could not find a final answer. Give it in exactly this form:\n\n{ANSWER_FORMAT}"
            else:
                feedback = (f"Your answer could not be read: {problem}. Give it again in exactly this form:\n\n"
                            f"{ANSWER_FORMAT}")
            return False, feedback, 0.0, extra
        # off the event loop, like check_path: a long path takes up to a second
        report = await simulate(judge_path, state["task"], waypoints)
        state["score"] = 1.0 if report.solved else 0.0
        return True, "Answer received; the episode ends.", state["score"], {"unanswered": state["unanswered"]}

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """1.0 when the final answer solved the task, else 0.0."""
        return float(self.state(instance_id)["score"])
