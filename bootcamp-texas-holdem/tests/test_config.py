"""Config checked when a component is built: each key a tool or the interaction reads is checked in ``__init__``, so
a bad value fails once, naming the key, and `bootcamp eval` stops at start-up with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import converse, eval_refuses_component_config, run_tool_calls
from bootcamp_texas_holdem.generator import HeadsUpGenerator

NAMESPACE = "texas_holdem"
TOOLS = ("texas_holdem/table", "texas_holdem/act")
IDENTITY = {"seed": 123, "hands": 4, "duplicate": False, "small_blind": 50, "big_blind": 100,
            "starting_stack": 20_000, "opponent": "tight_passive", "reveal_opponent": True, "score_scale": 2_000.0}

#: (kind, id, key, a wrong value): each must be refused when the component is built
BAD_VALUES = [
    *[("tool", tool, "illegal_action_penalty", value) for tool in TOOLS
      for value in ("lots", -0.1, float("nan"), True)],
    ("interaction", "texas_holdem/table_feedback", "max_reminders", "3"),
    ("interaction", "texas_holdem/table_feedback", "max_reminders", -1),
    ("interaction", "texas_holdem/table_feedback", "max_reminders", 1.5),
    ("interaction", "texas_holdem/table_feedback", "max_reminders", None),
]


@pytest.mark.parametrize(("kind", "component_id", "key", "value"), BAD_VALUES)
def test_a_wrong_value_is_refused_when_the_component_is_built(registry: Registry, kind, component_id, key,
                                                              value) -> None:
    with pytest.raises(ConfigError) as caught:
        registry.component(kind, component_id, {key: value})
    message = str(caught.value)
    assert caught.value.field == key and f"config {key} must be" in message and "\n" not in message
    assert registry.info(kind, component_id).cls.__name__ in message



@pytest.mark.parametrize(("key", "value"), [("opponents", 5), ("opponents", {"shark": 1}), ("opponents", {"random": -1}), ("duplicate", "yes"),
    ("score_scale_bb_per_hand", 0)])
def test_the_generator_names_the_key_it_refuses(key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        HeadsUpGenerator(**{key: value})
    assert caught.value.field == key and key in str(caught.value)

def test_defaults_and_unknown_keys_are_accepted(registry: Registry) -> None:
    for kind, component_id in (*(("tool", tool) for tool in TOOLS), ("reward", "texas_holdem/chips"),
                               ("interaction", "texas_holdem/table_feedback")):
        registry.component(kind, component_id)
        registry.component(kind, component_id, {"a_key_no_one_reads": object()})


def test_checked_values_are_the_ones_used(registry: Registry) -> None:
    act = registry.component("tool", "texas_holdem/act", {"illegal_action_penalty": 0.25})
    (refused,), _ = run_tool_calls(act, IDENTITY, [{"action": "fly"}])
    assert refused[1] == -0.25 and refused[2]["illegal_actions"] == 1
    interaction = registry.component("interaction", "texas_holdem/table_feedback", {"max_reminders": 0})
    responses, _ = converse(interaction, IDENTITY, "I am not sure.")
    assert len(responses) == 1 and responses[0][0] is True and "match unfinished" in responses[0][1]


@pytest.mark.parametrize(("option", "text", "key"), [
    ("--tool-config", "tools:\n  - class_name: texas_holdem/act\n    config: {illegal_action_penalty: lots}\n",
     "illegal_action_penalty"),
    ("--interaction-config",
     "interaction:\n  - class_name: texas_holdem/table_feedback\n    config: {max_reminders: lots}\n",
     "max_reminders"),
])
def test_eval_with_a_wrongly_typed_config_value_stops_at_start_up(registry: Registry, tmp_path: Path, option, text,
                                                                 key) -> None:
    eval_refuses_component_config("texas_holdem", tmp_path, option, text, text.replace("lots", "2"), key, registry)
