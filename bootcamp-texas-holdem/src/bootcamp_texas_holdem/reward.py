"""The reward: the match score from the tools' state, whatever the final message says."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bootcamp_core import Reward

__all__ = ["ChipsReward", "score_from_tools"]

#: The tools whose ``calc_reward`` is the match score, in the order they are read.
SCORING_TOOLS = ("act", "table")


def score_from_tools(tool_scores: Any) -> float:
    """The match score in ``tool_scores`` (``Tool.name`` -> ``calc_reward``), clamped to [0, 1]; 0 when absent.

    Only a finite real number counts: anything else (a string, NaN, infinity, an integer too large for a float) is
    skipped, and never raises.
    """
    if not isinstance(tool_scores, dict):
        return 0.0
    for name in SCORING_TOOLS:
        value = tool_scores.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        try:
            number = float(value)
        except OverflowError:  # an int beyond a float's range
            continue
        if math.isfinite(number):
            return min(1.0, max(0.0, number))
    return 0.0


class ChipsReward(Reward):
    """Chips won over the match squashed to [0, 1] (0.5 = break-even), read from ``tool_scores``.

    The tools score the match (an unfinished one as if the model folded the rest), so the score does not depend on
    whether or what the model answered at the end. Without tool scores (no tools ran) it is 0.
    """

    name: ClassVar[str] = "chips"
    #: Solved = won the match: ended ahead (of the par, with duplicate scoring) by at least a chip. Break-even
    #: scores exactly 0.5 and is not solved; one chip won scores 0.5 + 0.5 * tanh(1 / score_scale), above this for
    #: every score_scale up to 500,000.
    solved_threshold: ClassVar[float] = 0.500001

    def extract_output(self, output: str) -> str:
        """The final message, stripped, ``""`` when there is none: the score comes from the tools, so a match
        played without a final answer still scores (the base class's ``verify_score`` guard runs either way)."""
        return output.strip() if isinstance(output, str) else ""

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """The match score from ``tool_scores``."""
        return score_from_tools(kwargs.get("tool_scores"))
