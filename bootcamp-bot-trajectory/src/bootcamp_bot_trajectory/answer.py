"""The final-answer format, shared by the prompt, the reward, the interaction and the reference agent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bootcamp_bot_trajectory.robot import PathError, parse_waypoints

__all__ = ["ANSWER_FORMAT", "find_answer", "format_answer", "format_waypoints"]

#: How the model must give its final answer; quoted verbatim in the prompt and in feedback.
ANSWER_FORMAT = '```json\n{"waypoints": [[j1, j2, j3, j4, j5, j6, j7], [j1, j2, j3, j4, j5, j6, j7], ...]}\n```'

_KEY = "waypoints"
_QUOTES = "\"'"
_DECODER = json.JSONDecoder()


def _skip_spaces(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _last_value_start(text: str) -> int | None:
    """Where the value of the last ``"waypoints":`` (either quote, spaces allowed) begins, or ``None``.

    Read with ``str.rfind`` from the end rather than a regular expression: model output may be megabytes, and each
    candidate key is checked over its own few characters, so the whole text is read at most about twice.
    """
    position = text.rfind(_KEY)
    while position != -1:
        end = position + len(_KEY)
        if position > 0 and text[position - 1] in _QUOTES and end < len(text) and text[end] in _QUOTES:
            colon = _skip_spaces(text, end + 1)
            if colon < len(text) and text[colon] == ":":
                return _skip_spaces(text, colon + 1)
        position = text.rfind(_KEY, 0, position)
    return None


def find_answer(text: Any) -> tuple[tuple[tuple[float, ...], ...] | None, str | None]:
    """(waypoints, None) from the last ``"waypoints": [...]`` of the text; (None, what is wrong) otherwise.

    The problem is ``None`` too when the text holds no ``"waypoints"`` key at all (no answer was attempted).
    """
    if not isinstance(text, str):
        return None, None
    start = _last_value_start(text)
    if start is None:
        return None, None
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
