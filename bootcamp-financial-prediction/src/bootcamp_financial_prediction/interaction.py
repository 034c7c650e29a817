"""The answer feedback: asks again while the forecast is missing, unparsable or incomplete; ends on a well-formed one.

The feedback never says how good the forecast is, so nothing about the hidden year reaches the model.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_core import Interaction, last_assistant_text
from bootcamp_financial_prediction.answer import ANSWER_FORMAT, parse_answer
from bootcamp_financial_prediction.scoring import score_forecast

__all__ = ["AnswerFeedback"]

#: Turns without a well-formed forecast the interaction tolerates before it ends the episode.
MAX_UNANSWERED = 3


class AnswerFeedback(Interaction):
    """A complete forecast ends the episode and is scored; anything else gets feedback, up to ``max_unanswered``."""

    name: ClassVar[str] = "answer_feedback"

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no answer given."""
        instance_id = await super().start_interaction(instance_id, identity, **kwargs)
        self.state(instance_id).update(unanswered=0, score=0.0)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """Judge the last assistant message: (terminate, feedback, turn score, ``{"unanswered"}``)."""
        state = self.state(instance_id)
        parsed = parse_answer(last_assistant_text(messages))
        if parsed is not None and parsed.complete:
            try:
                state["score"] = score_forecast(parsed.values, state["identity"]).score
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):  # an identity without a hidden year
                state["score"] = 0.0
            return True, "Forecast received: all 21 line items read.", state["score"], {"unanswered": state["unanswered"]}
        state["unanswered"] += 1
        extra = {"unanswered": state["unanswered"]}
        if state["unanswered"] >= int(self.config.get("max_unanswered", MAX_UNANSWERED)):
            return True, "No complete forecast was given; the episode ends.", 0.0, extra
        if parsed is None:
            problem = "I could not find a forecast: no fenced JSON block with the line items."
        else:
            problems = []
            if parsed.missing:
                problems.append(f"missing items: {', '.join(parsed.missing)}")
            if parsed.invalid:
                problems.append(f"not numbers: {', '.join(parsed.invalid)}")
            problem = "The forecast is incomplete (" + "; ".join(problems) + ")."
        return False, f"{problem} Give all 21 line items in exactly this form:\n\n{ANSWER_FORMAT}", 0.0, extra

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The score of the forecast that ended the episode (0 until then)."""
        return float(self.state(instance_id)["score"])
