"""The tools through their real async lifecycle: results, budgets really enforced, clear errors, nothing leaked."""

from __future__ import annotations

import asyncio
import random

import pytest

from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.tools import CheckPathTool, ForwardKinematicsTool
from bootcamp_core import Registry
from bootcamp_core.testing import run_tool_calls

HALF_PI = 1.5708
REACHING_X = [0.0, HALF_PI, 0.0, 0.0, 0.0, 0.0, 0.0]  # end effector at (0.901, 0, 0.36)


@pytest.fixture
def kinematics(registry: Registry) -> ForwardKinematicsTool:
    return registry.component("tool", "bot_trajectory/forward_kinematics")


@pytest.fixture
def checker(registry: Registry) -> CheckPathTool:
    return registry.component("tool", "bot_trajectory/check_path")


def run(tool, identity: dict, *calls: object) -> list[tuple[str, float, dict]]:
    """Calls of one episode, in order (then calc_reward and release)."""
    results, _ = run_tool_calls(tool, identity, calls)
    return results


def test_schemas_are_valid_and_strict() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    fk = jsonschema.Draft202012Validator(ForwardKinematicsTool.parameters)
    assert fk.is_valid({"joint_angles": [0] * 7})
    assert not fk.is_valid({"joint_angles": [0] * 6}) and not fk.is_valid({}) and not fk.is_valid({"q": [0] * 7})
    path = jsonschema.Draft202012Validator(CheckPathTool.parameters)
    assert path.is_valid({"waypoints": [[0] * 7, [1] * 7]})
    assert not path.is_valid({"waypoints": []}) and not path.is_valid({"waypoints": [[0] * 8]})
    assert not path.is_valid({"waypoints": [[0] * 7] * 101})


def test_forward_kinematics_reports_position_and_distance(kinematics, identity_for) -> None:
    [(text, step, metrics)] = run(kinematics, identity_for(target=(0.901, 0.0, 0.46)), {"joint_angles": REACHING_X})
    assert text == (
        "End effector at (0.9010, 0.0000, 0.3600), 0.1000 m from the target.\nforward_kinematics calls left: 4."
    )
    assert (step, metrics) == (0.0, {"calls": 1, "calls_left": 4, "refused": 0, "invalid": 0})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"joint_angles": [0.0] * 6}, "joint_angles has 6 values; the arm has 7 joints"),
        ({"joint_angles": [0.0] * 6 + [float("nan")]}, "(joint 7) must be a finite number, got nan"),
        ({"joint_angles": [3.0] + [0.0] * 6}, "joint_angles is outside the joint limits: joint 1 = 3.0000"),
        ({"joint_angles": "[0, 0]"}, "joint_angles has 2 values"),
        ({"joint_angles": "zero"}, "a string that is not JSON"),
        ({"angles": [0.0] * 7}, "unknown argument(s) 'angles'"),
        ({}, "missing 'joint_angles'"),
    ],
)
def test_forward_kinematics_bad_input_is_explained_and_free(kinematics, identity_for, arguments, message) -> None:
    [(text, step, metrics)] = run(kinematics, identity_for(), arguments)
    assert text.startswith("Error: ") and message in text and text.endswith("This call was not counted.")
    assert (step, metrics) == (0.0, {"calls": 0, "calls_left": 5, "refused": 0, "invalid": 1})


def test_the_budget_is_enforced(kinematics, identity_for) -> None:
    identity = identity_for(budget={"forward_kinematics": 2, "check_path": 0})
    call = {"joint_angles": [0.0] * 7}
    results = run(kinematics, identity, call, {"joint_angles": [9.0] * 7}, call, call, call)
    texts = [text for text, _, _ in results]
    assert texts[0].endswith("forward_kinematics calls left: 1.")
    assert texts[1].startswith("Error: ")  # bad input costs nothing ...
    assert texts[2].endswith("forward_kinematics calls left: 0.")  # ... so this is the second counted call
    for text in texts[3:]:
        assert text == ("Error: the budget of 2 forward_kinematics calls for this task is used up; nothing was run. "
                        "Give your final answer.")
    assert results[-1][2] == {"calls": 2, "calls_left": 0, "refused": 2, "invalid": 1}


def test_concurrent_calls_cannot_overdraw_the_budget(checker, identity_for) -> None:
    identity = identity_for(budget={"forward_kinematics": 0, "check_path": 3})

    async def episode() -> list[str]:
        instance_id = await checker.create(None, identity=identity)
        calls = [checker.execute(instance_id, {"waypoints": [[0.0] * 7, REACHING_X]}) for _ in range(8)]
        texts = [text for text, _, _ in await asyncio.gather(*calls)]
        assert checker.budget.used(instance_id) == 3
        await checker.release(instance_id)
        return texts

    texts = asyncio.run(episode())
    assert sum("used up" in text for text in texts) == 5 and sum("calls left" in text for text in texts) == 3


