"""Answer extraction shared by rewards, interactions and tools: fenced blocks, ``\\boxed{...}``, ``ANSWER:`` lines,
the value after a JSON key, numbers and JSON objects.

Every function reads model output, which may be megabytes of anything, so each runs in time linear in the text's
length: ``str.find`` / ``str.rfind`` and one forward pass, never a pattern that can backtrack. Each returns ``None``
(or an empty list) when nothing of its kind is there, and never raises on any string.

    >>> last_boxed(r"so \\boxed{\\frac{1}{2}}")
    '\\\\frac{1}{2}'
    >>> last_answer_line("work...\\nANSWER: 42\\n")
    '42'
    >>> text = 'first {"result": 1}, then {"result": -2.5e3}'
    >>> [text[start:number_end(text, start)] for start in key_value_starts(text, "result")]
    ['1', '-2.5e3']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["boxed_contents", "fenced_blocks", "is_number", "key_value_starts", "last_answer_line", "last_boxed",
           "last_fenced_block", "last_json_object", "number_end", "skip_space"]

FENCE = "```"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: What a fence's language word may hold (``json``, ``python3``, ``c++``, ``objective-c``, ``c#``).
_TAG_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-.#"
_BLANKS = " \t"
_QUOTES = "\"'"


def _run_end(text: str, position: int, characters: str | None) -> int:
    """The end of the run of ``characters`` (whitespace when ``None``) that starts at ``position``.

    Read in chunks that double up to 64 kB with ``str.lstrip`` (C speed on a megabyte of spaces), so the work stays
    linear in the run's length, not in what follows it.
    """
    size = 16
    while position < len(text):
        chunk = text[position:position + size]
        rest = chunk.lstrip(characters)
        if rest:
            return position + len(chunk) - len(rest)
        position += len(chunk)
        size = min(size * 2, 65536)
    return position


def _run_start(text: str, end: int) -> int:
    """The start of the run of whitespace that ends at ``end`` (chunked ``str.rstrip``, as :func:`_run_end`)."""
    size = 16
    while end > 0:
        chunk = text[max(0, end - size):end]
        rest = chunk.rstrip()
        if rest:
            return end - len(chunk) + len(rest)
        end -= len(chunk)
        size = min(size * 2, 65536)
    return end


def skip_space(text: str, position: int) -> int:
    """The first position at or after ``position`` that holds no whitespace (``len(text)`` at the end)."""
    return _run_end(text, position, None) if position >= 0 else position


def _fence_end(text: str, start: int) -> int:
    """The end of the run of backticks that starts at ``start`` (a fence may be longer than three)."""
    return _run_end(text, start, "`")


def _fences(text: str) -> list[tuple[int, int]]:
    """(start, end) of every run of three or more backticks, in order."""
    fences = []
    position = text.find(FENCE)
    while position != -1:
        end = _fence_end(text, position)
        fences.append((position, end))
        position = text.find(FENCE, end)
    return fences


def _block(text: str, after: int, close_at: int) -> tuple[str, str]:
    """(language word, body) of the block between an opening fence ending at ``after`` and a closing one at
    ``close_at``.

    The word is a run of letters, digits and ``_+-.#`` right after the fence (blanks allowed before it), followed by
    the end of the line or by a blank and the body on the same line (```` ```json {"a": 1}``` ````); anything else
    (```` ```{"a": 1,\\n"b": 2}``` ````, ```` ```42``` ````) is all body. One newline after the word is not part of
    the body, and neither is one before the closing fence.
    """
    # none of these runs holds a backtick, so each stops at the closing fence
    start = _run_end(text, after, _BLANKS)
    word_end = _run_end(text, start, _TAG_CHARACTERS)
    after_word = _run_end(text, word_end, _BLANKS)
    if word_end > start and (text.startswith("\n", after_word) or (after_word > word_end and after_word < close_at)):
        tag, body_start = text[start:word_end], after_word
    else:
        tag, body_start = "", start
    if text.startswith("\n", body_start) and body_start < close_at:
        body_start += 1
    body = text[body_start:close_at]
    return tag, body.removesuffix("\n")


def fenced_blocks(text: str, language: str | Iterable[str] | None = None) -> list[str]:
    """The body of every complete ```` ``` ```` block, in order; only of ``language`` when given: a word (``"json"``)
    or several (``("json", "")``: tagged json or untagged), compared ignoring ASCII case.

    Fences (runs of three or more backticks) pair up in order, so an unclosed last fence is ignored.
    """
    if not isinstance(text, str):
        return []
    if language is None:
        wanted = None
    else:
        wanted = {word.translate(_ASCII_LOWER) for word in ((language,) if isinstance(language, str) else language)}
    fences = _fences(text)
    blocks = []
    for opening, closing in zip(fences[0::2], fences[1::2]):
        tag, body = _block(text, opening[1], closing[0])
        if wanted is None or tag.translate(_ASCII_LOWER) in wanted:
            blocks.append(body)
    return blocks


def last_fenced_block(text: str, language: str | Iterable[str] | None = None) -> str | None:
    """The body of the last complete ```` ``` ```` block (see :func:`fenced_blocks`), or ``None``."""
    blocks = fenced_blocks(text, language)
    return blocks[-1] if blocks else None


def boxed_contents(text: str, command: str = "\\boxed") -> list[str]:
    """The content of every ``\\boxed{...}`` (braces balanced; whitespace allowed between the command and its brace), in
    the order the boxes close: a box inside another comes before it.
    """
    if not isinstance(text, str) or not command:
        return []
    # One pass over the braces with a stack of openings: -1 for a plain brace, else where a box's content starts.
    # The whitespace before a brace is walked back once per brace: each run of it belongs to one brace only.
    stack: list[int] = []
    found: list[str] = []
    next_open, next_close = text.find("{"), text.find("}")
    while next_open != -1 or next_close != -1:
        if next_close == -1 or (next_open != -1 and next_open < next_close):
            before = _run_start(text, next_open)
            stack.append(next_open + 1 if text.endswith(command, 0, before) else -1)
            next_open = text.find("{", next_open + 1)
        else:
            if stack:
                start = stack.pop()
                if start != -1:
                    found.append(text[start:next_close])
            next_close = text.find("}", next_close + 1)
    return found


def last_boxed(text: str, command: str = "\\boxed") -> str | None:
    """The content of the ``\\boxed{...}`` that closes last (an outer box wins over one inside it), or ``None``."""
    boxes = boxed_contents(text, command)
    return boxes[-1] if boxes else None


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


def key_value_starts(text: str, key: str) -> list[int]:
    """Where the value of each ``"key": `` (or ``'key':``; any spaces around the colon) of the text begins, in order.

    Works on text that is not valid JSON (prose around it, an unclosed object); the caller reads the value there, e.g.
    with :func:`number_end` or ``json.JSONDecoder().raw_decode(text, start)``.
    """
    if not isinstance(text, str) or not key:
        return []
    starts = []
    position = text.find(key, 1)
    while position != -1:
        end = position + len(key)
        if text[position - 1] in _QUOTES and end < len(text) and text[end] in _QUOTES:
            colon = skip_space(text, end + 1)
            if colon < len(text) and text[colon] == ":":
                starts.append(skip_space(text, colon + 1))
        position = text.find(key, position + 1)
    return starts


def _skip_digits(text: str, position: int) -> int:
    while position < len(text) and text[position].isdecimal():
        position += 1
    return position


def number_end(text: str, start: int = 0, *, signed: bool = True) -> int:
    """Where the number written at ``start`` ends: ``[sign] (digits [. digits] | . digits) [e [sign] digits]``, the
    way JSON and Python write one (``1``, ``-2.5``, ``.5``, ``3.``, ``1e-9``; no ``inf``, no ``1_000``, no ``0x1``);
    ``start`` itself when none starts there. ``signed=False`` reads no leading sign (a tokenizer's number).
    """
    if not isinstance(text, str) or not 0 <= start < len(text):
        return start
    position = start + (signed and text[start] in "+-")
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


def is_number(text: str) -> bool:
    """Whether all of ``text`` is one number as :func:`number_end` reads it (no spaces around it)."""
    return isinstance(text, str) and bool(text) and number_end(text) == len(text)


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
