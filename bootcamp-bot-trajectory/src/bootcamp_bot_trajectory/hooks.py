"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_bot_trajectory.agent import PlannerAgent
from bootcamp_bot_trajectory.generator import TrajectoryGenerator
from bootcamp_bot_trajectory.interaction import TrajectoryFeedback
from bootcamp_bot_trajectory.reward import TrajectoryReward
from bootcamp_bot_trajectory.tools import CheckPathTool, ForwardKinematicsTool
from bootcamp_core import Register, hookimpl


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    register(TrajectoryGenerator)


@hookimpl
def bootcamp_register_tools(register: Register) -> None:
    register(ForwardKinematicsTool)
    register(CheckPathTool)


@hookimpl
def bootcamp_register_interactions(register: Register) -> None:
    register(TrajectoryFeedback)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(TrajectoryReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    register(PlannerAgent)
