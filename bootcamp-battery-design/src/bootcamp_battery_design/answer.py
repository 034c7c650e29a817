"""The final-answer format ``\\boxed{pos_thickness_m, pos_porosity, neg_porosity, np_ratio}``, shared by the prompt, the reward and the agent.

Model output may be megabytes of anything, so it is read with :mod:`bootcamp_core.answers` (linear time), never a
regular expression that can backtrack (a pattern of optional spaces around optional brackets took seconds on a box of
a few thousand spaces).
"""

from __future__ import annotations

import math
from typing import Any

from bootcamp_core import answers

__all__ = ["ANSWER_FORMAT", "extract_design", "format_answer", "format_number"]

#: How the model must give its final answer; quoted verbatim in the prompt.
ANSWER_FORMAT = "\\boxed{pos_thickness_m, pos_porosity, neg_porosity, np_ratio}"
#: Values in a design.
SIZE = 4


def _last_box(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (whitespace allowed before the brace) that holds no brace, or ``None``:
    numbers need none."""
    return next((box for box in reversed(answers.boxed_contents(text)) if "{" not in box and "}" not in box), None)


def _number(text: str) -> float | None:
    """``text`` as a number written with digits, an optional sign, point and exponent (no ``inf``, no ``1_0``)."""
    return float(text) if answers.is_number(text) else None


def _values(content: str) -> tuple[float, ...] | None:
    """``a, b, c, d``, ``(a, b, c, d)``, ``a m, b, c, d`` or ``a; b; c; d`` (any spaces) as four numbers, else
    ``None``."""
    content = content.strip()
    if content.startswith("("):
        content = content[1:].lstrip()
    if content.endswith(")"):
        content = content[:-1].rstrip()
    separator = ";" if ";" in content else ","
    if separator == ";" and "," in content:
        return None
    parts = [part.strip() for part in content.split(separator)]
    if len(parts) != SIZE:
        return None
    if parts[0].endswith("m"):
        parts[0] = parts[0][:-1].rstrip()
    numbers = [_number(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    return tuple(numbers)


def extract_design(text: Any) -> tuple[float, ...] | None:
    """(positive thickness in metres, positive porosity, negative porosity, N/P ratio) from the last
    ``\\boxed{a, b, c, d}`` of the text; ``None`` if there is none."""
    if not isinstance(text, str):
        return None
    content = _last_box(text)
    if content is None:
        return None
    design = _values(content)
    if design is None or not all(math.isfinite(value) for value in design):
        return None
    return design


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly ``value``."""
    return repr(float(value))


def format_answer(*values: float) -> str:
    """A final answer in the required format (the design's values in order)."""
    return f"\\boxed{{{', '.join(format_number(value) for value in values)}}}"
