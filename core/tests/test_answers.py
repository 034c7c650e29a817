"""Answer extraction: the last fenced block, \\boxed{}, ANSWER: line and JSON object, right on megabytes of
adversarial text (linear scans: a backtracking pattern would never finish these)."""

from __future__ import annotations

import pytest

from bootcamp_core import answers
from bootcamp_core.answers import (
    boxed_contents,
    fenced_blocks,
    is_number,
    key_value_starts,
    last_answer_line,
    last_boxed,
    last_fenced_block,
    last_json_object,
    number_end,
    skip_space,
)

MEGABYTE = 1_000_000


def test_last_fenced_block_takes_the_last_complete_block_and_its_language():
    text = "```python\nprint(1)\n```\nthen\n```json\n{\"a\": 1}\n```\nand ```json\nunclosed"
    assert last_fenced_block(text) == '{"a": 1}'
    assert last_fenced_block(text, "json") == '{"a": 1}'
    assert last_fenced_block(text, "PYTHON") == "print(1)"
    assert last_fenced_block(text, "yaml") is None
    assert last_fenced_block('say ```json {"b": 2}``` inline') == '{"b": 2}'
    assert last_fenced_block("````\nfour backticks\n````") == "four backticks"
    assert last_fenced_block("no fences") is None and last_fenced_block("```only one") is None
    assert last_fenced_block(None) is None


