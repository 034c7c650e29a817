"""The reward reads the match score from the tools, with or without a final answer."""

from __future__ import annotations

import math

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import episode_kwargs
from bootcamp_texas_holdem.reward import ChipsReward

IDENTITY = {"seed": 1}


@pytest.fixture
def reward(registry: Registry) -> ChipsReward:
    return registry.component("reward", "texas_holdem/chips")


def kwargs(**tool_scores: object) -> dict:
    return {**episode_kwargs(), "tool_scores": tool_scores}


@pytest.mark.parametrize("output", ["Result: +1250 chips", "", "I give up", None])
def test_scores_from_the_tools_whatever_the_answer(reward: ChipsReward, output: object) -> None:
    assert reward.verify_score(output, IDENTITY, **kwargs(act=0.73, table=0.73)) == 0.73  # type: ignore[arg-type]


def test_reads_act_then_table(reward: ChipsReward) -> None:
    assert reward.verify_score("", IDENTITY, **kwargs(table=0.4)) == 0.4
    assert reward.verify_score("", IDENTITY, **kwargs(act=0.6, table=0.4)) == 0.6


@pytest.mark.parametrize(
    "scores",
    [{}, {"act": None}, {"act": "0.9"}, {"act": math.nan}, {"act": True}, {"other": 0.9}, {"act": 10**400},
     {"act": -(10**400)}, {"act": math.inf}, {"act": "nan"}, {"act": [0.9]}, {"act": {"score": 1}}],
)
def test_no_usable_tool_score_is_zero(reward: ChipsReward, scores: dict) -> None:
    assert reward.verify_score("Result: +1 chips", IDENTITY, **kwargs(**scores)) == 0.0


def test_clamped_and_never_raises(reward: ChipsReward) -> None:
    assert reward.verify_score("", IDENTITY, **kwargs(act=1.7)) == 1.0
    assert reward.verify_score("", IDENTITY, **kwargs(act=-3)) == 0.0
    assert reward.verify_score("", IDENTITY) == 0.0
    assert reward.verify_score("", IDENTITY, tool_scores=[0.9]) == 0.0
    assert reward.extract_output("  Result: +5 chips \n") == "Result: +5 chips"
    assert reward.extract_output("   ") == ""  # no answer still scores: the match is in the tools
    assert reward.verify_correction("x", IDENTITY, tool_scores={"act": 0.25}) == 0.25
    assert not reward.errors


@pytest.mark.parametrize("output", ["Result: +1 chips", "", None, 10**400, b"\xff"])
def test_hostile_tool_scores_never_raise_and_stay_in_range(reward: ChipsReward, output: object) -> None:
    for scores in ({"act": 10**400}, {"act": math.nan, "table": 10**400}, {"act": "1e999"}, {"table": -math.inf}):
        score = reward.verify_score(output, IDENTITY, **kwargs(**scores))  # type: ignore[arg-type]
        assert score == 0.0
    assert reward.verify_score(output, IDENTITY, **kwargs(act=10**400, table=0.3)) == 0.3  # type: ignore[arg-type]
    assert not reward.errors
