"""The final-answer format, shared by the prompt, the reward, the interaction and the reference agent."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["ANSWER_FORMAT", "extract_result", "format_answer", "relative_error", "within_tolerance"]

#: How the model must give its final answer; quoted verbatim in the prompt and in feedback.
ANSWER_FORMAT = '```json\n{"result": <number>}\n```'

#: Floor of the scale in the relative error, so an expected value of 0 still has a meaningful tolerance.
MIN_SCALE = 1e-15

# linear: the spaces inside the quotes are read only after a quote, so no two unbounded runs meet
_RESULT = re.compile(
    r"""["']result["']\s*:\s*(?:(["'])\s*)?([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?(1)\s*\1)"""
)


def extract_result(text: Any) -> float | None:
    """The number in the last ``"result": <number>`` of the text (fenced or not, quoted or not); else ``None``."""
    if not isinstance(text, str):
        return None
    last = None
    for last in _RESULT.finditer(text):
        pass
    if last is None:
        return None
    value = float(last.group(2))
    return value if math.isfinite(value) else None


def format_answer(number: str) -> str:
    """A final answer in the required format for a number already written as a JSON number."""
    return f'```json\n{{"result": {number}}}\n```'


def relative_error(value: float, expected: float) -> float:
    """``|value - expected| / max(|expected|, 1e-15)``; ``inf`` when it cannot be computed."""
    try:
        error = abs(float(value) - float(expected)) / max(abs(float(expected)), MIN_SCALE)
    except (TypeError, ValueError, OverflowError):
        return math.inf
    return error if math.isfinite(error) else math.inf


def within_tolerance(value: float, identity: dict) -> bool:
    """Whether ``value`` matches the identity's ``expected_result`` within its relative ``tolerance``."""
    try:
        tolerance = float(identity.get("tolerance", 0.0))
        expected = identity["expected_result"]
    except (AttributeError, KeyError, TypeError, ValueError):
        return False
    return relative_error(value, expected) <= tolerance
