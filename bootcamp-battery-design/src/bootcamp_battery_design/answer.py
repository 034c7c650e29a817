"""The final-answer format ``\\boxed{thickness_m, porosity}``, shared by the prompt, the reward and the agent."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["ANSWER_FORMAT", "extract_design", "format_answer", "format_number"]

#: How the model must give its final answer; quoted verbatim in the prompt.
ANSWER_FORMAT = "\\boxed{pos_thickness_m, pos_porosity}"

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# The content of a \boxed{...}: no nested braces are needed for two numbers, so none are accepted.
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_PAIR = re.compile(rf"^\s*\(?\s*({_NUMBER})\s*(?:m\b)?\s*[,;]\s*({_NUMBER})\s*\)?\s*$")


def extract_design(text: Any) -> tuple[float, float] | None:
    """(thickness in metres, porosity) from the last ``\\boxed{a, b}`` of the text; ``None`` if there is none."""
    if not isinstance(text, str):
        return None
    boxes = _BOXED.findall(text)
    if not boxes:
        return None
    match = _PAIR.match(boxes[-1])
    if match is None:
        return None
    thickness, porosity = float(match.group(1)), float(match.group(2))
    if not (math.isfinite(thickness) and math.isfinite(porosity)):
        return None
    return thickness, porosity


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly ``value``."""
    return repr(float(value))


def format_answer(thickness_m: float, porosity: float) -> str:
    """A final answer in the required format."""
    return f"\\boxed{{{format_number(thickness_m)}, {format_number(porosity)}}}"
