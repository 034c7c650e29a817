"""The final-answer format, shared by the prompt, the reward, the interaction and the reference agent."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ANSWER_FORMAT", "extract_result", "format_answer", "relative_error"]

#: How the model must give its final answer; quoted verbatim in the prompt and in feedback.
ANSWER_FORMAT = '```json\n{"result": <number>}\n```'

#: Floor of the scale in the relative error, so an expected value of 0 still has a meaningful tolerance.
MIN_SCALE = 1e-15

_QUOTES = "\"'"
_KEY = "result"


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _skip_digits(text: str, position: int) -> int:
    while position < len(text) and text[position].isdecimal():
        position += 1
    return position


def _number_end(text: str, start: int) -> int:
    """Where the JSON-like number at ``start`` ends (``[-+]?(digits[.digits] | .digits)(e[-+]digits)?``); ``start``
    when there is none."""
    position = start + (start < len(text) and text[start] in "+-")
    digits = _skip_digits(text, position)
    if digits > position:
        position = digits
        if position < len(text) and text[position] == ".":
            position = _skip_digits(text, position + 1)
    elif position < len(text) and text[position] == "." and _skip_digits(text, position + 1) > position + 1:
        position = _skip_digits(text, position + 1)
    else:
        return start
    if position < len(text) and text[position] in "eE":
        exponent = position + 1 + (position + 1 < len(text) and text[position + 1] in "+-")
        if _skip_digits(text, exponent) > exponent:
            position = _skip_digits(text, exponent)
    return position


def _result_at(text: str, key: int) -> tuple[str, int] | None:
    """The number of a ``"result": <number>`` whose key starts at ``key`` (quoted number allowed) and where the
    match ends, else ``None``."""
    end = key + len(_KEY)
    if key == 0 or text[key - 1] not in _QUOTES or end >= len(text) or text[end] not in _QUOTES:
        return None
    position = _skip_space(text, end + 1)
    if position >= len(text) or text[position] != ":":
        return None
    position = _skip_space(text, position + 1)
    quote = text[position] if position < len(text) and text[position] in _QUOTES else ""
    start = _skip_space(text, position + len(quote))
    stop = _number_end(text, start)
    if stop == start:
        return None
    if quote:
        after = _skip_space(text, stop)
        if after >= len(text) or text[after] != quote:
            return None
        return text[start:stop], after + 1
    return text[start:stop], stop


def extract_result(text: Any) -> float | None:
    """The number in the last ``"result": <number>`` of the text (fenced or not, quoted or not); else ``None``.

    One forward pass with ``str.find``: model output can be megabytes, so no pattern that could backtrack reads it.
    """
    if not isinstance(text, str):
        return None
    last, resume = None, 0
    key = text.find(_KEY, 1)
    while key != -1:
        found = _result_at(text, key) if key - 1 >= resume else None
        if found is not None:
            last, resume = found
        key = text.find(_KEY, max(key + 1, resume + 1))
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
