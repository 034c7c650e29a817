"""The final-answer format, shared by the prompt, the reward, the interaction and the reference agent."""

from __future__ import annotations

import math
from typing import Any

from bootcamp_core import answers

__all__ = ["ANSWER_FORMAT", "extract_result", "format_answer", "relative_error"]

#: How the model must give its final answer; quoted verbatim in the prompt and in feedback.
ANSWER_FORMAT = '```json\n{"result": <number>}\n```'

#: Floor of the scale in the relative error, so an expected value of 0 still has a meaningful tolerance.
MIN_SCALE = 1e-15

_KEY = "result"
_QUOTES = "\"'"


def _number_at(text: str, start: int) -> str | None:
    """The number written at ``start`` (in quotes allowed: ``"result": "42"``), else ``None``."""
    quote = text[start] if start < len(text) and text[start] in _QUOTES else ""
    begin = answers.skip_space(text, start + len(quote)) if quote else start
    end = answers.number_end(text, begin)
    if end == begin:
        return None
    if quote and not text.startswith(quote, answers.skip_space(text, end)):
        return None
    return text[begin:end]


def extract_result(text: Any) -> float | None:
    """The number in the last ``"result": <number>`` of the text (fenced or not, quoted or not); else ``None``.

    Read with :mod:`bootcamp_core.answers` (linear time: model output can be megabytes). A later ``"result"`` that
    holds no number does not hide an earlier one.
    """
    if not isinstance(text, str):
        return None
    numbers = (_number_at(text, start) for start in reversed(answers.key_value_starts(text, _KEY)))
    last = next((number for number in numbers if number is not None), None)
    if last is None:
        return None
    value = float(last)
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
