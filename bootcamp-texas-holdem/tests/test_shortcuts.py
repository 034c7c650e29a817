"""Shortcuts: trivial strategies lose to every default opponent and the reference agent beats each of them.

Every default level's first 20 test-split tasks are played through ``run_episode`` in the duplicate format (each deal
once from each seat, ``mirror_seats``, which cancels the luck of the cards: scripted players remember no cards) by
always fold/check, always call, always min-raise, always all-in, uniformly random legal moves and the reference
agent, which is handed the identity without its hidden fields. Each mean score's 95% interval must lie below
break-even (0.5) for a shortcut and above it for the reference, per level and per opponent.
"""

from __future__ import annotations

import math
import statistics
from importlib import resources

import pytest
import yaml

from bootcamp_core import EpisodeResult, Registry, RolloutLimits
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy
from bootcamp_texas_holdem.agent import EquityPlayer
from bootcamp_texas_holdem.generator import HeadsUpGenerator
from bootcamp_texas_holdem.shortcuts import SHORTCUTS, shortcut_turn

DEFAULT = yaml.safe_load((resources.files("bootcamp_texas_holdem") / "configs" / "default.yaml").read_text())
LEVELS = sorted(DEFAULT["instruction_generators"])
TASKS = 20
LIMITS = RolloutLimits(**HeadsUpGenerator.limits)


def duplicate_records(registry: Registry, level: str) -> list[dict]:
    """The level's first ``TASKS`` test-split tasks, each deal played from both seats."""
    group = DEFAULT["instruction_generators"][level]
    config = {**group, "config": {**group["config"], "mirror_seats": True}}
    data = {"instruction_generators": {level: config}, "global_config": DEFAULT["global_config"]}
    return generate_records("texas_holdem", registry, instruction_config=data,
                            overrides={"split_samples": {"test": TASKS}})


async def _reference(messages: list[dict], tools: list[dict], record: object, rng: object) -> dict:
    """The reference agent, given the identity without the fields a model never sees."""
    visible = {key: value for key, value in record.identity.items() if key not in HeadsUpGenerator.hidden_fields}
    return await EquityPlayer().act(messages, tools, visible, rng)


POLICIES = {name: shortcut_turn(name) for name in SHORTCUTS} | {"reference": _reference}


@pytest.fixture(scope="module")
def played(registry: Registry) -> dict[tuple[str, str], list[EpisodeResult]]:
    """(level, policy) -> the episodes of every policy on the same tasks."""
    results = {}
    for level in LEVELS:
        records = duplicate_records(registry, level)
        for name, turn in POLICIES.items():
            results[level, name] = play_episodes(records, registry, policy=scripted_policy(turn), limits=LIMITS)
    return results


def interval(scores: list[float]) -> tuple[float, float]:
    """The 95% normal interval of the mean score."""
    mean = statistics.fmean(scores)
    half = 1.96 * statistics.stdev(scores) / math.sqrt(len(scores))
    return mean - half, mean + half


def groups(played: dict, name: str) -> dict[str, list[float]]:
    """Scores of policy ``name`` by level and by opponent."""
    found: dict[str, list[float]] = {}
    for level in LEVELS:
        for result in played[level, name]:
            assert result.finish_reason == "terminated" and result.success, (level, name, result.finish_reason)
            found.setdefault(f"level {level}", []).append(result.score)
            found.setdefault(f"opponent {result.ground_truth['opponent']}", []).append(result.score)
    return found


def test_the_tasks_are_duplicate_matches_of_the_default_levels(played: dict) -> None:
    for level in LEVELS:
        results = played[level, "reference"]
        assert len(results) == TASKS and {result.generator_name for result in results} == {level}
        assert all(result.ground_truth["duplicate"] and result.ground_truth["hands"] % 2 == 0 for result in results)
        for name in POLICIES:  # every policy met the same tasks
            assert [r.ground_truth for r in played[level, name]] == [r.ground_truth for r in results]


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_every_trivial_strategy_loses_to_every_default_opponent(played: dict, name: str) -> None:
    for where, scores in groups(played, name).items():
        low, high = interval(scores)
        assert high < 0.5, f"{name} against {where}: mean {statistics.fmean(scores):.3f}, interval [{low:.3f}, {high:.3f}]"


def test_the_reference_agent_beats_every_default_opponent(played: dict) -> None:
    for where, scores in groups(played, "reference").items():
        low, high = interval(scores)
        assert low > 0.5, f"reference against {where}: mean {statistics.fmean(scores):.3f}, interval [{low:.3f}, {high:.3f}]"
