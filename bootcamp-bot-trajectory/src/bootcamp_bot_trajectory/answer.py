"""The final-answer format, shared by the prompt, the reward, the interaction and the reference agent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bootcamp_bot_trajectory.robot import PathError, parse_waypoints
from bootcamp_core import answers

__all__ = ["ANSWER_FORMAT", "find_answer", "format_answer", "format_waypoints"]

#: How the model must give its final answer; quoted verbatim in the prompt and in feedback.
ANSWER_FORMAT = '```json\n{"waypoints": [[j1, j2, j3, j4, j5, j6, j7], [j1, j2, j3, j4, j5, j6, j7], ...]}\n```'

_KEY = "waypoints"
_DECODER = json.JSONDecoder()


def find_answer(text: Any) -> tuple[tuple[tuple[float, ...], ...] | None, str | None]:
    """(waypoints, None) from the last ``"waypoints": [...]`` of the text; (None, what is wrong) otherwise.

    The problem is ``None`` too when the text holds no ``"waypoints"`` key at all (no answer was attempted).
    """
    if not isinstance(text, str):
        return None, None
    starts = answers.key_value_starts(text, _KEY)  # linear time: model output can be megabytes
    if not starts:
        return None, None
    start = starts[-1]
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except ValueError as error:
        return None, f"the value of \"waypoints\" is not valid JSON ({error.msg} at character {error.pos})"
    except RecursionError:  # thousands of nested brackets
        return None, "the value of \"waypoints\" is nested too deeply: give a list of lists of 7 numbers"
    try:
        return parse_waypoints(value), None
    except PathError as error:
        return None, str(error)


def format_waypoints(waypoints: Sequence[Sequence[float]], digits: int = 4) -> str:
    """Waypoints as a compact JSON list with ``digits`` decimals."""
    return "[" + ", ".join("[" + ", ".join(f"{angle:.{digits}f}" for angle in point) + "]" for point in waypoints) + "]"


def format_answer(waypoints: Sequence[Sequence[float]], digits: int = 4) -> str:
    """A final answer in the required format."""
    return f'```json\n{{"waypoints": {format_waypoints(waypoints, digits)}}}\n```'
