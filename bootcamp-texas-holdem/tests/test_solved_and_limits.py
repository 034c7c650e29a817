"""What hold'em tells the harness: the turn limits a match needs, and the score that means the match was won."""

from __future__ import annotations

import pytest

from bootcamp_core import Registry
from bootcamp_texas_holdem.game import match_score


def test_the_generator_recommends_limits_a_whole_match_fits_in(registry: Registry) -> None:
    limits = registry.get_class("generator", "texas_holdem/heads_up").limits
    # a 40-hand match takes about 60 to 220 assistant turns, one tool call each (two user turns at most per turn)
    assert limits["max_assistant_turns"] >= 240 and limits["max_user_turns"] >= 2 * limits["max_assistant_turns"]


@pytest.mark.parametrize("scale", [1.0, 5_000.0, 500_000.0])
def test_solved_means_the_match_was_won(registry: Registry, scale: float) -> None:
    threshold = registry.get_class("reward", "texas_holdem/chips").solved_threshold

    def solved(score: float) -> bool:  # DESIGN.md's rule
        return score >= threshold - 1e-9

    assert solved(match_score(1, scale)) and solved(match_score(1_000, scale))
    assert not solved(match_score(0, scale)) and not solved(match_score(-1, scale))
