"""The arithmetic reward: extraction, tolerance, soft scoring, garbage."""

from __future__ import annotations

import itertools

import pytest

from bootcamp_core import Registry
from bootcamp_example.reward import ArithmeticReward, soft_score

IDENTITY = {"expression": "1 + 1", "expected_result": 1234.5, "tolerance": 1e-8}


@pytest.fixture
def reward(registry: Registry) -> ArithmeticReward:
    return registry.component("reward", "example/arithmetic")


@pytest.mark.parametrize(
    ("output", "value"),
    [
        ('```json\n{"result": 1234.5}\n```', 1234.5),
        ('{"result": 1}\nactually\n```json\n{"result": 2}\n```', 2.0),
        ('"result": -7', -7.0),
        ('{"result": "12.5"}', 12.5),
        ('{"result": 1.2e-3}', 0.0012),
        ('{"result": -4E+2}', -400.0),
        ("{'result': 3}", 3.0),
        ('{"result":.5}', 0.5),
        ('{"result": 1}, then {"result": "oops"}', 1.0),
    ],
)
def test_extracts_the_last_result(reward: ArithmeticReward, output: str, value: float) -> None:
    assert reward.extract_output(output) == value


@pytest.mark.parametrize(
    "output", ["", "1234.5", "the result is 1234.5", '{"answer": 3}', '{"result": null}', '{"result": 1e999}', None, 12]
)
def test_extracts_nothing_from_text_without_a_result(reward: ArithmeticReward, output: object) -> None:
    assert reward.extract_output(output) is None  # type: ignore[arg-type]


def test_reads_megabytes_of_output_in_one_pass(reward: ArithmeticReward) -> None:
    # long runs of spaces or digits that end in no answer: a backtracking pattern is quadratic in their length here
    assert reward.extract_output('"result":' + " " * 1_000_000 + "x") is None
    assert reward.extract_output('{"result": "' + "1" * 200_000 + " " * 200_000 + "x") is None
    assert reward.extract_output(('"result": ' + " " * 100) * 10_000 + '"result":' + " " * 1000 + "7") == 7.0


def test_right_answer_scores_one_wrong_scores_zero(reward: ArithmeticReward) -> None:
    assert reward.verify_score('```json\n{"result": 1234.5}\n```', IDENTITY) == 1.0
    assert reward.verify_score('```json\n{"result": 1234.6}\n```', IDENTITY) == 0.0
    assert reward.verify_score('{"result": 1234.6} ... {"result": 1234.5}', IDENTITY) == 1.0
    assert reward.verify_score('{"result": 1234.5} ... {"result": 1234.6}', IDENTITY) == 0.0


def test_tolerance_boundary_is_inclusive(reward: ArithmeticReward) -> None:
    identity = {"expression": "1 + 1", "expected_result": 2.0, "tolerance": 0.5}
    assert reward.verify_correction(3.0, identity) == 1.0
    assert reward.verify_correction(1.0, identity) == 1.0
    assert reward.verify_correction(3.0001, identity) == 0.0
    tight = {**identity, "expected_result": 1e6, "tolerance": 1e-8}
    assert reward.verify_correction(1e6 * (1 + 0.9e-8), tight) == 1.0
    assert reward.verify_correction(1e6 * (1 + 1.1e-8), tight) == 0.0


def test_zero_expected_value_uses_an_absolute_floor(reward: ArithmeticReward) -> None:
    identity = {"expression": "1 - 1", "expected_result": 0.0, "tolerance": 1e-8}
    assert reward.verify_correction(0.0, identity) == 1.0
    assert reward.verify_correction(1e-24, identity) == 1.0
    assert reward.verify_correction(1e-6, identity) == 0.0


@pytest.mark.parametrize(
    ("output", "identity"),
    [
        (None, IDENTITY),
        ("", IDENTITY),
        ("no idea", IDENTITY),
        (12, IDENTITY),
        ('{"result": 1234.5}', {}),
        ('{"result": 1234.5}', {"expected_result": "many"}),
        ('{"result": 1234.5}', {"expected_result": None, "tolerance": 1e-8}),
        ('{"result": 1234.5}', None),
    ],
)
def test_garbage_scores_zero_without_crashing(reward: ArithmeticReward, output: object, identity: object) -> None:
    errors = len(reward.errors)
    assert reward.verify_score(output, identity) == 0.0  # type: ignore[arg-type]
    assert len(reward.errors) == errors  # handled cleanly, not caught as a plugin crash


def test_soft_reward_decays_monotonically_with_distance(reward: ArithmeticReward) -> None:
    expected = IDENTITY["expected_result"]
    errors = [0.0, 1e-9, 1e-8, 1e-7, 1e-6, 1e-4, 1e-2, 0.5, 1.0, 10.0, 1e6]
    scores = [
        reward.verify_score(f'{{"result": {expected * (1 + error)!r}}}', IDENTITY, soft=True) for error in errors
    ]
    assert scores[:3] == [1.0, 1.0, 1.0]
    assert all(later <= earlier for earlier, later in itertools.pairwise(scores))
    assert 0.0 < scores[4] < 1.0 and scores[4] > scores[6]
    assert scores[8:] == [0.0, 0.0, 0.0]  # 0 at 8 decades beyond the tolerance (relative error 1)
    # the hard reward gives no partial credit
    assert reward.verify_score(f'{{"result": {expected * (1 + 1e-6)!r}}}', IDENTITY) == 0.0


def test_soft_score_formula() -> None:
    assert soft_score(1e-8, 1e-8) == 1.0
    assert soft_score(1e-4, 1e-8) == pytest.approx(0.5)
    assert soft_score(1e-4, 1e-8, decades=4) == pytest.approx(0.0)
    assert soft_score(float("inf"), 1e-8) == 0.0


def test_soft_decades_from_config_or_kwarg() -> None:
    wide = ArithmeticReward(soft_decades=16)
    output = f'{{"result": {IDENTITY["expected_result"] * 1.0001!r}}}'
    assert wide.verify_score(output, IDENTITY, soft=True) > ArithmeticReward().verify_score(output, IDENTITY, soft=True)
    assert ArithmeticReward().verify_score(output, IDENTITY, soft=True, soft_decades=16) == pytest.approx(
        wide.verify_score(output, IDENTITY, soft=True)
    )


def test_tool_thrift_never_enters_the_score(reward: ArithmeticReward) -> None:
    kwargs = {"messages": [], "tool_rewards": [-0.1] * 20, "tool_scores": {"calculator": 0.0}, "turn_scores": [0.0]}
    assert reward.verify_score('{"result": 1234.5}', IDENTITY, **kwargs) == 1.0
