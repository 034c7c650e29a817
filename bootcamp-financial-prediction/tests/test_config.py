"""Config checked when a component is built: each key a tool or the interaction reads is checked in ``__init__``, so
a bad value fails once, naming the key, and `bootcamp eval` stops at start-up with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import converse, eval_refuses_component_config, run_tool_calls
from bootcamp_financial_prediction.generator import ForecastGenerator

NAMESPACE = "financial_prediction"
TOOLS = ("financial_prediction/calculate_metrics", "financial_prediction/check_consistency")

#: (kind, id, key, a wrong value): each must be refused when the component is built
BAD_VALUES = [
    *[("tool", tool, key, value) for tool in TOOLS for key, value in (
        ("budget", "four"), ("budget", -1), ("budget", 2.5), ("budget", False),
        ("wasted_call_penalty", "lots"), ("wasted_call_penalty", -0.5), ("wasted_call_penalty", float("inf")),
    )],
    ("interaction", "financial_prediction/answer_feedback", "max_unanswered", "3"),
    ("interaction", "financial_prediction/answer_feedback", "max_unanswered", 0),
    ("interaction", "financial_prediction/answer_feedback", "max_unanswered", 1.5),
    ("interaction", "financial_prediction/answer_feedback", "reward_config", "strict"),
]


@pytest.mark.parametrize(("kind", "component_id", "key", "value"), BAD_VALUES)
def test_a_wrong_value_is_refused_when_the_component_is_built(registry: Registry, kind, component_id, key,
                                                              value) -> None:
    with pytest.raises(ConfigError) as caught:
        registry.component(kind, component_id, {key: value})
    message = str(caught.value)
    assert caught.value.field == key and f"config {key} must be" in message and "\n" not in message
    assert registry.info(kind, component_id).cls.__name__ in message



@pytest.mark.parametrize(("key", "value"), [("noise", "low"), ("visible_years", 2.5), ("guidance", "all"), ("capex_announcement", "vague"),
    ("revenue_range", 5), ("scoring", [1]), ("tool_budget", 0)])
def test_the_generator_names_the_key_it_refuses(key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        ForecastGenerator(**{key: value})
    assert caught.value.field == key and key in str(caught.value)

def test_defaults_and_unknown_keys_are_accepted(registry: Registry) -> None:
    for kind, component_id in (*(("tool", tool) for tool in TOOLS), ("reward", "financial_prediction/forecast"),
                               ("interaction", "financial_prediction/answer_feedback")):
        registry.component(kind, component_id)
        registry.component(kind, component_id, {"a_key_no_one_reads": object()})


def test_checked_values_are_the_ones_used(registry: Registry, identity: dict) -> None:
    without_budget = {key: value for key, value in identity.items() if key != "tool_budget"}
    tool = registry.component("tool", TOOLS[1], {"budget": 1.0, "wasted_call_penalty": 0.25})
    call = {"statements": dict(identity["statements"][-1])}
    results, reward = run_tool_calls(tool, without_budget, [call, call])
    assert results[1][0] == "Error: the budget of 1 check_consistency calls for this task is used up."
    assert [step for _, step, _ in results] == [0.0, -0.25] and reward == 0.75
    interaction = registry.component("interaction", "financial_prediction/answer_feedback", {"max_unanswered": 1})
    responses, _ = converse(interaction, identity, "No idea.")
    assert responses[0][:2] == (True, "No complete forecast was given; the episode ends.")


@pytest.mark.parametrize(("option", "text", "key"), [
    ("--tool-config", f"tools:\n  - class_name: {TOOLS[0]}\n    config: {{budget: lots}}\n", "budget"),
    ("--interaction-config",
     "interaction:\n  - class_name: financial_prediction/answer_feedback\n    config: {max_unanswered: lots}\n",
     "max_unanswered"),
])
def test_eval_with_a_wrongly_typed_config_value_stops_at_start_up(registry: Registry, tmp_path: Path, option, text,
                                                                 key) -> None:
    eval_refuses_component_config("financial_prediction", tmp_path, option, text, text.replace("lots", "2"), key, registry)
