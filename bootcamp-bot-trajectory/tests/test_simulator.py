"""PyBullet as the judge uses it: kinematics against known poses, collisions against hand-placed boxes, clients."""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import subprocess
import sys
import threading
from xml.etree import ElementTree

import anyio
import pytest

from bootcamp_bot_trajectory.judge import judge_path
from bootcamp_bot_trajectory.robot import UPPER_LIMITS, Box, Task
from bootcamp_bot_trajectory.simulator import (
    ROBOT_URDF,
    SCENE_CACHE,
    SIMULATION_THREADS,
    Simulator,
    import_pybullet,
    on_simulation_thread,
    simulate,
    simulator,
)

HALF_PI = math.pi / 2
#: Top of the flange's collision shape with every joint at 0 (measured once with getClosestPoints).
FLANGE_TOP = 1.30702


@pytest.mark.parametrize(
    ("configuration", "position"),
    [
        # upright: base 0.36 to joint 2, then 0.42 (upper arm) + 0.40 (forearm) + 0.081 (wrist to flange)
        ([0, 0, 0, 0, 0, 0, 0], (0.0, 0.0, 1.261)),
        # joint 2 at 90°: the whole arm horizontal at shoulder height, along +x (or -x at -90°)
        ([0, HALF_PI, 0, 0, 0, 0, 0], (0.901, 0.0, 0.36)),
        ([0, -HALF_PI, 0, 0, 0, 0, 0], (-0.901, 0.0, 0.36)),
        # joint 1 turns that about z
        ([HALF_PI, HALF_PI, 0, 0, 0, 0, 0], (0.0, 0.901, 0.36)),
        # joint 4 at 90°: upper arm up to the elbow at 0.78, forearm + flange (0.481) horizontal
        ([0, 0, 0, HALF_PI, 0, 0, 0], (-0.481, 0.0, 0.78)),
        ([0, 0, HALF_PI, HALF_PI, 0, 0, 0], (0.0, -0.481, 0.78)),
        # joint 6 at 90°: only the 0.081 from the wrist to the flange turns
        ([0, 0, 0, 0, 0, HALF_PI, 0], (0.081, 0.0, 1.18)),
        # joints 5 and 7 turn about the arm's own axis when it is straight: nothing moves
        ([0, 0, 0, 0, 1.0, 0, -2.0], (0.0, 0.0, 1.261)),
    ],
)
def test_forward_kinematics_of_known_poses(configuration: list[float], position: tuple[float, ...]) -> None:
    assert simulator().end_effector(configuration) == pytest.approx(position, abs=1e-6)


def _rotation(roll: float, pitch: float, yaw: float) -> list[list[float]]:
    cr, sr, cp, sp, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    return [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]