def test_budgets_are_per_episode(kinematics, identity_for) -> None:
    identity = identity_for(budget={"forward_kinematics": 1, "check_path": 0})
    call = {"joint_angles": [0.0] * 7}

    async def episodes() -> None:
        first = await kinematics.create(None, identity=identity)
        second = await kinematics.create(None, identity=identity)
        assert "calls left: 0" in (await kinematics.execute(first, call))[0]
        assert "used up" in (await kinematics.execute(first, call))[0]
        assert "calls left: 0" in (await kinematics.execute(second, call))[0]
        await kinematics.release(first)
        await kinematics.release(second)

    asyncio.run(episodes())


def test_creating_an_episode_again_does_not_refill_its_budget(kinematics, checker, identity_for) -> None:
    # verl creates each tool per trajectory and a tool server answers a repeated create: neither hands out new calls
    identity = identity_for(budget={"forward_kinematics": 2, "check_path": 1})
    call = {"joint_angles": [0.0] * 7}

    async def episode() -> list[str]:
        texts = []
        for tool, arguments in ((kinematics, call), (checker, {"waypoints": [[0.0] * 7, REACHING_X]})):
            instance_id = await tool.create("episode-1", identity=identity)
            texts.append((await tool.execute(instance_id, arguments))[0])
            assert await tool.create("episode-1", identity=identity) == instance_id
            texts.append((await tool.execute(instance_id, arguments))[0])
            texts.append((await tool.execute(instance_id, arguments))[0])
            await tool.release(instance_id)
        return texts

    texts = asyncio.run(episode())
    assert texts[0].endswith("forward_kinematics calls left: 1.") and texts[1].endswith("calls left: 0.")
    assert texts[2].startswith("Error: the budget of 2 forward_kinematics calls for this task is used up")
    assert texts[3].endswith("check_path calls left: 0.")
    assert [text.startswith("Error: the budget of 1 check_path calls") for text in texts[4:]] == [True, True]
    # a released episode is over: the same id starts afresh
    [(text, _, _)], _ = run_tool_calls(kinematics, identity, [call], instance_id="episode-1")
    assert text.endswith("forward_kinematics calls left: 1.")


def test_check_path_reports_a_clear_solving_path(checker, identity_for) -> None:
    [(text, _, metrics)] = run(checker, identity_for(), {"waypoints": [[0.0] * 7, REACHING_X]})
    assert text.splitlines() == [
        "Checked 80 of 80 configurations along 2 waypoints (steps of at most 0.02 rad per joint).",
        "The path is collision-free and within the joint limits.",
        "The first waypoint is the start configuration.",
        ("End effector at the last waypoint: (0.9010, 0.0000, 0.3600), 0.0000 m from the target (tolerance 0.02 m): "
         "within tolerance."),
        "Verdict: this path solves the task.",
        "check_path calls left: 2.",
    ]
    assert metrics == {"calls": 1, "calls_left": 2, "refused": 0, "invalid": 0}


def test_check_path_names_the_first_collision_and_what_it_hit(checker, identity_for) -> None:
    # a box where the arm passes halfway down from upright to horizontal
    identity = identity_for([([0.45, 0.0, 1.05], [0.05, 0.05, 0.05])])
    [(text, _, _)] = run(checker, identity, {"waypoints": [[0.0] * 7, REACHING_X]})
    lines = text.splitlines()
    assert lines[0].startswith("Checked ") and " of 80 configurations" in lines[0]
    assert lines[1].startswith("Collision on segment 0 (waypoint 0 -> waypoint 1), ")
    assert "penetrates obstacle 0 by " in lines[1]
    assert lines[-2] == "Verdict: not a solution yet."


def test_calc_reward_counts_the_checks_whose_path_collided(checker, identity_for) -> None:
    identity = identity_for([([0.45, 0.0, 1.05], [0.05, 0.05, 0.05])], budget={"forward_kinematics": 0, "check_path": 5})
    through = {"waypoints": [[0.0] * 7, REACHING_X]}
    around = {"waypoints": [[0.0] * 7, [1.2] + [0.0] * 6, [1.2, HALF_PI] + [0.0] * 5, REACHING_X]}
    probe = {"waypoints": [[0.0] * 7, [0.3] + [0.0] * 6]}  # clear, but it ends far from the target: not a failure
    bad = {"waypoints": [[0.0] * 6]}  # refused as invalid: never checked
    assert run_tool_calls(checker, identity, [around, probe, bad])[1] == 0.0
    assert run_tool_calls(checker, identity, [through, around])[1] == 1.0
    assert run_tool_calls(checker, identity, [through, through, probe, through])[1] == 3.0
    # past the budget nothing runs, so nothing more fails
    assert run_tool_calls(checker, identity, [through] * 7)[1] == 5.0


