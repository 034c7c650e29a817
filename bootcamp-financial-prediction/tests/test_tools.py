"""The two tools through their real async lifecycle: results, the budget, errors, and no leak of the hidden year."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable

import pytest

from bootcamp_core import Registry
from bootcamp_financial_prediction.forecast import forecast_statements
from bootcamp_financial_prediction.items import ITEM_KEYS, RATIOS
from bootcamp_financial_prediction.outlook import public_view
from bootcamp_financial_prediction.tools import CalculateMetricsTool, CheckConsistencyTool


@pytest.fixture
def metrics(registry: Registry) -> CalculateMetricsTool:
    return registry.component("tool", "financial_prediction/calculate_metrics")


@pytest.fixture
def consistency(registry: Registry) -> CheckConsistencyTool:
    return registry.component("tool", "financial_prediction/check_consistency")


def run(tool, identity: dict, calls: list[object]) -> tuple[list[tuple[str, float, dict]], float]:
    """Every call in one episode, then calc_reward; the episode is released."""

    async def episode() -> tuple[list[tuple[str, float, dict]], float]:
        instance_id = await tool.create(None, identity=identity)
        try:
            results = [await tool.execute(instance_id, call) for call in calls]  # type: ignore[arg-type]
            return results, await tool.calc_reward(instance_id)
        finally:
            await tool.release(instance_id)
            assert instance_id not in tool.instances

    return asyncio.run(episode())


def test_schemas_are_valid_and_list_the_21_items() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for tool in (CalculateMetricsTool, CheckConsistencyTool):
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        validator = jsonschema.Draft202012Validator(tool.parameters)
        assert list(tool.parameters["properties"]["statements"]["properties"]) == list(ITEM_KEYS)
        assert validator.is_valid({"statements": {"revenue": 1.5, "cash": 2}})
        assert not validator.is_valid({})
        assert not validator.is_valid({"statements": {"revenue": "x"}})
        assert tool.parallel_safe is True


def test_calculate_metrics_gives_15_ratios_next_to_the_last_year(metrics: CalculateMetricsTool, identity: dict) -> None:
    forecast = forecast_statements(public_view(identity))
    (text, step, info), = run(metrics, identity, [{"statements": forecast}])[0]
    result = json.loads(text)
    last = f"FY{identity['years'][-1]}"
    assert set(result) == {"statements", last, "calls_left"}
    assert list(result["statements"]["ratios"]) == [ratio.key for ratio in RATIOS]
    assert list(result[last]["ratios"]) == [ratio.key for ratio in RATIOS]
    growth = forecast["revenue"] / identity["statements"][-1]["revenue"] - 1
    assert result["statements"]["ratios"]["revenue_growth"] == pytest.approx(growth, rel=1e-5)
    assert (step, info) == (0.0, {"calls": 1, "wasted": 0, "calls_left": 3})
    assert result["calls_left"] == 3


def test_calculate_metrics_handles_zero_denominators_and_partial_statements(
    metrics: CalculateMetricsTool, identity: dict
) -> None:
    zeros = {key: 0 for key in ITEM_KEYS}
    (text, step, _), (partial, _, _) = run(metrics, identity, [{"statements": zeros},
                                                               {"statements": {"revenue": 10, "gross_profit": 4}}])[0]
    result = json.loads(text)  # valid JSON: no inf, no NaN
    assert step == 0.0
    assert all(value is None for key, value in result["statements"]["ratios"].items() if key != "revenue_growth")
    assert result["statements"]["ratios"]["revenue_growth"] == -1.0
    assert result["statements"]["undefined"]["interest_coverage"].startswith("undefined: interest_expense")
    partial = json.loads(partial)
    assert partial["statements"]["ratios"]["gross_margin"] == 0.4
    assert "missing item" in partial["statements"]["undefined"]["net_margin"]


def test_check_consistency_passes_a_consistent_forecast(consistency: CheckConsistencyTool, identity: dict) -> None:
    forecast = forecast_statements(public_view(identity))
    (text, step, _), = run(consistency, identity, [{"statements": forecast}])[0]
    result = json.loads(text)
    assert result["consistent"] is True and result["identities_failed"] == []
    assert result["policy_and_outlook_breaches"] == [] and step == 0.0


def test_check_consistency_names_what_fails_and_by_how_much(consistency: CheckConsistencyTool, identity: dict) -> None:
    forecast = forecast_statements(public_view(identity))
    broken = {**forecast, "cash": forecast["cash"] + 5000, "total_assets": forecast["total_assets"] + 5000,
              "debt": forecast["debt"] + 5000}
    # spending 800 more on fixed assets, borrowed: consistent, but not the announced capital expenditure
    spending = {**forecast, "investing_cash_flow": forecast["investing_cash_flow"] - 800,
                "fixed_assets": forecast["fixed_assets"] + 800, "total_assets": forecast["total_assets"] + 800,
                "debt": forecast["debt"] + 800, "financing_cash_flow": forecast["financing_cash_flow"] + 800}
    calls = [{"statements": broken}, {"statements": spending}, {"statements": {"revenue": 1}}]
    (text, _, _), (spent, _, _), (missing, _, _) = run(consistency, identity, calls)[0]
    result = json.loads(text)
    assert result["consistent"] is False
    failed = {entry["identity"]: entry["difference"] for entry in result["identities_failed"]}
    assert failed == {"financing_cash_flow": -5000.0, "cash": 5000.0}
    spent = json.loads(spent)
    assert spent["consistent"] is True and spent["identities_failed"] == []
    breaches = {entry["rule"].split(" (")[0]: entry["off_by"] for entry in spent["policy_and_outlook_breaches"]}
    assert breaches["capital expenditure"] == 800.0
    missing = json.loads(missing)
    assert missing["consistent"] is False and len(missing["missing_items"]) == 20


def test_the_budget_is_per_episode_and_per_tool(consistency: CheckConsistencyTool, identity: dict) -> None:
    call = {"statements": identity["statements"][-1]}
    results, score = run(consistency, identity, [call] * 6)
    assert [result[2]["calls_left"] for result in results] == [3, 2, 1, 0, 0, 0]
    assert [result[1] for result in results] == [0.0] * 4 + [-0.1, -0.1]
    assert results[4][0].startswith("Error: the budget of 4 check_consistency calls")
    assert score == pytest.approx(0.8)
    # a fresh episode starts with the whole budget
    assert run(consistency, identity, [call])[0][0][2]["calls_left"] == 3
    assert run(consistency, {**identity, "tool_budget": 1}, [call, call])[0][1][0].startswith("Error: the budget of 1")
    assert run(CheckConsistencyTool(budget=2), {k: v for k, v in identity.items() if k != "tool_budget"},
               [call] * 3)[0][2][0].startswith("Error: the budget of 2")


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({}, "pass {\"statements\""),
        ({"statements": {"colour": 1}}, "must be an object of line items"),
        ({"statements": [1, 2]}, "must be an object of line items"),
        ({"statements": {"revenue": 10**400}}, "not a number of at most 1e15"),
        ({"statements": "[" * 100_000}, "statements is not a JSON object"),
        ({"statements": {"revenue": "lots"}}, "not a number of at most 1e15 in size: revenue"),
        ({"statements": {"revenue": 1e16}}, "not a number of at most 1e15 in size: revenue"),
        ({"statements": {"revenue": 1}, "verbose": True}, "unknown argument(s) verbose"),
        ("not json", "not valid JSON"),
        ({"statements": "{oops"}, "statements is not a JSON object"),
    ],
)
def test_bad_arguments_are_clear_errors_and_wasted(
    consistency: CheckConsistencyTool, identity: dict, parameters: object, message: str
) -> None:
    (text, step, info), = run(consistency, identity, [parameters])[0]
    assert text.startswith("Error: ") and message in text
    assert step == -0.1 and info["wasted"] == 1


def test_json_string_arguments_are_accepted(metrics: CalculateMetricsTool, identity: dict) -> None:
    call = json.dumps({"statements": json.dumps(identity["statements"][-1])})
    (text, step, _), = run(metrics, identity, [call])[0]
    assert step == 0.0 and "ratios" in json.loads(text)["statements"]


def test_tools_never_reveal_the_hidden_year(
    metrics: CalculateMetricsTool, consistency: CheckConsistencyTool, make_identity: Callable[..., dict]
) -> None:
    for seed in range(5):
        identity = make_identity(seed)
        other = copy.deepcopy(identity)
        other["hidden"] = make_identity(seed + 50)["hidden"]
        hidden = identity["hidden"]["statements"]
        calls = [{"statements": forecast_statements(public_view(identity))}, {"statements": hidden},
                 {"statements": identity["statements"][-1]}, {"statements": {"revenue": 1}}]
        for tool in (metrics, consistency):
            outputs = [result[0] for result in run(tool, identity, calls)[0]]
            # the same calls with another hidden year answer byte for byte the same
            assert outputs == [result[0] for result in run(tool, other, calls)[0]]
            assert outputs == [result[0] for result in run(tool, public_view(identity), calls)[0]]
        # and the tools keep no hidden part in their episode state
        assert "hidden" not in asyncio.run(stored_identity(consistency, identity))


async def stored_identity(tool: CheckConsistencyTool, identity: dict) -> dict:
    """What a tool keeps of the identity for an episode."""
    instance_id = await tool.create(None, identity=identity)
    state = dict(tool.state(instance_id)["identity"])
    await tool.release(instance_id)
    return state


def test_an_episode_without_company_data_is_a_clear_error(consistency: CheckConsistencyTool) -> None:
    (text, step, _), = run(consistency, {}, [{"statements": {"revenue": 1}}])[0]
    assert text == "Error: this episode has no company data." and step == -0.1


def test_unknown_episode_is_a_clear_error(metrics: CalculateMetricsTool) -> None:
    with pytest.raises(KeyError, match="create"):
        asyncio.run(metrics.execute("never-created", {"statements": {}}))
