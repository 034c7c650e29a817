"""Reading the final answer: the last ``"waypoints": [...]`` of the text, and what is wrong with a malformed one."""

from __future__ import annotations

import pytest

from bootcamp_bot_trajectory.answer import ANSWER_FORMAT, find_answer, format_answer

ZERO = (0.0,) * 7
REACHING_X = (0.0, 1.5708, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_the_last_answer_counts_and_other_spellings_are_read() -> None:
    text = ('Maybe {"waypoints": [[1,1,1,1,1,1,1]]}, no:\n```json\n{"waypoints": [[0, 0, 0, 0, 0, 0, 0], '
            "[0, 1.5708, 0, 0, 0, 0, 0]]}\n```")
    assert find_answer(text) == ((ZERO, REACHING_X), None)
    assert find_answer("{'waypoints': [[0, 0, 0, 0, 0, 0, 0]]}")[0] == (ZERO,)
    assert find_answer("no answer") == (None, None)
    assert find_answer('"waypoints": [[0, 0]')[0] is None
    assert "not valid JSON" in find_answer('"waypoints": [[0, 0]')[1]
    assert find_answer('"waypoints": [[0, 0]]')[1] == "waypoint 0 has 2 values; the arm has 7 joints, give one angle each"


@pytest.mark.parametrize(
    "text",
    [
        '"waypoints" :\n  [[0, 0, 0, 0, 0, 0, 0]]',  # spaces and newlines on either side of the colon
        "\"waypoints':[[0,0,0,0,0,0,0]]",  # mismatched quotes are read as they always were
        '{"waypoints": [[0, 0, 0, 0, 0, 0, 0]]} and then waypoints: [[1, 1, 1, 1, 1, 1, 1]]',  # unquoted: not a key
        '"waypoints": [[0, 0, 0, 0, 0, 0, 0]] "waypoints" is the key; "waypoints"waypoints',  # keys without a colon
    ],
)
def test_only_a_quoted_key_and_a_colon_make_an_answer(text: str) -> None:
    assert find_answer(text) == ((ZERO,), None)


def test_the_position_of_bad_json_is_counted_in_the_whole_text() -> None:
    prose = "x" * 1000 + ' "waypoints": [[0, 0,]]'
    _, problem = find_answer(prose)
    assert problem == f"the value of \"waypoints\" is not valid JSON (Expecting value at character {len(prose) - 2})"


def test_the_answer_format_round_trips() -> None:
    waypoints = [list(ZERO), list(REACHING_X)]
    assert find_answer(format_answer(waypoints)) == ((ZERO, REACHING_X), None)
    assert find_answer(ANSWER_FORMAT)[0] is None and "not valid JSON" in find_answer(ANSWER_FORMAT)[1]
