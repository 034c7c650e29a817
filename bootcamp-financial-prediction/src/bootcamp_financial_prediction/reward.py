"""The reward: the forecast in the final answer scored against the hidden year (formula in
:mod:`bootcamp_financial_prediction.scoring`)."""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_core import Reward
from bootcamp_financial_prediction.answer import parse_answer
from bootcamp_financial_prediction.scoring import score_forecast

__all__ = ["ForecastReward"]


class ForecastReward(Reward):
    """``gate × max(0, accuracy − penalty)`` (see :mod:`bootcamp_financial_prediction.scoring`); tools never count."""

    name: ClassVar[str] = "forecast"
    #: Solved = a forecast an analyst would accept: the statements tie out (the gate is open) and the items are on
    #: average within about one scale of the hidden year (one scale off on every item scores exp(-1/4.5) ~ 0.80
    #: with the default sigmas), with little or no guidance broken.
    solved_threshold: ClassVar[float] = 0.8

    def extract_output(self, output: str) -> dict[str, float] | None:
        """The 26 items of the last fenced JSON block, or ``None`` when any is missing or not a number."""
        parsed = parse_answer(output)
        return dict(parsed.values) if parsed is not None and parsed.complete else None

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """The forecast's score; 0 for an identity without a hidden year."""
        try:
            return score_forecast(extracted, identity).score
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return 0.0
