"""The reward: the judge on the final answer, less for failed checks and long detours; the soft score; garbage 0."""

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
    assert 0.9 <= soft["solved, with a long detour"] < 1.0
    assert soft["wrong start"] == 0.0
    for name in ("through the box", "clear, ending 27 cm off target", "stays at the start"):
        assert 0.0 < soft[name] < 0.6, name  # below the solved threshold
    assert soft["clear, ending 27 cm off target"] > soft["through the box"]
    assert soft["clear, ending 27 cm off target"] > soft["stays at the start"]
    assert soft["through the box"] < 0.3  # reaching the target through an obstacle earns no distance credit
    padded = [[0.0] * 7] + [[0.0] * 6 + [3.0 * (-1) ** k] for k in range(60)] + [[0.0] * 7, REACHING_X]
    assert reward.verify_score(format_answer(padded), identity, soft=True) < 0.3  # nor does padding a colliding path
    assert reward.verify_score(format_answer([[0.0] * 7, REACHING_X]), identity) == 0.0  # strict is unchanged
    # failed checks lower the soft score of an unsolved path too
    clear_miss = format_answer(AROUND[:3] + [[0.3, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]])
    checked = reward.verify_score(clear_miss, identity, soft=True, **episode(failed=2))
    assert 0.0 < checked < soft["clear, ending 27 cm off target"]


def test_soft_can_be_the_configured_default(identity_for) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    answer = format_answer([[0.0] * 7, REACHING_X])
    assert 0.0 < TrajectoryReward(soft=True).verify_score(answer, identity) < 0.6
    assert TrajectoryReward(soft=True).verify_score(answer, identity, soft=False) == 0.0


def test_without_a_witness_length_costs_nothing(reward, identity_for) -> None:
    detour = format_answer(AROUND[:1] + [[-2.5] + [0.0] * 6, [2.5] + [0.0] * 6] * 3 + AROUND[1:])
    assert reward.verify_score(detour, identity_for([BLOCKING_BOX])) == 1.0
    assert reward.verify_score(detour, identity_for([BLOCKING_BOX]), soft=True) == 1.0


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


def episode(failed: object = 0.0) -> dict:
    """The episode kwargs every runner passes, with ``failed`` as the check tool's score (its failed checks)."""
    return {"messages": [], "tool_rewards": [0.0] * 3, "tool_scores": {"forward_kinematics": 0.0, "check_path": failed},
            "turn_scores": [0.0]}


def test_every_failed_check_lowers_the_score(reward, identity_for) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    answer = format_answer(AROUND)
    scores = [reward.verify_score(answer, identity, **episode(failed)) for failed in range(6)]
    assert scores[0] == 1.0
    assert scores == sorted(scores, reverse=True) and len(set(scores[:5])) == 5
    assert scores[4] == scores[5] > 0.0  # a solving path always beats an unsolved one
    threshold = TrajectoryReward.solved_threshold
    assert [score >= threshold - 1e-9 for score in scores] == [True, True, False, False, False, False]
    # failed checks never lift an unsolved path
    through = format_answer([[0.0] * 7, REACHING_X])
    assert {reward.verify_score(through, identity, **episode(failed)) for failed in range(4)} == {0.0}


def test_a_detour_scores_lower_than_a_direct_clear_path(reward, identity_for) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    swings = [[[-2.5] + [0.0] * 6, [2.5] + [0.0] * 6] * repeat for repeat in range(4)]
    scores = [reward.verify_score(format_answer(AROUND[:1] + swing + AROUND[1:]), identity) for swing in swings]
    assert scores[0] == 1.0  # the direct path round the box
    assert scores == sorted(scores, reverse=True) and scores[1] < 1.0 and scores[-1] == 0.9
    # length never decides solved: the longest detour with one failed check still counts
    longest = format_answer(AROUND[:1] + swings[-1] + AROUND[1:])
    assert reward.verify_score(longest, identity, **episode(1)) >= TrajectoryReward.solved_threshold
    # a detour up to twice the witness's length costs nothing
    assert reward.verify_score(format_answer(AROUND[:1] + [[0.5] + [0.0] * 6] + AROUND), identity) == 1.0


@pytest.mark.parametrize("failed", [None, "3", True, -2.0, float("nan"), [1], float("inf"), 1e308])
def test_odd_tool_scores_never_raise(reward, identity_for, failed) -> None:
    identity = identity_for([BLOCKING_BOX], witness=AROUND)
    errors = len(reward.errors)
    score = reward.verify_score(format_answer(AROUND), identity, **episode(failed))
    assert score in (1.0, pytest.approx(0.2))  # read as no failed check, or capped at the most the checks take off
    assert len(reward.errors) == errors
    assert reward.verify_score(format_answer(AROUND), identity, tool_scores="check_path") == 1.0
