"""Constructor configs are checked when a component is built: a wrong value is a ConfigError naming its key, and
`bootcamp eval` turns it into one `error:` line before any episode runs."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from bootcamp_battery_design.generator import CellDesignGenerator
from bootcamp_battery_design.reward import CellDesignReward
from bootcamp_battery_design.tools import BatterySimulationTool
from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import eval_refuses_component_config

BAD_VALUES = [
    (BatterySimulationTool, "budget", "eight"),
    (BatterySimulationTool, "budget", -1),
    (BatterySimulationTool, "budget", 2.5),
    (BatterySimulationTool, "budget", True),
    (BatterySimulationTool, "budget", None),
    (CellDesignReward, "soft", "false"),
    (CellDesignReward, "soft", 1),
    (CellDesignReward, "soft_energy_scale", "0.1"),
    (CellDesignReward, "soft_energy_scale", -0.1),
    (CellDesignReward, "soft_energy_scale", math.nan),
    (CellDesignReward, "soft_temperature_scale_K", "10 K"),
    (CellDesignReward, "soft_temperature_scale_K", -1.0),
    (CellDesignReward, "soft_temperature_scale_K", math.inf),
]


@pytest.mark.parametrize(("component", "key", "value"), BAD_VALUES,
                         ids=[f"{c.__name__}-{k}-{v!r}" for c, k, v in BAD_VALUES])
def test_a_wrong_value_is_rejected_at_construction_naming_the_key(component, key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        component(**{key: value})
    message = str(caught.value)
    assert caught.value.field == key
    assert f"config {key} " in message and component.__name__ in message and "\n" not in message


@pytest.mark.parametrize(("component", "config"), [
    (BatterySimulationTool, {}),
    (BatterySimulationTool, {"budget": 0}),
    (BatterySimulationTool, {"budget": 12.0}),
    (BatterySimulationTool, {"budget": 3, "some_other_key": "kept"}),
    (CellDesignReward, {}),
    (CellDesignReward, {"soft": True, "soft_energy_scale": 0, "soft_temperature_scale_K": 5}),
    (CellDesignReward, {"soft": False, "unknown": [1, 2]}),
])
def test_defaults_good_values_and_unknown_keys_are_accepted(component, config) -> None:
    assert component(**config).config == config


def test_a_checked_budget_still_applies_when_the_identity_sets_none(make_identity) -> None:
    identity = make_identity()
    del identity["budget"]
    tool = BatterySimulationTool(budget=2)
    instance = asyncio.run(tool.create(identity=identity))
    assert tool.budget.limit(instance) == 2


@pytest.mark.parametrize(("key", "value"), [("c_rate", "fast"), ("energy_fraction", 1.5), ("budget", "many"),
                                            ("max_draws", 0)])
def test_the_generator_names_the_key_it_rejects(key, value) -> None:
    with pytest.raises(ConfigError) as caught:
        CellDesignGenerator(**{key: value})
    assert caught.value.field == key and key in str(caught.value)


def test_eval_with_a_wrongly_typed_tool_config_value_stops_at_start_up(registry: Registry, tmp_path: Path) -> None:
    tools = "tools:\n  - class_name: battery_design/run_battery_simulation\n    config:\n      budget: {}\n"
    eval_refuses_component_config("battery_design", tmp_path, "--tool-config", tools.format("eight"), tools.format(3),
                                  "budget", registry, records=1)
