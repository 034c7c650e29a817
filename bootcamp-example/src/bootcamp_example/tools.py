"""The calculator tool: exact arithmetic on a whole expression or on one binary operation."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any, ClassVar

from bootcamp_core import Tool, config_number
from bootcamp_example.arithmetic import (
    MAX_EXPRESSION_LENGTH,
    ExpressionError,
    apply,
    evaluate,
    format_number,
    parse_number,
)

__all__ = ["CalculatorTool"]

#: Step reward of a wasted call (an error, or an exact repeat of an earlier call); a useful call earns 0.
WASTED_CALL_PENALTY = 0.1

_OPERATIONS = {
    "add": "+",
    "+": "+",
    "subtract": "-",
    "-": "-",
    "multiply": "*",
    "*": "*",
    "divide": "/",
    "/": "/",
}
_BINARY_KEYS = ("operation", "operand1", "operand2")
_USAGE = 'pass either "expression", or "operation" with "operand1" and "operand2"'


def _operand(parameters: dict, key: str) -> Fraction:
    value = parameters[key]
    if isinstance(value, bool):
        raise ExpressionError(f"{key} must be a number, got {json.dumps(value)}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ExpressionError(f"{key} must be a finite number, got {value}")
        # The model wrote a decimal (0.1), not the binary float nearest to it: take the shortest repr exactly.
        return Fraction(repr(value))
    if isinstance(value, str):
        return parse_number(value)
    raise ExpressionError(f"{key} must be a number, got {type(value).__name__}")


def _compute(parameters: Any) -> tuple[tuple, Fraction]:
    """(a key that identifies the call up to spelling, its exact value)."""
    if isinstance(parameters, str):  # arguments that reached us still JSON-encoded
        try:
            parameters = json.loads(parameters)
        except ValueError:
            raise ExpressionError(f"arguments are not valid JSON; {_USAGE}") from None
    if not isinstance(parameters, dict):
        raise ExpressionError(f"arguments must be a JSON object; {_USAGE}")
    unknown = sorted(set(parameters) - {"expression", *_BINARY_KEYS})
    if unknown:
        raise ExpressionError(f"unknown argument(s) {', '.join(map(repr, unknown))}; {_USAGE}")
    given = [key for key in _BINARY_KEYS if key in parameters]
    if "expression" in parameters:
        if given:
            raise ExpressionError(f"got both an expression and {', '.join(given)}; {_USAGE}")
        expression = parameters["expression"]
        if not isinstance(expression, str):
            raise ExpressionError(f"expression must be a string, got {type(expression).__name__}")
        return ("expression", "".join(expression.split())), evaluate(expression)
    missing = [key for key in _BINARY_KEYS if key not in parameters]
    if missing:
        raise ExpressionError(f"missing {', '.join(missing)}; {_USAGE}")
    operation = _OPERATIONS.get(str(parameters["operation"]).strip().lower())
    if operation is None:
        raise ExpressionError(
            f"unknown operation {parameters['operation']!r}; use add, subtract, multiply or divide (or + - * /)"
        )
    left, right = _operand(parameters, "operand1"), _operand(parameters, "operand2")
    return ("operation", operation, left, right), apply(operation, left, right, "operand2 is 0")


class CalculatorTool(Tool):
    """Exact rational arithmetic; wasted calls (errors, exact repeats) cost a small step reward."""

    name: ClassVar[str] = "calculator"
    description: ClassVar[str] = (
        "Exact arithmetic. Either pass `expression`, a whole expression with numbers, + - * /, parentheses and "
        "unary minus (e.g. \"(12 + 3.5) * -2 / 1e3\"), or one operation: `operation` (add, subtract, multiply, "
        "divide) with `operand1` and `operand2`. Integral results are exact; others have 17 significant digits."
    )
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "maxLength": MAX_EXPRESSION_LENGTH,
                "description": "A whole expression, e.g. \"123 + 456 * 789 / 12\". Standard precedence applies.",
            },
            "operation": {
                "type": "string",
                "enum": ["add", "subtract", "multiply", "divide", "+", "-", "*", "/"],
                "description": "One binary operation, applied as operand1 <operation> operand2.",
            },
            "operand1": {"type": "number", "description": "The left operand."},
            "operand2": {"type": "number", "description": "The right operand."},
        },
        "oneOf": [{"required": ["expression"]}, {"required": ["operation", "operand1", "operand2"]}],
        "additionalProperties": False,
    }
    parallel_safe: ClassVar[bool] = True

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.wasted_call_penalty = config_number(self, config, "wasted_call_penalty", WASTED_CALL_PENALTY, low=0.0)

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode with no calls made."""
        instance_id = await super().create(instance_id, identity, **kwargs)
        self.state(instance_id).update(calls=0, wasted=0, history=[], step_rewards=[], seen=set())
        return instance_id

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """Evaluate one call: (the result or an ``Error:`` message, step reward, ``{"calls", "wasted"}``)."""
        state = self.state(instance_id)
        key: tuple | None
        try:
            key, value = _compute(parameters)
            output = format_number(value)
        except ExpressionError as error:
            key, output = None, f"Error: {error}."
        wasted = key is None or key in state["seen"]
        if key is not None:
            state["seen"].add(key)
        state["calls"] += 1
        state["wasted"] += wasted
        step_reward = -self.wasted_call_penalty if wasted else 0.0
        state["history"].append((parameters, output))
        state["step_rewards"].append(step_reward)
        return output, step_reward, {"calls": state["calls"], "wasted": state["wasted"]}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """``max(0, 1 - penalty * wasted calls)``: 1 for an episode without wasted calls."""
        return max(0.0, 1.0 - self.wasted_call_penalty * self.state(instance_id)["wasted"])
