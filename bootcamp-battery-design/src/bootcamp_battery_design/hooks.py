"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_battery_design.agent import SearchAgent
from bootcamp_battery_design.generator import CellDesignGenerator
from bootcamp_battery_design.reward import CellDesignReward
from bootcamp_battery_design.tools import BatterySimulationTool
from bootcamp_core import Register, hookimpl


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    register(CellDesignGenerator)


@hookimpl
def bootcamp_register_tools(register: Register) -> None:
    register(BatterySimulationTool)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(CellDesignReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    register(SearchAgent)
