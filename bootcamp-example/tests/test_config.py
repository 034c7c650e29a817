"""Config checked when a component is built: each key a tool, interaction or reward reads is checked in
``__init__``, so a bad value fails once, naming the key, and `bootcamp eval` stops at start-up with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import converse, eval_refuses_component_config, run_tool_calls
from bootcamp_example.generator import ArithmeticGenerator

NAMESPACE = "example"
IDENTITY = {"expression": "2 + 3", "expected_result": 5.0, "tolerance": 1e-8}

#: (kind, id, key, a wrong value): each must be refused when the component is built
BAD_VALUES = [
    ("tool", "example/calculator", "wasted_call_penalty", "lots"),
    ("tool", "example/calculator", "wasted_call_penalty", -0.1),
    ("tool", "example/calculator", "wasted_call_penalty", float("nan")),
    ("tool", "example/calculator", "wasted_call_penalty", True),
    ("reward", "example/arithmetic", "soft_decades", "eight"),
    ("reward", "example/arithmetic", "soft_decades", -1),
    ("reward", "example/arithmetic", "soft_decades", float("inf")),
    ("interaction", "example/feedback", "max_attempts", "3"),
    ("interaction", "example/feedback", "max_attempts", 0),
    ("interaction", "example/feedback", "max_attempts", 2.5),
    ("interaction", "example/feedback", "max_unanswered", None),
    ("interaction", "example/feedback", "max_unanswered", -1),
    ("interaction", "example/feedback", "reward_config", ["soft_decades", 4]),
]


@pytest.mark.parametrize(("kind", "component_id", "key", "value"), BAD_VALUES)
def test_a_wrong_value_is_refused_when_the_component_is_built(registry: Registry, kind, component_id, key,
                                                              value) -> None:
    with pytest.raises(ConfigError) as caught:
        registry.component(kind, component_id, {key: value})
    message = str(caught.value)
    assert caught.value.field == key and f"config {key} must be" in message and "\n" not in message
    assert registry.info(kind, component_id).cls.__name__ in message


def test_the_reward_config_of_the_interaction_is_checked_by_the_reward(registry: Registry) -> None:
    with pytest.raises(ConfigError) as caught:
        registry.component("interaction", "example/feedback", {"reward_config": {"soft_decades": "eight"}})
    assert caught.value.field == "soft_decades" and str(caught.value).startswith("ArithmeticReward: ")



@pytest.mark.parametrize(("key", "value"), [("tolerance", "tight"), ("tolerance", -1), ("min_value", 1.5), ("max_operands", "8"), ("operations", 5)])
def test_the_generator_names_the_key_it_refuses(key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        ArithmeticGenerator(**{key: value})
    assert caught.value.field == key and key in str(caught.value)

def test_defaults_and_unknown_keys_are_accepted(registry: Registry) -> None:
    for kind, component_id in (("tool", "example/calculator"), ("reward", "example/arithmetic"),
                               ("interaction", "example/feedback")):
        registry.component(kind, component_id)
        registry.component(kind, component_id, {"a_key_no_one_reads": object()})


def test_checked_values_are_the_ones_used(registry: Registry) -> None:
    tool = registry.component("tool", "example/calculator", {"wasted_call_penalty": 0.25})
    results, reward = run_tool_calls(tool, IDENTITY, [{"expression": "2 + 3"}, {"expression": "2 + 3"}])
    assert [step for _, step, _ in results] == [0.0, -0.25] and reward == 0.75
    reward = registry.component("reward", "example/arithmetic", {"soft_decades": 4})
    # a relative error of 1e-3 is 5 decades beyond the 1e-8 tolerance: 0 with 4 decades, 3/8 with the default 8
    assert reward.verify_correction(5.005, IDENTITY, soft=True) == 0.0
    default = registry.component("reward", "example/arithmetic")
    assert default.verify_correction(5.005, IDENTITY, soft=True) == pytest.approx(0.375)
    interaction = registry.component("interaction", "example/feedback", {"max_attempts": 1.0})
    responses, _ = converse(interaction, IDENTITY, '```json\n{"result": 4}\n```')
    assert responses[0][:2] == (True, "That is not correct, and no attempts are left.")


@pytest.mark.parametrize(("option", "text", "key"), [
    ("--tool-config", "tools:\n  - class_name: example/calculator\n    config: {wasted_call_penalty: lots}\n",
     "wasted_call_penalty"),
    ("--interaction-config", "interaction:\n  - class_name: example/feedback\n    config: {max_attempts: lots}\n",
     "max_attempts"),
])
def test_eval_with_a_wrongly_typed_config_value_stops_at_start_up(registry: Registry, tmp_path: Path, option, text,
                                                                 key) -> None:
    eval_refuses_component_config("example", tmp_path, option, text, text.replace("lots", "2"), key, registry)
