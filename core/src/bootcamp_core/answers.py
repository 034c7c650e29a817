"""Answer extraction shared by rewards: the last fenced block, ``\\boxed{...}``, ``ANSWER:`` line or JSON object.

Every function reads model output, which may be megabytes of anything, so each runs in time linear in the text's
length: ``str.find`` / ``str.rfind`` and one forward pass, never a pattern that can backtrack. Each returns ``None``
when nothing of its kind is there, and never raises on any string.

    >>> last_boxed(r"so \\boxed{\\frac{1}{2}}")
    '\\\\frac{1}{2}'
    >>> last_answer_line("work...\\nANSWER: 42\\n")
    '42'
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["last_answer_line", "last_boxed", "last_fenced_block", "last_json_object"]

FENCE = "```"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _fence_end(text: str, start: int) -> int:
    """The end of the run of backticks that starts at ``start`` (a fence may be longer than three)."""
    end = start + len(FENCE)
    while end < len(text) and text[end] == "`":
        end += 1
    return end


def _fences(text: str) -> list[tuple[int, int]]:
    """(start, end) of every run of three or more backticks, in order."""
    fences = []
    position = text.find(FENCE)
    while position != -1:
        end = _fence_end(text, position)
        fences.append((position, end))
        position = text.find(FENCE, end)
    return fences


def last_fenced_block(text: str, language: str | None = None) -> str | None:
    """The body of the last complete ```` ``` ```` block (of ``language`` when given, e.g. ``"json"``), or ``None``.

    Fences pair up in order, so an unclosed last fence is ignored. The body is the text between the opening fence's
    line and the closing fence; for a one-line block (```` ```json {"a": 1}``` ````) the text after the language word.
    """
    if not isinstance(text, str):
        return None
    wanted = language.translate(_ASCII_LOWER) if language is not None else None
    fences = _fences(text)
    found = None
    for opening, closing in zip(fences[0::2], fences[1::2]):
        after, close_at = opening[1], closing[0]
        newline = text.find("\n", after, close_at)
        if newline != -1:
            info, body = text[after:newline].strip(), text[newline + 1:close_at]
        else:  # a one-line block: a language word, then the body
            inline = text[after:close_at]
            word, _, rest = inline.lstrip().partition(" ")
            info, body = (word, rest) if rest and word.isalnum() else ("", inline)
        tag = info.split(maxsplit=1)[0].translate(_ASCII_LOWER) if info.strip() else ""
        if wanted is None or tag == wanted:
            found = body
    if found is None:
        return None
    return found[:-1] if found.endswith("\n") else found


def last_boxed(text: str, command: str = "\\boxed") -> str | None:
    """The content of the ``\\boxed{...}`` that closes last (braces balanced; an outer box wins over one inside it)."""
    if not isinstance(text, str):
        return None
    # One pass over the braces with a stack of openings: -1 for a plain brace, else where a box's content starts.
    stack: list[int] = []
    found = None
    next_open, next_close = text.find("{"), text.find("}")
    while next_open != -1 or next_close != -1:
        if next_close == -1 or (next_open != -1 and next_open < next_close):
            stack.append(next_open + 1 if text.endswith(command, 0, next_open) else -1)
            next_open = text.find("{", next_open + 1)
        else:
            if stack:
                start = stack.pop()
                if start != -1:
                    found = (start, next_close)
            next_close = text.find("}", next_close + 1)
    return None if found is None else text[found[0]:found[1]]


def last_answer_line(text: str, prefix: str = "ANSWER:", *, ignore_case: bool = True) -> str | None:
    """What follows the last ``prefix`` (default ``ANSWER:``) up to the end of its line, stripped; ``None`` if empty.

    ``ignore_case`` folds ASCII letters only, so positions in the text never shift.
    """
    if not isinstance(text, str) or not prefix:
        return None
    haystack, needle = (text.translate(_ASCII_LOWER), prefix.translate(_ASCII_LOWER)) if ignore_case else (text, prefix)
    position = haystack.rfind(needle)
    if position == -1:
        return None
    start = position + len(prefix)
    end = text.find("\n", start)
    answer = text[start:end if end != -1 else len(text)].strip()
    return answer or None


def _object_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each outermost balanced ``{...}`` of the text, in order; strings inside braces respected.

    Quotes count only inside braces (prose has apostrophes and stray quotes) and a string ends at a newline (JSON
    strings hold none), so a stray quote cannot swallow the rest of the text. A span inside an unclosed brace is
    still outermost: the unclosed brace is prose.
    """
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    in_string = False
    position, length = 0, len(text)
    while position < length:
        if not stack:  # outside any braces only an opening brace matters
            position = text.find("{", position)
            if position == -1:
                break
        character = text[position]
        if in_string:
            if character == "\\":
                position += 1
            elif character == '"' or character == "\n":
                in_string = False
        elif character == '"':
            in_string = True
        elif character == "{":
            stack.append(position)
        elif character == "}":
            start = stack.pop()
            # spans closed earlier inside this one are no longer outermost (each is dropped once: linear)
            while spans and spans[-1][0] > start:
                spans.pop()
            spans.append((start, position + 1))
        position += 1
    return spans


def last_json_object(text: str) -> dict | None:
    """The last ``{...}`` of the text that parses as a JSON object, or ``None``.

    Only outermost balanced spans are tried (they never overlap, so all of them together are parsed in linear time);
    numbers too long to convert, nesting too deep and invalid JSON all count as no object.
    """
    if not isinstance(text, str):
        return None
    for start, end in reversed(_object_spans(text)):
        value = _parse(text[start:end])
        if isinstance(value, dict):
            return value
    return None


def _parse(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        return None