def _urdf_chain_position(configuration: list[float]) -> tuple[float, ...]:
    """The flange position from the URDF's joint origins and z axes alone, composed by hand."""
    _, pybullet_data = import_pybullet()
    root = ElementTree.parse(os.path.join(pybullet_data.getDataPath(), ROBOT_URDF)).getroot()
    rotation = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    position = [0.0, 0.0, 0.0]
    joints = [joint for joint in root.iter("joint") if joint.get("type") == "revolute"]
    for joint, angle in zip(joints, configuration):
        assert joint.find("axis").get("xyz").split() == ["0", "0", "1"]
        origin = joint.find("origin")
        offset = [float(value) for value in origin.get("xyz").split()]
        position = [position[i] + sum(rotation[i][k] * offset[k] for k in range(3)) for i in range(3)]
        local = _rotation(*(float(value) for value in origin.get("rpy").split()))
        local = [[sum(local[i][k] * _rotation(0, 0, angle)[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
        rotation = [[sum(rotation[i][k] * local[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    return tuple(position)


def test_forward_kinematics_matches_the_urdf_chain() -> None:
    rng = random.Random(3)
    sim = simulator()
    for _ in range(25):
        configuration = [rng.uniform(-limit, limit) for limit in UPPER_LIMITS]
        assert sim.end_effector(configuration) == pytest.approx(_urdf_chain_position(configuration), abs=1e-6)


def test_link_positions_end_at_the_end_effector() -> None:
    sim = simulator()
    links = sim.link_positions([0.0] * 7)
    assert len(links) == 7 and links[-1] == pytest.approx((0.0, 0.0, 1.261), abs=1e-6)
    assert [z for _, _, z in links] == sorted(z for _, _, z in links)


def _scene(*boxes: tuple[tuple, tuple], floor: bool = True) -> tuple:
    return tuple(Box(center, half) for center, half in boxes), floor


def test_a_box_on_the_arm_collides_and_one_beside_it_does_not() -> None:
    sim = simulator()
    sim.load(_scene(((0.0, 0.0, 0.9), (0.05, 0.05, 0.05))))  # around the upright forearm
    [contact, *_] = sim.contacts([0.0] * 7)
    assert contact.obstacle == 0 and contact.other == "obstacle 0" and contact.depth > 0.01
    assert sim.collides([0.0] * 7)
    sim.load(_scene(((0.5, 0.5, 0.5), (0.05, 0.05, 0.05))))
    assert not sim.collides([0.0] * 7) and sim.contacts([0.0] * 7) == []


def test_only_real_penetration_counts() -> None:
    sim = simulator()
    # a slab over the upright arm: 1 mm above the flange is clear, 1 mm into it collides, about 1 mm deep
    sim.load(_scene(((0.0, 0.0, FLANGE_TOP + 0.001 + 0.1), (0.2, 0.2, 0.1))))
    assert sim.contacts([0.0] * 7) == []
    sim.load(_scene(((0.0, 0.0, FLANGE_TOP - 0.001 + 0.1), (0.2, 0.2, 0.1))))
    [contact] = sim.contacts([0.0] * 7)
    assert contact.link == 6 and contact.depth == pytest.approx(0.001, abs=2e-4)
    assert contact.position[2] == pytest.approx(FLANGE_TOP, abs=2e-3)
    assert contact.describe().startswith("link 7 (the flange) penetrates obstacle 0 by 0.001")


def test_the_floor_counts_and_can_be_switched_off() -> None:
    sim = simulator()
    down = [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # leaning over so far the hand goes below z = 0
    sim.load(_scene())
    assert sim.end_effector(down)[2] < 0
    assert {contact.other for contact in sim.contacts(down)} == {"the floor"}
    assert not sim.collides([0.0, 1.9, 0.0, 0.0, 0.0, 0.0, 0.0])  # 7 cm above it
    sim.load(_scene(floor=False))
    assert not sim.collides(down)
    sim.load(_scene())
    assert not sim.collides([0.0] * 7)  # the base stands on the floor by design


def test_self_collision_with_the_base_counts() -> None:
    sim = simulator()
    sim.load(_scene(floor=False))
    folded = [0.0, 2.0, 0.0, -2.09, 0.0, 0.0, 0.0]  # folded back down into its own base
    contacts = sim.contacts(folded)
    assert contacts and {contact.other for contact in contacts} == {"link 0 (the base) of the arm itself"}
    assert contacts[0].describe().startswith("link 5 penetrates link 0 (the base) of the arm itself")


def test_the_wrist_bend_is_not_a_self_collision() -> None:
    # the convex hulls of the forearm and the flange overlap at a legal 120° wrist bend: ignored on purpose
    sim = simulator()
    sim.load(_scene(floor=False))
    assert not sim.collides([0.0, 0.0, 0.0, 0.0, 0.0, UPPER_LIMITS[5], 0.0])


def test_a_thin_obstacle_between_two_waypoints_is_caught(identity_for) -> None:
    # the arm held out along x sweeps from -0.24 to +0.24 rad about z through a 4 mm plate in the plane y = 0
    left = [-0.24, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]
    right = [0.24, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]
    plate = ([0.75, 0.0, 0.36], [0.08, 0.002, 0.15])
    task = Task.from_identity(identity_for([plate], start=left, target=(0.875, 0.214, 0.36), resolution=0.02))
    for end in (left, right):
        assert judge_path(task, [end]).clear  # neither waypoint touches the plate
    report = judge_path(task, [left, right])
    assert not report.clear and report.segment == 0 and 0.3 < report.fraction < 0.7
    assert report.contacts[0].obstacle == 0
    assert "Collision on segment 0 (waypoint 0 -> waypoint 1)" in report.describe()
    # checking only the two ends (a step as large as the segment) would have called it clear
    coarse = Task.from_identity(identity_for([plate], start=left, resolution=0.5))
    assert judge_path(coarse, [left, right]).clear


def test_scenes_switch_back_and_forth_and_old_ones_are_dropped() -> None:
    sim = Simulator(scene_cache=3)
    try:
        blocking = _scene(((0.0, 0.0, 0.9), (0.05, 0.05, 0.05)))
        empty = _scene()
        for _ in range(3):
            sim.load(blocking)
            assert sim.collides([0.0] * 7)
            sim.load(empty)
            assert not sim.collides([0.0] * 7)
        for index in range(SCENE_CACHE + 2):  # more scenes than the cache holds: the oldest bodies are removed
            sim.load(_scene(((1.0 + index, 0.0, 0.5), (0.05, 0.05, 0.05))))
            assert not sim.collides([0.0] * 7)
        sim.load(blocking)
        assert sim.collides([0.0] * 7) and sim.contacts([0.0] * 7)[0].other == "obstacle 0"
        bodies = sim.pybullet.getNumBodies(physicsClientId=sim.client)
        assert bodies <= 2 + 3  # the arm, the floor, and at most three cached one-box scenes
    finally:
        sim.close()


def test_a_client_is_rebuilt_before_unfreeable_shapes_pile_up() -> None:
    # PyBullet never frees a collision shape: past its limit a client starts afresh at the next scene change
    sim = Simulator(scene_cache=2, shape_limit=6)
    try:
        for index in range(8):
            sim.load(_scene(((0.0, 0.0, 0.9), (0.05, 0.05, 0.05 + index / 1000))))
            assert sim.collides([0.0] * 7) and sim.contacts([0.0] * 7)[0].other == "obstacle 0"
            sim.load(_scene())
            assert not sim.collides([0.0] * 7)
            assert sim.shapes <= 6 + 1
        assert sim.rebuilds >= 1  # (PyBullet may hand the new client the old one's id)
        # never while a loose box is out: its body id must stay valid until it is removed
        body = sim.add_box(Box((1.0, 1.0, 1.0), (0.1, 0.1, 0.1)))
        rebuilds = sim.rebuilds
        for index in range(8):
            sim.load(_scene(((2.0, 0.0, 0.5), (0.05, 0.05, 0.05 + index / 1000))))
        assert sim.rebuilds == rebuilds and not sim.near([0.0] * 7, [body], 0.01)
        sim.remove(body)
        sim.load(_scene())
        assert sim.rebuilds == rebuilds + 1
    finally:
        sim.close()


def test_slow_work_runs_on_a_few_simulation_threads_with_clients_of_their_own() -> None:
    here = simulator()
    used = {on_simulation_thread(lambda: id(simulator())) for _ in range(50)}
    assert id(here) not in used and 1 <= len(used) <= SIMULATION_THREADS
    # already on a simulation thread: run there, never wait for another one (which could deadlock a full pool)
    outer, inner = on_simulation_thread(lambda: (threading.get_ident(), on_simulation_thread(threading.get_ident)))
    assert outer == inner != threading.get_ident()

    async def from_the_loop() -> tuple[int, int]:
        return threading.get_ident(), await simulate(threading.get_ident)

    loop_thread, worker = anyio.run(from_the_loop)
    assert worker != loop_thread and worker != threading.get_ident()


def test_one_client_per_thread() -> None:
    found: dict[str, Simulator] = {}

    def remember(name: str) -> None:
        found[name] = simulator()
        found[name + " again"] = simulator()

    threads = [threading.Thread(target=remember, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found["a"] is found["a again"] and found["b"] is found["b again"]
    assert len({found["a"].client, found["b"].client, simulator().client}) == 3


def _child_end_effector(connection) -> None:
    connection.send((simulator().pid, simulator().end_effector([0.0] * 7)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_gets_a_client_of_its_own() -> None:
    parent = simulator()
    receiving, sending = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child_end_effector, args=(sending,))
    child.start()
    pid, position = receiving.recv()
    child.join(30)
    assert child.exitcode == 0 and pid == child.pid != parent.pid
    assert position == pytest.approx((0.0, 0.0, 1.261), abs=1e-6)
    assert parent.end_effector([0.0] * 7) == pytest.approx((0.0, 0.0, 1.261), abs=1e-6)


def test_the_build_banner_stays_out_of_the_output() -> None:
    code = "from bootcamp_bot_trajectory.simulator import simulator; simulator(); print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok\n", "")


def test_inverse_kinematics_reaches_a_reachable_target() -> None:
    sim = simulator()
    target = sim.end_effector([0.4, 0.8, -0.3, -1.2, 0.5, 0.7, 0.0])
    rng = random.Random(0)
    for _ in range(10):
        solution = sim.inverse_kinematics(target, [rng.uniform(-limit, limit) for limit in UPPER_LIMITS])
        if math.dist(sim.end_effector(solution), target) < 1e-3:
            break
    assert math.dist(sim.end_effector(solution), target) < 1e-3
    assert all(abs(angle) <= limit for angle, limit in zip(solution, UPPER_LIMITS))
