"""What the reward sees of a trajectory, the same for every runner (the engine, rescoring, verl)."""

from __future__ import annotations

import logging
from typing import Any

from bootcamp_core.blocks import last_assistant_text
from bootcamp_core.episode.messages import jsonable

__all__ = ["score_trajectory"]

logger = logging.getLogger("bootcamp_core.episode.scoring")


def score_trajectory(
    reward: Any,
    identity: dict,
    *,
    messages: list[dict],
    tool_rewards: list[float],
    tool_scores: dict[str, float],
    turn_scores: list[float],
    verify_kwargs: dict | None = None,
) -> tuple[float, Any]:
    """(score, extracted output) of a trajectory: what the reward sees, the same for every runner (DESIGN.md).

    ``output`` is the last assistant message's text; kwargs are the episode's plus the user's verify kwargs.
    """
    output = last_assistant_text(messages)
    kwargs = {**(verify_kwargs or {}), "messages": messages, "tool_rewards": tool_rewards,
              "tool_scores": tool_scores, "turn_scores": turn_scores}
    try:
        extracted = jsonable(reward.extract_output(output))
    except Exception as error:  # informative only: verify_score records the crash and scores 0
        extracted = None
        logger.debug("extract_output failed: %s", error)
    return float(reward.verify_score(output, identity, **kwargs)), extracted
