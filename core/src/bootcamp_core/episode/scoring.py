"""What the reward sees of a trajectory, the same for every runner (the engine, rescoring, verl)."""

from __future__ import annotations

import logging
from typing import Any

from bootcamp_core.blocks import last_assistant_text
from bootcamp_core.episode.messages import jsonable
from bootcamp_core.plugin.errors import collect_reports

__all__ = ["score_and_report", "score_trajectory"]

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

    ``output`` is the last assistant message's text; kwargs are the episode's plus the user's verify kwargs. The call
    is a scoring call: what the reward reports with ``report_error`` is :func:`score_and_report`'s third value.
    """
    score, extracted, _ = score_and_report(reward, identity, messages=messages, tool_rewards=tool_rewards,
                                           tool_scores=tool_scores, turn_scores=turn_scores,
                                           verify_kwargs=verify_kwargs)
    return score, extracted


def score_and_report(
    reward: Any,
    identity: dict,
    *,
    messages: list[dict],
    tool_rewards: list[float],
    tool_scores: dict[str, float],
    turn_scores: list[float],
    verify_kwargs: dict | None = None,
) -> tuple[float, Any, tuple[str, str] | None]:
    """:func:`score_trajectory`'s (score, extracted output) and the reward's first ``report_error`` of this call,
    ``(kind, message)``, or None.

    The report is bound to this call in its own context, on the thread it runs on: episodes scored at the same time
    (other worker threads, other tasks) never see each other's.
    """
    output = last_assistant_text(messages)
    kwargs = {**(verify_kwargs or {}), "messages": messages, "tool_rewards": tool_rewards,
              "tool_scores": tool_scores, "turn_scores": turn_scores}
    with collect_reports() as reports:
        try:
            extracted = jsonable(reward.extract_output(output))
        except Exception as error:  # informative only: verify_score records the crash and scores 0
            extracted = None
            logger.debug("extract_output failed: %s", error)
        score = float(reward.verify_score(output, identity, **kwargs))
    return score, extracted, reports[0] if reports else None
