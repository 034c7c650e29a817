"""The reference agent through the real rollout engine and evaluator: plans, confirms with check_path, answers."""

from __future__ import annotations

import asyncio
import gc
import json
import random
from pathlib import Path

import pytest

from bootcamp_bot_trajectory.agent import PlannerAgent
from bootcamp_bot_trajectory.answer import find_answer
from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.simulator import SIMULATION_THREADS, Simulator
from bootcamp_bot_trajectory.tools import CheckPathTool
from bootcamp_core import ConfigError, EpisodeResult, Registry, RolloutLimits, read_records, tool_call_message
from bootcamp_core.testing import evaluate_with_reference, generate_dataset, generate_records, play_episodes

CHECK_PATH = [CheckPathTool.openai_schema()]


def records(registry: Registry, count: int, seed: int = 42) -> list[dict]:
    return generate_records("bot_trajectory", registry, overrides={"split_samples": f"test:{count}", "seed": seed})


@pytest.fixture(scope="module")
def episodes(registry: Registry) -> list[EpisodeResult]:
    """One task of every group of the default config (hidden obstacles included), played end to end."""
    return play_episodes(records(registry, 5), registry)


def test_solves_each_level_with_one_check(episodes: list[EpisodeResult]) -> None:
    assert {result.generator_name for result in episodes} == {"level_1", "level_2", "level_3", "level_4", "hidden"}
    limits = RolloutLimits()
    for result in episodes:
        assert (result.score, result.success, result.error_type, result.finish_reason) == (1.0, True, None,
                                                                                           "terminated")
        assert [call.name for call in result.tool_calls] == ["check_path"]
        assert "Verdict: this path solves the task." in result.tool_calls[0].output
        assert result.turn_record["assistant_turns"] <= limits.max_assistant_turns
        assert result.turn_scores == [1.0]


def test_answers_exactly_the_path_check_path_approved(episodes: list[EpisodeResult]) -> None:
    for result in episodes:
        checked = json.loads(result.tool_calls[0].arguments)["waypoints"]
        final = result.messages[-1]
        assert final["role"] == "assistant" and not final.get("tool_calls")
        assert find_answer(final["content"])[0] == tuple(tuple(point) for point in checked)
        assert checked[0] == result.ground_truth["start"]


def test_plays_the_same_way_twice(registry: Registry, episodes: list[EpisodeResult]) -> None:
    [again] = play_episodes(records(registry, 5)[3:4], registry)
    assert again.messages == episodes[3].messages


def _act(identity: dict, messages: list[dict], tools: list[dict] = CHECK_PATH) -> dict:
    return asyncio.run(PlannerAgent().act(messages, tools, identity, random.Random(1)))


@pytest.fixture(scope="module")
def identity() -> dict:
    return TrajectoryGenerator(min_obstacles=8, max_obstacles=10, clutter=0.8).case_generator(random.Random(2))


def test_never_needs_the_witness(registry: Registry, identity: dict) -> None:
    secret = {key: value for key, value in identity.items() if key != "witness"}
    message = _act(secret, [{"role": "user", "content": "..."}], tools=[])
    reward = registry.component("reward", "bot_trajectory/trajectory")
    assert not message.get("tool_calls") and reward.verify_score(message["content"], secret) == 1.0


def test_answers_without_checking_when_no_checks_are_left(identity: dict) -> None:
    no_checks = {**identity, "budget": {"forward_kinematics": 20, "check_path": 0}}
    message = _act(no_checks, [{"role": "user", "content": "..."}])
    assert not message.get("tool_calls") and find_answer(message["content"])[0] is not None


def _rejected(waypoints: list, calls: int) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": "..."}]
    for _ in range(calls):
        call = tool_call_message(messages, ("check_path", {"waypoints": waypoints}))
        messages += [call, {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
                            "content": "Collision ...\nVerdict: not a solution yet."}]
    return messages


def test_plans_again_after_a_rejection_while_checks_are_left(identity: dict) -> None:
    budget = identity["budget"]["check_path"]
    again = _act(identity, _rejected([identity["start"]], 1))
    assert again["tool_calls"][0]["function"]["name"] == "check_path"
    done = _act(identity, _rejected([identity["start"]], budget))
    assert not done.get("tool_calls") and "no check_path calls are left" in done["content"]


def test_bad_planner_settings_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bad planner settings"):
        PlannerAgent(planner={"speed": 2})
    assert PlannerAgent(planner={"step": 0.3}).settings.step == 0.3


def test_answers_the_approved_path_verbatim() -> None:
    waypoints = [[0.0] * 7, [0.1] * 7]
    messages = _rejected(waypoints, 1)
    messages[-1]["content"] = "...\nVerdict: this path solves the task.\ncheck_path calls left: 2."
    identity = {"start": [0.0] * 7, "target": [0, 0, 1], "tolerance": 0.1, "obstacles": [], "resolution": 0.02,
                "budget": {"check_path": 3}}
    message = _act(identity, messages)
    assert message["content"].endswith('```json\n{"waypoints": [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], '
                                       "[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]]}\n```")


@pytest.mark.slow
def test_solves_at_least_95_percent_of_40_seeded_tasks(registry: Registry, tmp_path: Path) -> None:
    # the evaluator runs 16 episodes at once: planning, path checks and rewards all want a simulator at once
    dataset = generate_dataset("bot_trajectory", tmp_path / "data", registry,
                               overrides={"split_samples": "test:40", "seed": 2024})[0]
    summary = evaluate_with_reference(dataset, tmp_path / "eval", registry, max_concurrent=16)
    results = list(read_records(tmp_path / "eval" / "results.jsonl"))
    assert len(results) == 40 and summary["overall"]["infrastructure_errors"] == 0
    solved = sum(result["score"] == 1.0 for result in results)
    assert solved >= 38, f"solved {solved} of 40"
    assert {result["generator_name"] for result in results} == {"level_1", "level_2", "level_3", "level_4", "hidden"}
    for result in results:
        calls = [call["name"] for call in result["tool_calls"]]
        assert len(calls) <= result["ground_truth"]["budget"]["check_path"] and set(calls) <= {"check_path"}
    # however many worker threads the evaluation used, PyBullet clients (about 35 MB each) stayed few
    gc.collect()
    clients = [item for item in gc.get_objects() if isinstance(item, Simulator) and item.connected]
    assert len(clients) <= SIMULATION_THREADS + 1
