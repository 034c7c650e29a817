"""The fast encoder of results lines (``compact_dumps``): its text reads back as the value, on one physical line, with
strings escaped as ``dumps`` escapes them; whatever it cannot write exactly (NaN, infinities, tuples, objects of other
types, keys that are not strings, integers past 64 bits, lone surrogates) is None, and the results writer writes
those lines as ``dumps`` does, NaN included."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bootcamp_core.data.records import EpisodeResult, ToolCall
from bootcamp_core.data.schema import compact_dumps, dumps
from bootcamp_core.evaluate.results import ResultsWriter

#: every character but the lone surrogates, line and paragraph separators and control characters among them
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@settings(max_examples=400, deadline=None)
@given(value=JSON)
def test_json_data_is_written_exactly_on_one_line_with_strings_escaped_as_dumps_escapes_them(value):
    text = compact_dumps(value)
    assert text is not None
    assert json.loads(text) == value == json.loads(dumps(value))
    assert not any(separator in text for separator in ("\n", "\r", "\u2028", "\u2029", "\x85"))
    for string in strings(value):  # what the masking of secrets relies on: the same escapes in either text
        assert dumps(string)[1:-1] in text


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize("value", [
    float("nan"), {"ratio": float("inf")}, [1, -math.inf],  # orjson would write null
    (1, 2), {"a": (1,)},  # arrays either way, but they read back as lists
    {1: "int key"}, {None: 1},  # dumps makes text of the key
    2**64, -(2**63) - 1,  # past 64 bits
    "lone \ud800 surrogate",
    datetime.date(2026, 1, 2), Point(1), uuid.UUID(int=5),  # orjson converts them, dumps does not
], ids=repr)
def test_what_the_fast_encoder_cannot_write_exactly_is_none(value):
    assert compact_dumps(value) is None


def test_results_lines_are_compact_where_exact_and_as_dumps_writes_them_where_not(tmp_path):
    writer = ResultsWriter(tmp_path / "results.jsonl")
    plain = EpisodeResult(id="a:0", score=1.0, messages=[{"role": "user", "content": "x\u2028y \"q\""}],
                          tool_calls=[ToolCall(id="c", name="t", arguments="{}", metrics={"ratio": 0.5})])
    line, data = writer.entry_for(plain)
    assert line == compact_dumps(plain.to_dict()) and ", " not in line.replace('\\"q\\"', "")
    assert json.loads(line) == data == json.loads(json.dumps(plain.to_dict()))
    assert "\u2028" not in line and "\\u2028" in line

    odd = EpisodeResult(id="b:0", tool_calls=[ToolCall(id="c", name="t", arguments="{}",
                                                       metrics={"ratio": float("nan"), "pair": (1, 2)})])
    line, data = writer.entry_for(odd)
    assert line == dumps(odd.to_dict())  # NaN stays NaN, as before; a reader of JSON lines in Python reads it
    metrics = json.loads(line)["tool_calls"][0]["metrics"]
    assert math.isnan(metrics["ratio"]) and metrics["pair"] == [1, 2]
    writer.close()
