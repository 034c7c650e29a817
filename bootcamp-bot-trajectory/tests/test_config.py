"""Constructor configs are checked when a component is built: a wrong value is a ConfigError naming its key, and
`bootcamp eval` turns it into one `error:` line before any episode runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.interaction import TrajectoryFeedback
from bootcamp_bot_trajectory.reward import TrajectoryReward
from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import eval_refuses_component_config

BAD_VALUES = [
    (TrajectoryReward, "soft", "true"),
    (TrajectoryReward, "soft", 0),
    (TrajectoryReward, "soft_distance", "1.0"),
    (TrajectoryReward, "soft_distance", 0),
    (TrajectoryReward, "soft_distance", -0.5),
    (TrajectoryReward, "soft_distance", math.nan),
    (TrajectoryFeedback, "max_unanswered", "three"),
    (TrajectoryFeedback, "max_unanswered", 0),
    (TrajectoryFeedback, "max_unanswered", 1.5),
    (TrajectoryFeedback, "max_unanswered", True),
    (TrajectoryFeedback, "reward_config", "soft"),
    (TrajectoryFeedback, "reward_config", [{"soft": True}]),
]


@pytest.mark.parametrize(("component", "key", "value"), BAD_VALUES,
                         ids=[f"{c.__name__}-{k}-{v!r}" for c, k, v in BAD_VALUES])
def test_a_wrong_value_is_rejected_at_construction_naming_the_key(component, key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        component(**{key: value})
    message = str(caught.value)
    assert caught.value.field == key
    assert f"config {key} " in message and component.__name__ in message and "\n" not in message


def test_the_interaction_rejects_a_bad_reward_config_naming_the_rewards_key() -> None:
    with pytest.raises(ConfigError) as caught:
        TrajectoryFeedback(reward_config={"soft_distance": "far"})
    assert caught.value.field == "soft_distance" and "TrajectoryReward" in str(caught.value)


@pytest.mark.parametrize(("component", "config"), [
    (TrajectoryReward, {}),
    (TrajectoryReward, {"soft": True, "soft_distance": 0.5}),
    (TrajectoryReward, {"soft": False, "unknown": "kept"}),
    (TrajectoryFeedback, {}),
    (TrajectoryFeedback, {"max_unanswered": 5, "reward_config": None}),
    (TrajectoryFeedback, {"max_unanswered": 2.0, "reward_config": {"soft": True}, "other": 1}),
])
def test_defaults_good_values_and_unknown_keys_are_accepted(component, config) -> None:
    assert component(**config).config == config


def test_the_reward_config_reaches_the_interactions_reward() -> None:
    assert TrajectoryFeedback(reward_config={"soft": True, "soft_distance": 0.5}).judge.config == {
        "soft": True, "soft_distance": 0.5}


@pytest.mark.parametrize(("key", "value"), [("clutter", "lots"), ("tolerance", 0.0), ("min_obstacles", 2.5),
                                            ("floor", "yes"), ("check_path_budget", -1)])
def test_the_generator_names_the_key_it_rejects(key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        TrajectoryGenerator(**{key: value})
    assert caught.value.field == key and key in str(caught.value)


def test_eval_with_a_wrongly_typed_interaction_config_value_stops_at_start_up(registry: Registry,
                                                                             tmp_path: Path) -> None:
    # the tools read no config of their own: the interaction (and, through reward_config, the reward) do
    interaction = "interaction:\n  - class_name: bot_trajectory/answer_feedback\n    config:\n      max_unanswered: {}\n"
    eval_refuses_component_config("bot_trajectory", tmp_path, "--interaction-config", interaction.format("three"),
                                  interaction.format(3), "max_unanswered", registry, records=1)
