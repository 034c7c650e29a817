"""Shortcut policies played through ``run_episode`` on the default levels: none may solve what takes planning.

Each policy plays 20 generated test-split tasks of every default level. The reference agent (RRT-Connect) gets the
identity without the generator's ``hidden_fields`` (the witness), so it cannot read the answer; it must solve at
least 95% of them, while every shortcut that never reads the obstacles solves at most 20%:

- obstacle-blind retry: K = 8 IK solutions of the target (seeded from the start and from 7 random configurations),
  each tried as a straight joint-space line with ``check_path`` while the budget lasts, the first one the checker
  approves answered (else the next untried one, blindly);
- start-goal teleport: the straight line to the IK solution seeded from the start, answered with no check;
- goal only: the IK solution alone as the path (it skips the start configuration).

"Solved" is the reward's ``solved_threshold``: a solving path found with at most one failed check (a ``check_path``
call whose path collided). The mean score of every shortcut stays at most the ceiling too, and the reference agent's
at least the floor: each failed check costs the score, so retrying until the checker says yes earns little even when
it ends on a solving path.
"""

from __future__ import annotations

import math
import random
from importlib import resources

import pytest
import yaml

from bootcamp_bot_trajectory.agent import PlannerAgent
from bootcamp_bot_trajectory.answer import format_answer
from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.judge import SOLVED
from bootcamp_bot_trajectory.reward import TrajectoryReward
from bootcamp_bot_trajectory.robot import LOWER_LIMITS, UPPER_LIMITS, round_configuration
from bootcamp_bot_trajectory.simulator import simulator
from bootcamp_core import message_text, tool_call_message
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy

#: Tasks per default level.
TASKS = 20
#: IK solutions the obstacle-blind planner tries.
K = 8
SHORTCUT_CEILING = 0.2
REFERENCE_FLOOR = 0.95


def default_levels() -> dict:
    return yaml.safe_load((resources.files("bootcamp_bot_trajectory") / "configs" / "default.yaml").read_text())


LEVELS = list(default_levels()["instruction_generators"])


def level_records(level: str, count: int = TASKS, split: str = "test") -> list[dict]:
    """``count`` records of one group of the default config, generated exactly as ``bootcamp generate`` does."""
    config = default_levels()
    config["instruction_generators"] = {level: {**config["instruction_generators"][level], "generation_ratio": 1}}
    return generate_records("bot_trajectory", split=split, instruction_config=config,
                            overrides={"split_samples": f"{split}:{count}"})


def ik_goals(identity: dict, count: int = K, seed: int = 0) -> list[tuple[float, ...]]:
    """IK solutions of the target: the first seeded from the start, the others from seeded random configurations."""
    sim = simulator()
    sim.load(((), bool(identity["floor"])))
    target, tolerance = identity["target"], identity["tolerance"]
    rng = random.Random(seed)
    seeds = [tuple(identity["start"])] + [
        tuple(rng.uniform(low, high) for low, high in zip(LOWER_LIMITS, UPPER_LIMITS)) for _ in range(count - 1)
    ]
    goals = []
    for start in seeds:
        for _ in range(4):
            solution = round_configuration(sim.inverse_kinematics(target, start))
            if math.dist(sim.end_effector(solution), target) <= tolerance / 2:
                break
            start = solution
        goals.append(solution)
    return goals


def _answer(waypoints) -> dict:
    return {"role": "assistant", "content": format_answer(waypoints)}


def _checks(messages: list[dict]) -> tuple[int, str | None]:
    """(``check_path`` calls made, the text of the last tool reply)."""
    calls = sum(1 for message in messages if message.get("role") == "assistant"
                for call in message.get("tool_calls") or () if (call.get("function") or {}).get("name") == "check_path")
    replies = [message_text(message.get("content")) for message in messages if message.get("role") == "tool"]
    return calls, replies[-1] if replies else None


async def blind_retry(messages, tools, record, rng) -> dict:
    identity = record.identity
    start = list(identity["start"])
    goals = ik_goals(identity, seed=record.index)
    calls, reply = _checks(messages)
    if reply is not None and SOLVED in reply:
        return _answer([start, goals[calls - 1]])
    refused = reply is not None and "used up" in reply
    if calls < K and not refused:
        return tool_call_message(messages, ("check_path", {"waypoints": [start, list(goals[calls])]}))
    # out of calls (the refused goal was never checked) or out of goals: answer blindly
    return _answer([start, goals[min(calls, K) - 1]])


async def teleport(messages, tools, record, rng) -> dict:
    return _answer([record.identity["start"], ik_goals(record.identity, count=1)[0]])


async def goal_only(messages, tools, record, rng) -> dict:
    return _answer([ik_goals(record.identity, count=1)[0]])


_REFERENCE = PlannerAgent()


async def reference(messages, tools, record, rng) -> dict:
    """The reference agent on the identity without its hidden fields."""
    visible = {key: value for key, value in record.identity.items() if key not in TrajectoryGenerator.hidden_fields}
    return await _REFERENCE.act(messages, tools, visible, rng)


POLICIES = {"blind_retry": blind_retry, "teleport": teleport, "goal_only": goal_only, "reference": reference}


def solved_share(results) -> float:
    threshold = TrajectoryReward.solved_threshold
    assert all(result.solved == (result.score >= threshold - 1e-9) for result in results)
    return sum(result.solved for result in results) / len(results)


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict]]:
    return {level: level_records(level) for level in LEVELS}


def test_the_witness_is_hidden():
    assert "witness" in TrajectoryGenerator.hidden_fields


@pytest.mark.parametrize("level", LEVELS)
def test_the_straight_line_to_the_start_seeded_goal_collides(records, level):
    results = play_episodes(records[level], policy=scripted_policy(teleport))
    assert solved_share(results) == 0.0


@pytest.mark.parametrize("level", LEVELS)
def test_shortcuts_stay_under_the_ceiling(records, level):
    for name in ("blind_retry", "goal_only"):
        results = play_episodes(records[level], policy=scripted_policy(POLICIES[name]))
        assert len(results) == TASKS
        assert solved_share(results) <= SHORTCUT_CEILING, name
        assert sum(result.score for result in results) / TASKS <= SHORTCUT_CEILING, name


@pytest.mark.parametrize("level", LEVELS)
def test_the_reference_agent_solves_without_hidden_fields(records, level):
    results = play_episodes(records[level], policy=scripted_policy(reference))
    assert solved_share(results) >= REFERENCE_FLOOR
    assert sum(result.score for result in results) / TASKS >= REFERENCE_FLOOR


@pytest.mark.parametrize("level", LEVELS)
def test_blind_retries_cost_the_score(records, level):
    # every straight line it checks collides: the failed checks reach the reward through the check tool's score
    results = play_episodes(records[level], policy=scripted_policy(blind_retry))
    assert all(result.tool_scores["check_path"] >= 1.0 for result in results)
    assert all(result.score < 1.0 for result in results)
