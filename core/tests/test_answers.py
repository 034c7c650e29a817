"""Answer extraction: the last fenced block, \\boxed{}, ANSWER: line and JSON object, right on megabytes of
adversarial text (linear scans: a backtracking pattern would never finish these)."""

from __future__ import annotations

import pytest

from bootcamp_core import answers
from bootcamp_core.answers import last_answer_line, last_boxed, last_fenced_block, last_json_object

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
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda text: repr(text[:8]))
def test_every_extractor_answers_on_a_megabyte_of_adversarial_text(text):
    for extract in (last_fenced_block, last_boxed, last_answer_line, last_json_object):
        result = extract(text)
        assert result is None or isinstance(result, (str, dict))


def test_answers_at_the_end_of_a_megabyte_of_noise_are_found():
    noise = "{" * MEGABYTE + "\\boxed{" * 1000 + "```" * 1001
    assert last_json_object(noise + '\n{"result": 7}') == {"result": 7}
    assert last_boxed(noise + r" \boxed{7}") == "7"
    assert last_answer_line(noise + "\nANSWER: 7") == "7"
    assert last_fenced_block("```\n" * 1000 + "```json\n7\n```") == "7"  # fences pair up in order
    deep = "[" * 100_000 + "]" * 100_000
    assert last_json_object('{"deep": ' + deep + '} {"ok": true}') == {"ok": True}
    assert last_json_object('{"deep": ' + deep + "}") is None  # nesting too deep to parse: no answer, no error


def test_module_lists_its_functions():
    assert answers.__all__ == ["last_answer_line", "last_boxed", "last_fenced_block", "last_json_object"]
