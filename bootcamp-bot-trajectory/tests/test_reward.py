"""The reward from the final answer alone: strict 0/1 by the judge, the optional soft score, garbage scores 0."""

from __future__ import annotations

import random

import pytest

from bootcamp_bot_trajectory.answer import format_answer
from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.reward import TrajectoryReward
from bootcamp_core import Registry

HALF_PI = 1.5708
REACHING_X = [0.0, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]  # end effector at (0.901, 0, 0.36)
#: A box the straight swing from upright to REACHING_X goes through; going round by joint 1 avoids it.
BLOCKING_BOX = ([0.45, 0.0, 1.05], [0.05, 0.05, 0.05])
AROUND = [[0.0] * 7, [1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.2, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0], REACHING_X]


@pytest.fixture
def reward(registry: Registry) -> TrajectoryReward:
    return registry.component("reward", "bot_trajectory/trajectory")


@pytest.fixture(scope="module")
def generated() -> list[dict]:
    generator = TrajectoryGenerator(min_obstacles=6, max_obstacles=10, clutter=0.6, tolerance=0.02)
    rng = random.Random(8)
    return [generator.case_generator(rng) for _ in range(3)]


def test_the_witness_scores_one_and_its_straight_cut_may_not(reward, generated) -> None:
    for identity in generated:
        assert reward.verify_score(format_answer(identity["witness"]), identity) == 1.0
        assert reward.verify_score(format_answer(identity["witness"]), identity, soft=True) == 1.0


def test_a_path_around_the_box_scores_one_and_through_it_zero(reward, identity_for) -> None:
    identity = identity_for([BLOCKING_BOX])
    assert reward.verify_score(format_answer(AROUND), identity) == 1.0
    assert reward.verify_score(format_answer([[0.0] * 7, REACHING_X]), identity) == 0.0


@pytest.mark.parametrize(
    ("waypoints", "why"),
    [
        ([[0.01] + [0.0] * 6, REACHING_X], "starts 0.01 rad away from the start"),
        ([[0.0] * 7, [0.0, HALF_PI, 0.0, 0.0, 0.0, 0.1, 0.0]], "ends 8 mm from the target (tolerance 5 mm)"),
        ([[0.0] * 7, [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0], REACHING_X], "dips into the floor"),
        ([[0.0] * 7, [0.0, 2.2, 0.0, 0.0, 0.0, 0.0, 0.0], REACHING_X], "leaves the joint limits"),
        ([[0.0] * 7], "never moves"),
    ],
)
def test_every_rule_is_strict(reward, identity_for, waypoints, why) -> None:
    identity = identity_for(tolerance=0.005)
    assert reward.verify_score(format_answer(waypoints), identity) == 0.0, why


def test_the_start_tolerance_and_the_target_tolerance_are_inclusive(reward, identity_for) -> None:
    identity = identity_for(tolerance=0.02)
    nudged = [[0.001, 0.0, 0.0, -0.001, 0.0, 0.0, 0.0], REACHING_X]
    assert reward.verify_score(format_answer(nudged, digits=3), identity) == 1.0
    # the hand 1.6 cm off the target: within 2 cm, not within 1 cm
    off = [[0.0] * 7, [0.0, HALF_PI, 0.0, 0.0, 0.0, 0.2, 0.0]]
    assert reward.verify_score(format_answer(off), identity) == 1.0
    assert reward.verify_score(format_answer(off), identity_for(tolerance=0.01)) == 0.0


def test_soft_reward_orders_answers_sensibly(reward, identity_for) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    soft = {
        "solved, as short as the witness": reward.verify_score(format_answer(AROUND), identity, soft=True),
        "solved, with a long detour": reward.verify_score(
            format_answer(AROUND[:1] + [[-2.0] + [0.0] * 6, [2.0] + [0.0] * 6] + AROUND[1:]), identity, soft=True),
        "through the box": reward.verify_score(format_answer([[0.0] * 7, REACHING_X]), identity, soft=True),
        "clear, ending 27 cm off target": reward.verify_score(
            format_answer(AROUND[:3] + [[0.3, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]]), identity, soft=True),
        "stays at the start": reward.verify_score(format_answer([[0.0] * 7]), identity, soft=True),
        "wrong start": reward.verify_score(format_answer([REACHING_X]), identity, soft=True),
    }
    assert soft["solved, as short as the witness"] == 1.0
    assert 0.8 <= soft["solved, with a long detour"] < 1.0
    assert soft["wrong start"] == 0.0
    for name in ("through the box", "clear, ending 27 cm off target", "stays at the start"):
        assert 0.0 < soft[name] < 0.8, name
    assert soft["clear, ending 27 cm off target"] > soft["through the box"]
    assert soft["clear, ending 27 cm off target"] > soft["stays at the start"]
    assert soft["through the box"] < 0.4  # reaching the target through an obstacle earns no distance credit
    padded = [[0.0] * 7] + [[0.0] * 6 + [3.0 * (-1) ** k] for k in range(60)] + [[0.0] * 7, REACHING_X]
    assert reward.verify_score(format_answer(padded), identity, soft=True) < 0.4  # nor does padding a colliding path
    assert reward.verify_score(format_answer([[0.0] * 7, REACHING_X]), identity) == 0.0  # strict is unchanged


def test_soft_can_be_the_configured_default(identity_for) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    answer = format_answer([[0.0] * 7, REACHING_X])
    assert 0.0 < TrajectoryReward(soft=True).verify_score(answer, identity) < 0.8
    assert TrajectoryReward(soft=True).verify_score(answer, identity, soft=False) == 0.0


def test_soft_without_a_witness_still_ranges_in_zero_one(reward, identity_for) -> None:
    score = reward.verify_score(format_answer(AROUND), identity_for([BLOCKING_BOX]), soft=True)
    assert 0.8 <= score <= 1.0


@pytest.mark.parametrize(
    "output",
    [
        None, "", "no answer here", '{"waypoints": }', '{"waypoints": [[0,0,0,0,0,0]]}', '{"waypoints": "[]"}',
        '{"waypoints": [[0,0,0,0,0,0,NaN]]}', '{"waypoints": [[1e999,0,0,0,0,0,0]]}', '{"waypoints": []}',
        '{"waypoints": [[0,0,0,0,0,0,0]' + ",[0,0,0,0,0,0,0]" * 100 + "]}", "[" * 1000, 12345,
    ],
)
def test_garbage_scores_zero_without_crashing(reward, identity_for, output) -> None:
    errors = len(reward.errors)
    assert reward.verify_score(output, identity_for()) == 0.0
    assert reward.verify_score(output, identity_for(), soft=True) == 0.0
    assert len(reward.errors) == errors  # handled, not caught as a plugin crash


@pytest.mark.parametrize("identity", [None, {}, {"expression": "1 + 2"}, {"start": [0.0] * 7}])
def test_a_foreign_identity_scores_zero_cleanly(reward, identity) -> None:
    errors = len(reward.errors)
    assert reward.verify_score(format_answer([[0.0] * 7]), identity) == 0.0
    assert len(reward.errors) == errors


def test_tool_use_never_enters_the_score(reward, identity_for) -> None:
    kwargs = {"messages": [], "tool_rewards": [-1.0] * 9, "tool_scores": {"check_path": 0.0}, "turn_scores": [0.0]}
    assert reward.verify_score(format_answer([[0.0] * 7, REACHING_X]), identity_for(), **kwargs) == 1.0
