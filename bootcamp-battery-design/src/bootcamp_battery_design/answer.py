"""The final-answer format ``\\boxed{thickness_m, porosity}``, shared by the prompt, the reward and the agent.

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
ANSWER_FORMAT = "\\boxed{pos_thickness_m, pos_porosity}"


def _last_box(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (whitespace allowed before the brace) that holds no brace, or ``None``:
    two numbers need none."""
    return next((box for box in reversed(answers.boxed_contents(text)) if "{" not in box and "}" not in box), None)


def _number(text: str) -> float | None:
    """``text`` as a number written with digits, an optional sign, point and exponent (no ``inf``, no ``1_0``)."""
    return float(text) if answers.is_number(text) else None


def _pair(content: str) -> tuple[float, float] | None:
    """``a, b``, ``(a, b)``, ``a m, b`` or ``a; b`` (any spaces) as two numbers, else ``None``."""
    content = content.strip()
    if content.startswith("("):
        content = content[1:].lstrip()
    if content.endswith(")"):
        content = content[:-1].rstrip()
    if content.count(",") + content.count(";") != 1:
        return None
    separator = "," if "," in content else ";"
    left, right = content.split(separator)
    left = left.rstrip()
    if left.endswith("m"):
        left = left[:-1].rstrip()
    thickness, porosity = _number(left), _number(right.strip())
    if thickness is None or porosity is None:
        return None
    return thickness, porosity


def extract_design(text: Any) -> tuple[float, float] | None:
    """(thickness in metres, porosity) from the last ``\\boxed{a, b}`` of the text; ``None`` if there is none."""
    if not isinstance(text, str):
        return None
    content = _last_box(text)
    if content is None:
        return None
    design = _pair(content)
    if design is None or not (math.isfinite(design[0]) and math.isfinite(design[1])):
        return None
    return design


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly ``value``."""
    return repr(float(value))


def format_answer(thickness_m: float, porosity: float) -> str:
    """A final answer in the required format."""
    return f"\\boxed{{{format_number(thickness_m)}, {format_number(porosity)}}}"
