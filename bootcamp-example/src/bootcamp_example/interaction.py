"""The feedback interaction: checks each final answer and lets the model retry, without revealing the value."""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_core import Interaction, last_assistant_text
from bootcamp_example.answer import ANSWER_FORMAT, extract_result, within_tolerance

__all__ = ["FeedbackInteraction"]

MAX_ATTEMPTS = 3
#: Turns without an answer the interaction tolerates before it ends the episode (so it always terminates).
MAX_UNANSWERED = 3


class FeedbackInteraction(Interaction):
    """Scores each answer: "Correct." ends the episode; a wrong one gets a hint, up to ``max_attempts`` answers.

    Turns with no answer get the format reminder; after ``max_unanswered`` of them the episode ends as well.
    """

    name: ClassVar[str] = "feedback"

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no answers given."""
        instance_id = await super().start_interaction(instance_id, identity, **kwargs)
        self.state(instance_id).update(attempts=0, unanswered=0, last_score=0.0)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """Judge the last assistant message: (terminate, feedback, turn score, ``{"attempts"}``)."""
        state = self.state(instance_id)
        answer = extract_result(last_assistant_text(messages))
        if answer is None:
            state["last_score"] = 0.0
            state["unanswered"] += 1
            extra = {"attempts": state["attempts"], "unanswered": state["unanswered"]}
            if state["unanswered"] >= int(self.config.get("max_unanswered", MAX_UNANSWERED)):
                return True, "No final answer was given; the episode ends.", 0.0, extra
            feedback = f"I could not find a final answer. Give it in exactly this form:\n\n{ANSWER_FORMAT}"
            return False, feedback, 0.0, extra
        state["attempts"] += 1
        extra = {"attempts": state["attempts"]}
        if within_tolerance(answer, state["identity"]):
            state["last_score"] = 1.0
            return True, "Correct.", 1.0, extra
        state["last_score"] = 0.0
        left = int(self.config.get("max_attempts", MAX_ATTEMPTS)) - state["attempts"]
        if left <= 0:
            return True, "That is not correct, and no attempts are left.", 0.0, extra
        feedback = (
            "That is not correct. Check your work: use the `calculator` tool on sub-expressions (each product "
            "or quotient first, then the sums), or on the whole expression, and answer again in the same form. "
            f"{left} attempt{'s' if left != 1 else ''} left."
        )
        return False, feedback, 0.0, extra

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The score of the last judged turn."""
        return float(self.state(instance_id)["last_score"])