def test_creating_an_episode_again_keeps_its_failed_checks(checker, identity_for) -> None:
    identity = identity_for([([0.45, 0.0, 1.05], [0.05, 0.05, 0.05])])

    async def episode() -> tuple[float, float, float]:
        instance_id = await checker.create("episode-1", identity=identity)
        await checker.execute(instance_id, {"waypoints": [[0.0] * 7, REACHING_X]})
        await checker.create("episode-1", identity=identity)
        kept = await checker.calc_reward(instance_id)
        other = await checker.create("episode-2", identity=identity)
        fresh = await checker.calc_reward(other)
        await checker.release(other)
        await checker.release(instance_id)
        return kept, fresh, await checker.calc_reward(instance_id)

    assert asyncio.run(episode()) == (1.0, 0.0, 0.0)


def test_check_path_reports_start_and_target_misses(checker, identity_for) -> None:
    [(text, _, _)] = run(checker, identity_for(target=(0.0, 0.5, 0.5)), {"waypoints": [REACHING_X]})
    assert "The first waypoint is not the start configuration: a joint differs by 1.5708 rad" in text
    assert "not within tolerance" in text and "Verdict: not a solution yet." in text


def test_check_path_floor_and_self_collisions(checker, identity_for) -> None:
    [(text, _, _)] = run(checker, identity_for(), {"waypoints": [[0.0] * 7, [0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]]})
    assert "penetrates the floor" in text
    folded = [0.0, 2.0, 0.0, -2.09, 0.0, 0.0, 0.0]
    [(text, _, _)] = run(checker, identity_for(floor=False), {"waypoints": [[0.0] * 7, folded]})
    assert "penetrates link 0 (the base) of the arm itself" in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"waypoints": []}, "waypoints is empty"),
        ({"waypoints": [[0.0] * 7, [0.0] * 3]}, "waypoint 1 has 3 values"),
        ({"waypoints": [[0.0] * 7, [0.0] * 6 + [None]]}, "waypoint 1[6] (joint 7) must be a number, got None"),
        ({"waypoints": [[0.0] * 7] * 101}, "has 101 waypoints; the limit is 100"),
        ({"waypoints": [[0.0] * 7, [0.0, 2.5] + [0.0] * 5, [0.0, 0.0, 0.0, -2.2] + [0.0] * 3]},
         ("every waypoint must be within the joint limits: waypoint 1 is outside the joint limits: joint 2 = 2.5000 "
          "(limits ±2.09439510239); waypoint 2 is outside the joint limits: joint 4 = -2.2000")),
        ({"waypoints": [[0.0] * 7], "fast": True}, "unknown argument(s) 'fast'"),
        ({"path": [[0.0] * 7]}, "unknown argument(s) 'path'"),
    ],
)
def test_check_path_bad_input_is_explained_and_free(checker, identity_for, arguments, message) -> None:
    [(text, step, metrics)] = run(checker, identity_for(), arguments)
    assert text.startswith("Error: ") and message in text and "not counted" in text
    assert (step, metrics) == (0.0, {"calls": 0, "calls_left": 3, "refused": 0, "invalid": 1})


def test_many_limit_violations_are_summarised(checker, identity_for) -> None:
    [(text, _, _)] = run(checker, identity_for(), {"waypoints": [[0.0] * 7] + [[4.0] * 7] * 9})
    assert "waypoint 5 is outside" in text and "waypoint 6 is outside" not in text and "and 4 more" in text


def test_json_encoded_waypoints_are_accepted(checker, identity_for) -> None:
    [(text, _, _)] = run(checker, identity_for(), {"waypoints": "[[0, 0, 0, 0, 0, 0, 0], [0, 1.5708, 0, 0, 0, 0, 0]]"})
    assert "Verdict: this path solves the task." in text


def test_tools_refuse_an_identity_of_another_bootcamp(checker) -> None:
    with pytest.raises(ValueError, match="no 'start'"):
        asyncio.run(checker.create(None, identity={"expression": "1 + 2"}))


def test_tool_outputs_never_show_the_witness(kinematics, checker) -> None:
    identity = TrajectoryGenerator(min_obstacles=6, max_obstacles=8).case_generator(random.Random(4))
    start = set(identity["start"])
    secret = {f"{angle:.4f}" for point in identity["witness"][1:] for angle in point if angle not in start}
    outputs = [text for text, _, _ in run(kinematics, identity, {"joint_angles": identity["start"]},
                                          {"joint_angles": [0.0] * 7})]
    outputs += [text for text, _, _ in run(checker, identity, {"waypoints": [identity["start"]]},
                                           {"waypoints": [identity["start"], [0.0] * 7]})]
    for text in outputs:
        assert "witness" not in text.lower()
        assert not {number for number in secret if number in text}, text
