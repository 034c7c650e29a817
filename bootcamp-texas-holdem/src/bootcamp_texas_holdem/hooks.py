"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_core import Register, hookimpl
from bootcamp_texas_holdem.agent import EquityPlayer
from bootcamp_texas_holdem.generator import HeadsUpGenerator
from bootcamp_texas_holdem.interaction import TableFeedback
from bootcamp_texas_holdem.reward import ChipsReward
from bootcamp_texas_holdem.tools import ActTool, TableTool


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    register(HeadsUpGenerator)


@hookimpl
def bootcamp_register_tools(register: Register) -> None:
    register(TableTool)
    register(ActTool)


@hookimpl
def bootcamp_register_interactions(register: Register) -> None:
    register(TableFeedback)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(ChipsReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    register(EquityPlayer)
