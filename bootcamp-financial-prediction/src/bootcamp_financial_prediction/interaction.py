"""The answer feedback: asks again while the forecast is missing, unparsable or incomplete; ends on a well-formed one.

The feedback never says how good the forecast is, so nothing about the hidden year reaches the model.
"""

from __future__ import annotations

from typing import ClassVar

import bootcamp_core
from bootcamp_financial_prediction.answer import ANSWER_FORMAT, parse_answer
from bootcamp_financial_prediction.items import ITEM_KEYS
from bootcamp_financial_prediction.reward import ForecastReward

__all__ = ["AnswerFeedback", "ForecastFeedback"]


class ForecastFeedback(bootcamp_core.AnswerFeedback):
    """A complete forecast ends the episode, scored by the reward and only acknowledged; anything else is told what is
    wrong with it, up to ``max_unanswered`` turns."""

    name: ClassVar[str] = "answer_feedback"
    reward = ForecastReward
    max_unanswered: ClassVar[int] = 3
    answer_format: ClassVar[str] = ANSWER_FORMAT
    # one answer, and not a word on its score: any feedback on it would tell the model about the hidden year
    reveal: ClassVar[bool] = False
    received: ClassVar[str] = f"Forecast received: all {len(ITEM_KEYS)} line items read."
    gave_up: ClassVar[str] = "No complete forecast was given; the episode ends."

    def unanswered_feedback(self, text: str) -> str:
        """Whether a forecast was found at all, else the items missing or not numbers; then the required form."""
        parsed = parse_answer(text)
        if parsed is None:
            problem = "I could not find a forecast: no fenced JSON block with the line items."
        else:
            problems = []
            if parsed.missing:
                problems.append(f"missing items: {', '.join(parsed.missing)}")
            if parsed.invalid:
                problems.append(f"not numbers: {', '.join(parsed.invalid)}")
            problem = "The forecast is incomplete (" + "; ".join(problems) + ")."
        return f"{problem} Give all {len(ITEM_KEYS)} line items in exactly this form:\n\n{ANSWER_FORMAT}"


#: The name this interaction had before it was built on :class:`bootcamp_core.AnswerFeedback`.
AnswerFeedback = ForecastFeedback