def test_last_boxed_balances_braces_and_prefers_the_outer_box():
    assert last_boxed(r"first \boxed{1}, then \boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert last_boxed(r"\boxed{\boxed{3} + 1}") == r"\boxed{3} + 1"
    assert last_boxed(r"\boxed{2} and an unclosed \boxed{3") == "2"
    assert last_boxed(r"} stray { braces \boxed{x}}") == "x"
    assert last_boxed("{no box}") is None and last_boxed("") is None
    assert last_boxed(r"\fbox{7}", command=r"\fbox") == "7"


def test_last_answer_line_takes_the_rest_of_the_last_line_with_the_prefix():
    assert last_answer_line("Answer: 1\nworking\nANSWER: 42 \nthanks") == "42"
    assert last_answer_line("answer: yes") == "yes"
    assert last_answer_line("answer: yes", ignore_case=False) is None
    assert last_answer_line("ANSWER:\n") is None and last_answer_line("nothing") is None
    assert last_answer_line("Final: 3", prefix="Final:") == "3"
    # folding only ASCII keeps positions: a character whose lower case is longer does not shift the answer
    assert last_answer_line("İİİ ANSWER: 5") == "5"


def test_last_json_object_skips_prose_braces_strings_and_invalid_spans():
    assert last_json_object('{"a": 1} then {"b": {"c": "}"}}') == {"b": {"c": "}"}}
    assert last_json_object('I think {x} is "odd" and {"result": 2.5}') == {"result": 2.5}
    assert last_json_object('an unclosed { brace before {"n": 1}') == {"n": 1}
    assert last_json_object('a stray " quote in {braces "here\n {"n": 2}') == {"n": 2}
    assert last_json_object('{"valid": 1} {not json}') == {"valid": 1}
    assert last_json_object("[1, 2]") is None and last_json_object("") is None
    assert last_json_object('{"big": ' + "9" * 5000 + "}") is None  # too long to convert: no answer, no error


ADVERSARIAL = [
    "{" * MEGABYTE,
    "}" * MEGABYTE,
    "{" * (MEGABYTE // 2) + "}" * (MEGABYTE // 2),
    '{"' * (MEGABYTE // 2),
    "\\boxed{" * (MEGABYTE // 7),
    "`" * MEGABYTE,
    "``` " * (MEGABYTE // 4),
    "ANSWER:" * (MEGABYTE // 7),
    "a" * MEGABYTE,
    "{\\" * (MEGABYTE // 2),
    '"result":' + " " * MEGABYTE,
    '"result"' * (MEGABYTE // 8),
    "\\boxed" + " " * MEGABYTE + "{",
    "9" * MEGABYTE,
    "1." + "1" * MEGABYTE + "e",
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda text: repr(text[:8]))
def test_every_extractor_answers_on_a_megabyte_of_adversarial_text(text):
    for extract in (last_fenced_block, last_boxed, last_answer_line, last_json_object):
        result = extract(text)
        assert result is None or isinstance(result, (str, dict))
    assert isinstance(fenced_blocks(text), list) and isinstance(boxed_contents(text), list)
    assert isinstance(key_value_starts(text, "result"), list)
    assert 0 <= number_end(text) <= len(text)


def test_answers_at_the_end_of_a_megabyte_of_noise_are_found():
    noise = "{" * MEGABYTE + "\\boxed{" * 1000 + "```" * 1001
    assert last_json_object(noise + '\n{"result": 7}') == {"result": 7}
    assert last_boxed(noise + r" \boxed{7}") == "7"
    assert last_answer_line(noise + "\nANSWER: 7") == "7"
    assert last_fenced_block("```\n" * 1000 + "```json\n7\n```") == "7"  # fences pair up in order
    deep = "[" * 100_000 + "]" * 100_000
    assert last_json_object('{"deep": ' + deep + '} {"ok": true}') == {"ok": True}
    assert last_json_object('{"deep": ' + deep + "}") is None  # nesting too deep to parse: no answer, no error


def test_fenced_blocks_lists_every_complete_block_with_its_language_word_left_out():
    text = 'a ```json\n{"a": 1}\n``` b ```python\nprint(1)\n``` c ```{"multi": 1,\n"line": 2}``` d ```42``` e ```'
    assert fenced_blocks(text) == ['{"a": 1}', "print(1)", '{"multi": 1,\n"line": 2}', "42"]
    assert fenced_blocks(text, "JSON") == ['{"a": 1}']
    assert fenced_blocks(text, ("json", "")) == ['{"a": 1}', '{"multi": 1,\n"line": 2}', "42"]
    assert fenced_blocks("``` json  \n{}\n```") == ["{}"]  # blanks around the word
    assert fenced_blocks("```c++\nint x;\n```", "c++") == ["int x;"]
    assert fenced_blocks("```") == [] and fenced_blocks(None) == []


def test_boxed_contents_in_closing_order_and_whitespace_before_the_brace():
    assert boxed_contents(r"\boxed{1} \boxed {2} \boxed{a \boxed{3}}") == ["1", "2", "3", r"a \boxed{3}"]
    assert last_boxed("\\boxed \n {0.1, 0.3}") == "0.1, 0.3"
    assert boxed_contents(r"\boxedx{1} \unboxed{2} boxed{3}") == []
    assert boxed_contents(r"\boxed{1}", command="") == []


def test_key_value_starts_finds_each_quoted_key_and_its_colon():
    text = 'say "result": 1, \'result\' :  2, "results": 3, result: 4, "result" no colon, {"result":5'
    starts = key_value_starts(text, "result")
    assert [text[start] for start in starts] == ["1", "2", "5"]
    assert key_value_starts('result": 1', "result") == []  # no opening quote
    assert key_value_starts('"result": 1', "result") == [10]
    assert key_value_starts("anything", "") == [] and key_value_starts(None, "result") == []


@pytest.mark.parametrize(("text", "end"), [
    ("42", 2), ("-2.5", 4), ("+.5", 3), ("3.", 2), ("1e-9", 4), ("1E+9x", 4), ("1e", 1), ("1e+", 1), (".", 0),
    ("-", 0), ("inf", 0), ("1_000", 1), ("0x1", 1), ("", 0), ("١٢", 2),
])
def test_number_end_reads_a_json_or_python_number(text, end):
    assert number_end(text) == end
    assert is_number(text) == (end == len(text) > 0)


def test_number_end_at_an_offset_and_unsigned():
    assert number_end("x = -12;", 4) == 7
    assert number_end("x = -12;", 4, signed=False) == 4
    assert number_end("12", 5) == 5 and number_end("12", -1) == -1
    assert skip_space("  \n\tx", 0) == 4 and skip_space("  ", 0) == 2
    assert skip_space("ab", 1) == 1 and skip_space("", 0) == 0 and skip_space("a", 3) == 3
    # digits are Unicode's decimal digits (str.isdecimal), mixed or not, in runs of any length
    assert number_end("1\u0662 3") == 2 and number_end("-\u0661.\u0665e\u0662x") == 6
    assert number_end("7" * MEGABYTE + "e" + "9" * MEGABYTE) == 2 * MEGABYTE + 1


def test_module_lists_its_functions():
    assert answers.__all__ == ["boxed_contents", "fenced_blocks", "is_number", "key_value_starts", "last_answer_line",
                               "last_boxed", "last_fenced_block", "last_json_object", "number_end", "skip_space"]
