"""The answer format: a fenced JSON object with the 26 line items. Parsing is shared by the reward, the interaction,
the tools and the reference agent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from bootcamp_core import answers
from bootcamp_financial_prediction.items import ITEM_KEYS, LINE_ITEMS

__all__ = ["ANSWER_FORMAT", "ParsedStatements", "format_answer", "parse_answer", "read_statements"]

#: How the model must give its final answer; quoted in the prompt and in feedback.
ANSWER_FORMAT = "```json\n{" + ", ".join(f'"{key}": <number>' for key in ITEM_KEYS) + "}\n```"



def _folded(label: Any) -> str:
    """A key or label without whitespace or underscores, in lower case: how keys and labels are compared."""
    return "".join(str(label).split()).replace("_", "").lower()


#: Labels a model may use instead of the keys (English or Chinese), folded.
_ALIASES: dict[str, str] = {_folded(name): item.key for item in LINE_ITEMS
                            for name in (item.key, item.english, item.chinese)}
#: Largest amount accepted (in thousands): far beyond any company, small enough that sums stay exact and finite.
MAX_AMOUNT = 1e15


@attrs.frozen
class ParsedStatements:
    """What an answer holds: the items read, the ones missing or not numbers, and keys that are no item."""

    values: dict[str, float]
    missing: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.missing and not self.invalid


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits: not an amount
            return None
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        negative = text.startswith("(") and text.endswith(")")  # accountants write (1,234) for -1234
        text = text[1:-1].strip() if negative else text
        if not answers.is_number(text):
            return None
        number = -float(text) if negative else float(text)
    else:
        return None
    return number if math.isfinite(number) and abs(number) <= MAX_AMOUNT else None


def read_statements(data: Any) -> ParsedStatements | None:
    """The items of a JSON object (keys or labels); ``None`` when ``data`` is not an object holding any item."""
    if not isinstance(data, Mapping):
        return None
    if not any(_ALIASES.get(_folded(key)) for key in data):
        nested = [value for value in data.values() if isinstance(value, Mapping)]
        return read_statements(nested[0]) if len(nested) == 1 else None
    values: dict[str, float] = {}
    invalid, unknown = [], []
    for key, value in data.items():
        item = _ALIASES.get(_folded(key))
        if item is None:
            unknown.append(str(key))
            continue
        number = _number(value)
        if number is None:
            invalid.append(item)
        else:
            values[item] = number
    missing = tuple(key for key in ITEM_KEYS if key not in values and key not in invalid)
    return ParsedStatements(values, missing, tuple(invalid), tuple(unknown))


def parse_answer(text: Any) -> ParsedStatements | None:
    """The statements of the last fenced JSON block holding any line item (or of a bare JSON text), else ``None``."""
    if not isinstance(text, str):
        return None
    # blocks tagged json or untagged, in linear time (model output can be megabytes); python code is no forecast
    candidates = answers.fenced_blocks(text, ("json", ""))
    if not candidates:
        candidates = [text]
    for candidate in reversed(candidates):
        try:
            data = json.loads(candidate.strip())
        except (ValueError, RecursionError):
            continue
        parsed = read_statements(data)
        if parsed is not None:
            return parsed
    return None


def format_answer(statements: Mapping[str, float]) -> str:
    """A final answer in the required format (whole numbers printed without a decimal point)."""
    values = {key: int(value) if float(value).is_integer() else float(value) for key, value in
              ((key, statements[key]) for key in ITEM_KEYS)}
    return "```json\n" + json.dumps(values, ensure_ascii=False) + "\n```"
