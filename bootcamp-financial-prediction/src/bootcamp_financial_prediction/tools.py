"""The analyst's tools: ratios of a set of statements, and which identities and policies it breaks.

Each tool keeps only the public part of the identity (:func:`~bootcamp_financial_prediction.outlook.public_view`),
so nothing it returns can come from the hidden year. Each allows a per-episode budget of calls (the identity's
``tool_budget``, else the tool's ``budget`` config), kept in a :class:`~bootcamp_core.CallBudget` so that creating
the episode again does not refill it; calls beyond it, and calls with unusable arguments, are wasted: their step
reward is ``-wasted_call_penalty`` and ``calc_reward`` is ``max(0, 1 - penalty × wasted calls)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from bootcamp_core import CallBudget, ConfigError, Tool, config_number, config_whole_number
from bootcamp_financial_prediction.accounting import check_statements, consistency_tolerance, ratios
from bootcamp_financial_prediction.answer import ParsedStatements, read_statements
from bootcamp_financial_prediction.items import LINE_ITEMS
from bootcamp_financial_prediction.outlook import check_outlook, public_view
from bootcamp_financial_prediction.scoring import DEFAULT_SCORING

__all__ = ["CalculateMetricsTool", "CheckConsistencyTool"]

DEFAULT_BUDGET = 4
WASTED_CALL_PENALTY = 0.1

PARAMETERS: dict = {
    "type": "object",
    "properties": {
        "statements": {
            "type": "object",
            "description": "One year's statements: line-item keys with amounts in thousands.",
            "properties": {
                item.key: {"type": "number", "description": f"{item.english} {item.chinese}"} for item in LINE_ITEMS
            },
            "additionalProperties": False,
        },
    },
    "required": ["statements"],
    "additionalProperties": False,
}


class ToolInputError(ValueError):
    """The call cannot be answered; the message is meant for the model as is."""


def _statements(parameters: Any) -> ParsedStatements:
    if isinstance(parameters, str):  # arguments that reached us still JSON-encoded
        try:
            parameters = json.loads(parameters)
        except (ValueError, RecursionError):
            raise ToolInputError('arguments are not valid JSON; pass {"statements": {"revenue": ..., ...}}') from None
    if not isinstance(parameters, Mapping) or "statements" not in parameters:
        raise ToolInputError('pass {"statements": {"revenue": ..., ...}} with line-item keys and amounts')
    unknown = sorted(set(parameters) - {"statements"})
    if unknown:
        raise ToolInputError(f"unknown argument(s) {', '.join(unknown)}; pass only \"statements\"")
    value = parameters["statements"]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ToolInputError("statements is not a JSON object") from None
    parsed = read_statements(value)
    if parsed is None:
        raise ToolInputError("statements must be an object of line items such as revenue, net_income, cash")
    if parsed.invalid:
        raise ToolInputError(f"not a number of at most 1e15 in size: {', '.join(parsed.invalid)}")
    return parsed


class _StatementsTool(Tool):
    """Shared by both tools: keeps the public view, counts calls against the budget, parses the statements."""

    parameters: ClassVar[dict] = PARAMETERS
    parallel_safe: ClassVar[bool] = True

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        # the budget CallBudget accepts (a whole number >= 0); the identity's tool_budget, when given, comes first
        self.default_budget = config_whole_number(self, config, "budget", DEFAULT_BUDGET, low=0)
        self.wasted_call_penalty = config_number(self, config, "wasted_call_penalty", WASTED_CALL_PENALTY, low=0.0)
        self.budget = CallBudget()

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode holding only the public part of the identity; its budget opens once per instance id."""
        public = public_view(identity or {})
        instance_id = await super().create(instance_id, public, **kwargs)
        self.state(instance_id).update(wasted=0)
        try:
            self.budget.open(instance_id, public.get("tool_budget", self.default_budget))
        except ConfigError:  # not a whole number >= 0: nothing of the episode stays behind
            await super().release(instance_id)
            raise
        return instance_id

    def _penalty(self) -> float:
        return self.wasted_call_penalty

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """One call: (the JSON result or an ``Error:`` message, step reward, the budget's metrics and ``wasted``)."""
        state = self.state(instance_id)
        allowed = self.budget.take(instance_id)
        left = self.budget.left(instance_id)
        try:
            if not allowed:
                raise ToolInputError(
                    f"the budget of {self.budget.limit(instance_id)} {self.name} calls for this task is used up"
                )
            public = state["identity"]
            if not public.get("statements"):
                raise ToolInputError("this episode has no company data")
            result = self.run(_statements(parameters), public)
        except ToolInputError as error:
            state["wasted"] += 1
            return f"Error: {error}.", -self._penalty(), self._metrics(instance_id)
        result["calls_left"] = left
        return json.dumps(result, ensure_ascii=False), 0.0, self._metrics(instance_id)

    def _metrics(self, instance_id: str) -> dict:
        return {**self.budget.metrics(instance_id), "wasted": self.state(instance_id)["wasted"]}

    def run(self, statements: ParsedStatements, public: Mapping) -> dict:
        raise NotImplementedError

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """``max(0, 1 - penalty × wasted calls)``: 1 for an episode without wasted calls."""
        return max(0.0, 1.0 - self._penalty() * self.state(instance_id)["wasted"])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode: drop its state and its budget."""
        self.budget.close(instance_id)
        await super().release(instance_id, **kwargs)


class CalculateMetricsTool(_StatementsTool):
    """The 15 ratios of a set of statements, next to those of the last visible year."""

    name: ClassVar[str] = "calculate_metrics"
    description: ClassVar[str] = (
        "Compute 15 financial ratios (growth, margins, returns, liquidity, leverage, coverage, turnover, working-"
        "capital days, payout) of one year's statements, next to the same ratios of the last reported year. Growth "
        "is measured against the last reported year. A ratio whose denominator is 0 is null, with the reason."
    )

    def run(self, statements: ParsedStatements, public: Mapping) -> dict:
        years, reported = public["years"], public["statements"]
        values, notes = ratios(statements.values, reported[-1])
        last_values, _ = ratios(reported[-1], reported[-2] if len(reported) > 1 else None)
        result: dict[str, Any] = {"statements": {"ratios": values}}
        if notes:
            result["statements"]["undefined"] = notes
        result[f"FY{years[-1]}"] = {"ratios": last_values}
        return result


class CheckConsistencyTool(_StatementsTool):
    """The identities (against the last visible year), policies and announcements a set of statements breaks."""

    name: ClassVar[str] = "check_consistency"
    description: ClassVar[str] = (
        f"Check one year's statements (all {len(LINE_ITEMS)} line items) against the accounting identities, using "
        "the last reported year as the previous year, and against the company's policies and management's announcements. "
        "Lists each broken rule and by how much it is off."
    )

    def run(self, statements: ParsedStatements, public: Mapping) -> dict:
        if statements.missing:
            return {"consistent": False, "missing_items": list(statements.missing),
                    "note": f"give all {len(LINE_ITEMS)} line items to check the identities"}
        previous = public["statements"][-1]
        relative = (public.get("scoring") or {}).get("consistency_tolerance", DEFAULT_SCORING["consistency_tolerance"])
        tolerance = consistency_tolerance(previous, float(relative))
        failures = check_statements(statements.values, previous, tolerance)
        breaches = check_outlook(statements.values, public, tolerance)
        return {
            "consistent": not failures,
            "tolerance": tolerance,
            "identities_failed": [
                {"identity": failure.name, "rule": failure.formula, "difference": round(failure.difference, 6)}
                for failure in failures
            ],
            "policy_and_outlook_breaches": [
                {"rule": breach.rule, "off_by": round(breach.excess, 6)} for breach in breaches
            ],
        }
