"""The reward: the match score from the tools' state, whatever the final message says."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bootcamp_core import Reward

__all__ = ["ChipsReward", "score_from_tools"]

#: The tools whose ``calc_reward`` is the match score, in the order they are read.
SCORING_TOOLS = ("act", "table")


def score_from_tools(tool_scores: Any) -> float:
    """The match score in ``tool_scores`` (``Tool.name`` -> ``calc_reward``), clamped to [0, 1]; 0 when absent."""
    if not isinstance(tool_scores, dict):
        return 0.0
    for name in SCORING_TOOLS:
        value = tool_scores.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return min(1.0, max(0.0, float(value)))
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

    def extract_output(self, output: str) -> str | None:
        """The final message, stripped (informative only: the score comes from the tools)."""
        text = output.strip() if isinstance(output, str) else ""
        return text or None

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """The match score from ``tool_scores``."""
        return score_from_tools(kwargs.get("tool_scores"))

    def verify_score(self, output: str, identity: dict, **kwargs: Any) -> float:
        """The match score from ``tool_scores``, with or without a final answer; never raises."""
        return score_from_tools(kwargs.get("tool_scores"))
