"""The two tools through their real async lifecycle: results, the budget, errors, and no leak of the hidden year."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable

import jsonschema
import pytest

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import outputs, run_tool_calls
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


def test_schemas_list_the_21_items() -> None:
    for tool in (CalculateMetricsTool, CheckConsistencyTool):
        validator = jsonschema.Draft202012Validator(tool.parameters)
        assert list(tool.parameters["properties"]["statements"]["properties"]) == list(ITEM_KEYS)
        assert validator.is_valid({"statements": {"revenue": 1.5, "cash": 2}})
        assert not validator.is_valid({})
        assert not validator.is_valid({"statements": {"revenue": "x"}})
        assert tool.parallel_safe is True


def test_calculate_metrics_gives_15_ratios_next_to_the_last_year(metrics: CalculateMetricsTool, identity: dict) -> None:
    forecast = forecast_statements(public_view(identity))
    (text, step, info), = run_tool_calls(metrics, identity, [{"statements": forecast}])[0]
    result = json.loads(text)
    last = f"FY{identity['years'][-1]}"
    assert set(result) == {"statements", last, "calls_left"}
    assert list(result["statements"]["ratios"]) == [ratio.key for ratio in RATIOS]
    assert list(result[last]["ratios"]) == [ratio.key for ratio in RATIOS]
    growth = forecast["revenue"] / identity["statements"][-1]["revenue"] - 1
    assert result["statements"]["ratios"]["revenue_growth"] == pytest.approx(growth, rel=1e-5)
    assert (step, info) == (0.0, {"calls": 1, "calls_left": 3, "refused": 0, "wasted": 0})
    assert result["calls_left"] == 3


def test_calculate_metrics_handles_zero_denominators_and_partial_statements(
    metrics: CalculateMetricsTool, identity: dict
) -> None:
    zeros = {key: 0 for key in ITEM_KEYS}
    calls = [{"statements": zeros}, {"statements": {"revenue": 10, "gross_profit": 4}}]
    (text, step, _), (partial, _, _) = run_tool_calls(metrics, identity, calls)[0]
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
    (text, step, _), = run_tool_calls(consistency, identity, [{"statements": forecast}])[0]
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
    text, spent, missing = outputs(run_tool_calls(consistency, identity, calls)[0])
    result = json.loads(text)
    assert result["consistent"] is False
    failed = {entry["identity"]: entry["difference"] for entry in result["identities_failed"]}
    assert failed == {"financing_cash_flow": -5000.0, "cash": 5000.0}
    spent = json.loads(spent)
    assert spent["consistent"] is True and spent["identities_failed"] == []
    breaches = {entry["rule"].split(" (")[0]: entry["off_by"] for entry in spent["policy_and_outlook_breaches"]}
    assert breaches["capital expenditure"] == 800.0
    missing = json.loads(missing)
    assert missing["consistent"] is False and len(missing["missing_items"]) == 25


def test_the_budget_is_per_episode_and_per_tool(consistency: CheckConsistencyTool, identity: dict) -> None:
    call = {"statements": identity["statements"][-1]}
    results, score = run_tool_calls(consistency, identity, [call] * 6)
    assert [result[2]["calls_left"] for result in results] == [3, 2, 1, 0, 0, 0]
    assert [json.loads(text)["calls_left"] for text in outputs(results[:4])] == [3, 2, 1, 0]
    assert [result[1] for result in results] == [0.0] * 4 + [-0.1, -0.1]
    assert results[4][0] == "Error: the budget of 4 check_consistency calls for this task is used up."
    assert results[5][2] == {"calls": 4, "calls_left": 0, "refused": 2, "wasted": 2}
    assert score == pytest.approx(0.8)
    # a fresh episode starts with the whole budget
    assert run_tool_calls(consistency, identity, [call])[0][0][2]["calls_left"] == 3
    assert run_tool_calls(consistency, {**identity, "tool_budget": 1}, [call, call])[0][1][0].startswith(
        "Error: the budget of 1")
    without_budget = {key: value for key, value in identity.items() if key != "tool_budget"}
    assert run_tool_calls(CheckConsistencyTool(budget=2), without_budget, [call] * 3)[0][2][0].startswith(
        "Error: the budget of 2")


def test_creating_an_episode_again_does_not_refill_its_budget(
    consistency: CheckConsistencyTool, identity: dict
) -> None:
    call = {"statements": identity["statements"][-1]}

    async def episode() -> list[tuple[str, float, dict]]:
        instance_id = await consistency.create("twice", identity={**identity, "tool_budget": 2})
        results = [await consistency.execute(instance_id, call)]
        # a runner that creates the instance again (verl per trajectory, a repeated create at the tool server)
        assert await consistency.create(instance_id, identity={**identity, "tool_budget": 2}) == instance_id
        results += [await consistency.execute(instance_id, call) for _ in range(2)]
        await consistency.release(instance_id)
        return results

    results = asyncio.run(episode())
    assert [result[2]["calls_left"] for result in results] == [1, 0, 0]
    assert results[2][0] == "Error: the budget of 2 check_consistency calls for this task is used up."
    # released, the instance id is a new episode with the whole budget
    assert run_tool_calls(consistency, identity, [call], instance_id="twice")[0][0][2]["calls_left"] == 3


def test_a_budget_that_is_no_whole_number_is_a_config_error(consistency: CheckConsistencyTool, identity: dict) -> None:
    for budget in (-1, 2.5, "four"):
        with pytest.raises(ConfigError, match="budget"):
            run_tool_calls(consistency, {**identity, "tool_budget": budget}, [], instance_id="bad-budget")
        assert "bad-budget" not in consistency.instances  # nothing of the episode stays behind


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
        ({"statements": "{oops"}, "statements is not a JSON object"),
    ],
)
def test_bad_arguments_are_clear_errors_and_wasted(
    consistency: CheckConsistencyTool, identity: dict, parameters: dict, message: str
) -> None:
    (text, step, info), = run_tool_calls(consistency, identity, [parameters])[0]
    assert text.startswith("Error: ") and message in text
    assert step == -0.1 and info["wasted"] == 1


async def call_once(tool: CalculateMetricsTool | CheckConsistencyTool, identity: dict,
                    arguments: object) -> tuple[str, float, dict]:
    """One call with ``arguments`` as they came (still a JSON text, say), in an episode of its own."""
    instance_id = await tool.create(None, identity=identity)
    try:
        return await tool.execute(instance_id, arguments)  # type: ignore[arg-type]
    finally:
        await tool.release(instance_id)


def test_json_string_arguments_are_accepted(metrics: CalculateMetricsTool, identity: dict) -> None:
    call = json.dumps({"statements": json.dumps(identity["statements"][-1])})
    text, step, _ = asyncio.run(call_once(metrics, identity, call))
    assert step == 0.0 and "ratios" in json.loads(text)["statements"]
    text, step, info = asyncio.run(call_once(metrics, identity, "not json"))
    assert text.startswith("Error: arguments are not valid JSON") and step == -0.1 and info["wasted"] == 1


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
            texts = outputs(run_tool_calls(tool, identity, calls)[0])
            # the same calls with another hidden year answer byte for byte the same
            assert texts == outputs(run_tool_calls(tool, other, calls)[0])
            assert texts == outputs(run_tool_calls(tool, public_view(identity), calls)[0])
        # and the tools keep no hidden part in their episode state
        assert "hidden" not in asyncio.run(stored_identity(consistency, identity))


async def stored_identity(tool: CheckConsistencyTool, identity: dict) -> dict:
    """What a tool keeps of the identity for an episode."""
    instance_id = await tool.create(None, identity=identity)
    state = dict(tool.state(instance_id)["identity"])
    await tool.release(instance_id)
    return state


def test_an_episode_without_company_data_is_a_clear_error(consistency: CheckConsistencyTool) -> None:
    (text, step, _), = run_tool_calls(consistency, {}, [{"statements": {"revenue": 1}}])[0]
    assert text == "Error: this episode has no company data." and step == -0.1


def test_unknown_episode_is_a_clear_error(metrics: CalculateMetricsTool) -> None:
    with pytest.raises(KeyError, match="create"):
        asyncio.run(metrics.execute("never-created", {"statements": {}}))
