"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_core import Register, hookimpl
from bootcamp_example.agent import CalculatorAgent
from bootcamp_example.generator import ArithmeticGenerator
from bootcamp_example.interaction import FeedbackInteraction
from bootcamp_example.reward import ArithmeticReward
from bootcamp_example.tools import CalculatorTool


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    register(ArithmeticGenerator)


@hookimpl
def bootcamp_register_tools(register: Register) -> None:
    register(CalculatorTool)


@hookimpl
def bootcamp_register_interactions(register: Register) -> None:
    register(FeedbackInteraction)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(ArithmeticReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    register(CalculatorAgent)
