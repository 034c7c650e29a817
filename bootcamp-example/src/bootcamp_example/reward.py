"""The reward: the last ``"result"`` in the answer against the exact value, within a relative tolerance."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bootcamp_core import Reward, config_number
from bootcamp_example.answer import MIN_SCALE, extract_result, relative_error

__all__ = ["ArithmeticReward", "soft_score"]

#: Orders of magnitude of relative error (beyond the tolerance) over which the soft reward falls from 1 to 0.
SOFT_DECADES = 8.0


def soft_score(error: float, tolerance: float, decades: float = SOFT_DECADES) -> float:
    """``1 - log10(error / tolerance) / decades`` clamped to [0, 1]: 1 within tolerance, 0 at ``decades`` beyond it."""
    if error <= tolerance:
        return 1.0
    if not math.isfinite(error) or decades <= 0:
        return 0.0
    return max(0.0, 1.0 - math.log10(error / max(tolerance, MIN_SCALE)) / decades)


class ArithmeticReward(Reward):
    """1.0 when ``|x - e| / max(|e|, 1e-15) <= tolerance``, else 0.0; ``soft=True`` gives partial credit by distance.

    Soft reward: ``1 - log10(relative_error / tolerance) / soft_decades`` clamped to [0, 1], so it is 1 within the
    tolerance and reaches 0 at ``soft_decades`` (config, default 8) orders of magnitude beyond it: with the default
    tolerance 1e-8, a relative error of 100% scores 0. Tool use never enters the score.
    """

    name: ClassVar[str] = "arithmetic"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.soft_decades = config_number(self, config, "soft_decades", SOFT_DECADES, low=0.0)

    def extract_output(self, output: str) -> float | None:
        """The number of the last ``"result": <number>`` in the output, or ``None``."""
        return extract_result(output)

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """Exact-within-tolerance score, or the soft score when the verify kwarg ``soft`` is true."""
        try:
            tolerance = float(identity.get("tolerance", 0.0))
            error = relative_error(extracted, identity["expected_result"])
        except (AttributeError, KeyError, TypeError, ValueError):
            return 0.0
        if kwargs.get("soft"):
            decades = kwargs.get("soft_decades", self.soft_decades)
            return soft_score(error, tolerance, float(decades))
        return 1.0 if error <= tolerance else 0.0
