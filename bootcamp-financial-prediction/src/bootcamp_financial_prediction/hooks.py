"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_core import Register, hookimpl
from bootcamp_financial_prediction.agent import DriverModelAnalyst
from bootcamp_financial_prediction.generator import ForecastGenerator
from bootcamp_financial_prediction.interaction import ForecastFeedback
from bootcamp_financial_prediction.reward import ForecastReward
from bootcamp_financial_prediction.tools import CalculateMetricsTool, CheckConsistencyTool


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    register(ForecastGenerator)


@hookimpl
def bootcamp_register_tools(register: Register) -> None:
    register(CalculateMetricsTool)
    register(CheckConsistencyTool)


@hookimpl
def bootcamp_register_interactions(register: Register) -> None:
    register(ForecastFeedback)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(ForecastReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    register(DriverModelAnalyst)
