"""The task generator: random flat arithmetic expressions to compute with a calculator."""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

from bootcamp_core import ConfigError, GenerationError, TaskGenerator
from bootcamp_example.answer import ANSWER_FORMAT
from bootcamp_example.arithmetic import OPERATIONS, ExpressionSampler

__all__ = ["ArithmeticGenerator"]

DEFAULTS: dict[str, Any] = {
    "min_value": 100,
    "max_value": 10_000,
    "min_operands": 2,
    "max_operands": 8,
    "tolerance": 1e-8,
    "operations": OPERATIONS,
}


def _integer(config: dict[str, Any], key: str) -> int:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ConfigError(f"{key} must be an integer, got {value!r}", field=key)
    return int(value)


class ArithmeticGenerator(TaskGenerator):
    """Flat expressions of ``min_operands``..``max_operands`` integers in [``min_value``, ``max_value``]."""

    name: ClassVar[str] = "arithmetic"
    tools: ClassVar[tuple[str, ...]] = ("calculator",)
    interaction: ClassVar[str | None] = "feedback"
    reward: ClassVar[str] = "arithmetic"
    #: the answer: the report marks it as ground truth, and a reference agent in a shortcut test never gets it
    hidden_fields: ClassVar[tuple[str, ...]] = ("expected_result",)

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        settings = {**DEFAULTS, **config}
        try:
            self.tolerance = float(settings["tolerance"])
        except (TypeError, ValueError):
            raise ConfigError(f"tolerance must be a number, got {settings['tolerance']!r}", field="tolerance") from None
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ConfigError(f"tolerance must be a finite number >= 0, got {settings['tolerance']!r}",
                              field="tolerance")
        operations = settings["operations"]
        if not isinstance(operations, (str, list, tuple)):
            raise ConfigError(f"operations must be a string such as {OPERATIONS!r}, got {operations!r}",
                              field="operations")
        try:
            self.sampler = ExpressionSampler(
                _integer(settings, "min_value"),
                _integer(settings, "max_value"),
                _integer(settings, "min_operands"),
                _integer(settings, "max_operands"),
                tuple(operations),
            )
        except ValueError as error:
            raise ConfigError(f"{type(self).__name__}: {error}", field=getattr(error, "field", None)) from None

    def case_generator(self, rng: random.Random) -> dict:
        """``{"expression", "expected_result", "tolerance"}``, drawn only from ``rng``."""
        try:
            expression, result = self.sampler.draw(rng)
        except ValueError as error:
            raise GenerationError(f"{type(self).__name__}: {error}") from None
        return {"expression": expression, "expected_result": result, "tolerance": self.tolerance}

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """Ask for the value of the expression, point at the calculator and fix the answer format."""
        return (
            "Compute the value of this arithmetic expression (standard precedence: * and / before + and -, "
            "otherwise left to right):\n\n"
            f"{identity['expression']}\n\n"
            "You can use the `calculator` tool, either on a whole expression or on one operation at a time. "
            f"An answer within a relative error of {identity['tolerance']:g} counts as correct. "
            f"Give your final answer in exactly this form:\n\n{ANSWER_FORMAT}"
        )
