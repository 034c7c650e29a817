"""Plain data about the arm and paths: limits from the URDF, input checks with clear messages, interpolation."""

from __future__ import annotations

import itertools
import math
import os
from xml.etree import ElementTree

import pytest

from bootcamp_bot_trajectory.robot import (
    JOINT_COUNT,
    LOWER_LIMITS,
    MAX_WAYPOINTS,
    UPPER_LIMITS,
    IdentityError,
    PathError,
    Task,
    limit_violations,
    parse_configuration,
    parse_waypoints,
    path_length,
    path_samples,
    round_configuration,
    sample_count,
    segment_steps,
)
from bootcamp_bot_trajectory.simulator import ROBOT_URDF, import_pybullet


def test_joint_limits_are_the_urdf_ones() -> None:
    _, pybullet_data = import_pybullet()
    tree = ElementTree.parse(os.path.join(pybullet_data.getDataPath(), ROBOT_URDF))
    joints = [joint for joint in tree.getroot().iter("joint") if joint.get("type") == "revolute"]
    assert len(joints) == JOINT_COUNT == 7
    assert [float(joint.find("limit").get("upper")) for joint in joints] == list(UPPER_LIMITS)
    assert [float(joint.find("limit").get("lower")) for joint in joints] == list(LOWER_LIMITS)
    assert UPPER_LIMITS[:2] == (2.96705972839, 2.09439510239)  # ±170°, ±120°: the real iiwa's


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([0.0] * 6, "has 6 values; the arm has 7 joints"),
        ([0.0] * 8, "has 8 values"),
        ([], "has 0 values"),
        ([0.0] * 6 + [float("nan")], r"joint_angles\[6\] \(joint 7\) must be a finite number, got nan"),
        ([float("inf")] + [0.0] * 6, "must be a finite number, got inf"),
        ([0.0] * 6 + ["0.5"], 'must be a number, got "0.5"'),
        ([True] + [0.0] * 6, "must be a number, got True"),
        ([None] * 7, "must be a number, got None"),
        ("0, 0, 0", "must be a list of 7 numbers"),
        ({"joint_1": 0}, "must be a list of 7 numbers"),
        (0.5, "must be a list of 7 numbers"),
    ],
)
def test_bad_configurations_get_clear_messages(value: object, message: str) -> None:
    with pytest.raises(PathError, match=message):
        parse_configuration(value)


def test_good_configurations_become_float_tuples() -> None:
    assert parse_configuration([0, 1, -1, 0.5, 2, -2, 3]) == (0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0)
    assert parse_waypoints([[0] * 7, [1] * 7]) == ((0.0,) * 7, (1.0,) * 7)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "empty"),
        ([[0.0] * 7] * (MAX_WAYPOINTS + 1), f"has {MAX_WAYPOINTS + 1} waypoints; the limit is {MAX_WAYPOINTS}"),
        ([[0.0] * 7, [0.0] * 5], "waypoint 1 has 5 values"),
        ([[0.0] * 7, [0.0] * 6 + [math.nan]], r"waypoint 1\[6\] \(joint 7\) must be a finite"),
        ([0.0] * 7, "waypoint 0 must be a list of 7 numbers"),
        ("[[0,0,0,0,0,0,0]]", "must be a list of configurations"),
    ],
)
def test_bad_paths_get_clear_messages(value: object, message: str) -> None:
    with pytest.raises(PathError, match=message):
        parse_waypoints(value)


def test_limit_violations_name_the_joints() -> None:
    assert limit_violations([0.0] * 7) == []
    assert limit_violations(list(UPPER_LIMITS)) == []  # the limits themselves are allowed
    assert limit_violations([3.0, 0.0, 0.0, -2.1, 0.0, 0.0, 0.0]) == [(0, 3.0), (3, -2.1)]


def test_rounding_stays_within_the_limits() -> None:
    rounded = round_configuration(UPPER_LIMITS)
    assert rounded == (2.967, 2.0943, 2.967, 2.0943, 2.967, 2.0943, 3.0543)
    assert not limit_violations(rounded)
    assert round_configuration(LOWER_LIMITS) == tuple(-angle for angle in rounded)
    assert round_configuration([0.123456, -0.00001] + [0.0] * 5) == (0.1235, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_interpolation_never_moves_a_joint_more_than_the_resolution() -> None:
    waypoints = [(0.0,) * 7, (1.0, -0.5, 0.0, 0.3, 0.0, 0.0, 0.0), (1.0, -0.5, 0.0, 0.3, 0.0, 0.0, 0.0), (0.0,) * 7]
    samples = list(path_samples(waypoints, 0.02))
    assert samples[0] == (-1, 1.0, waypoints[0])
    assert len(samples) == sample_count(waypoints, 0.02) == 1 + 50 + 1 + 50
    for (_, _, before), (_, _, after) in itertools.pairwise(samples):
        assert max(abs(a - b) for a, b in zip(before, after)) <= 0.02 + 1e-12
    # every waypoint is checked exactly, not a rounded neighbour of it
    assert [configuration for segment, fraction, configuration in samples if fraction == 1.0] == waypoints
    assert [segment for segment, _, _ in samples] == [-1] + [0] * 50 + [1] + [2] * 50


def test_segment_steps_count_exact_multiples_once() -> None:
    assert segment_steps((0.0,) * 7, (0.2,) + (0.0,) * 6, 0.02) == 10
    assert segment_steps((0.0,) * 7, (0.2001,) + (0.0,) * 6, 0.02) == 11
    assert segment_steps((0.0,) * 7, (0.0,) * 7, 0.02) == 1  # a repeated waypoint is still checked


def test_path_length_is_the_sum_of_segment_lengths() -> None:
    assert path_length([(0.0,) * 7]) == 0.0
    assert path_length([(0.0,) * 7, (3.0, 4.0) + (0.0,) * 5, (3.0, 4.0) + (0.0,) * 5]) == 5.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"start": [0.0] * 6}, "start has 6 values"),
        ({"target": [0.0, 0.0]}, "target must be a list of 3 numbers"),
        ({"obstacles": [{"center": [0, 0, 1], "half_extents": [0.1, 0.0, 0.1]}]}, "half-extent <= 0"),
        ({"obstacles": [{"center": [0, 0], "half_extents": [0.1, 0.1, 0.1]}]}, "obstacle 0 center"),
        ({"tolerance": -1.0}, "tolerance must be > 0"),
        ({"budget": {"check_path": -1}}, "budget"),
        ({"witness": [[0.0] * 7, [0.0] * 3]}, "waypoint 1 has 3 values"),
    ],
)
def test_malformed_identities_are_refused(identity_for, change: dict, message: str) -> None:
    with pytest.raises(IdentityError, match=message):
        Task.from_identity({**identity_for(), **change})
    with pytest.raises(IdentityError, match="no 'start'"):
        Task.from_identity({key: value for key, value in identity_for().items() if key != "start"})
    with pytest.raises(IdentityError, match="must be an object"):
        Task.from_identity(None)
