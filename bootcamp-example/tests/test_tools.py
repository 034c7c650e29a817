"""The calculator tool through its real async lifecycle: both call modes, wasted calls, concurrency."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import outputs, run_tool_calls
from bootcamp_example.tools import CalculatorTool

IDENTITY = {"expression": "123 + 456 * 789 / 12", "expected_result": 30105.0, "tolerance": 1e-8}


@pytest.fixture
def tool(registry: Registry) -> CalculatorTool:
    return registry.component("tool", "example/calculator")


def test_schema_accepts_exactly_one_mode() -> None:
    validator = jsonschema.Draft202012Validator(CalculatorTool.parameters)
    assert validator.is_valid({"expression": "1 + 2"})
    assert validator.is_valid({"operation": "add", "operand1": 1, "operand2": 2.5})
    assert validator.is_valid({"operation": "/", "operand1": 1, "operand2": 3})
    assert not validator.is_valid({})
    assert not validator.is_valid({"expression": "1", "operation": "add", "operand1": 1, "operand2": 2})
    assert not validator.is_valid({"operation": "add", "operand1": 1})
    assert not validator.is_valid({"operation": "pow", "operand1": 1, "operand2": 2})
    assert not validator.is_valid({"expression": "1", "verbose": True})
    assert CalculatorTool.parallel_safe is True


def test_both_modes_compute_exactly(tool: CalculatorTool) -> None:
    calls = [
        {"expression": IDENTITY["expression"]},
        {"operation": "divide", "operand1": 1, "operand2": 3},
        {"operation": "+", "operand1": 0.1, "operand2": "0.2"},
        {"operation": "multiply", "operand1": 10**20, "operand2": 10**20},
        {"operation": "subtract", "operand1": 2, "operand2": 5},
        {"expression": "-(1.5e3 - 2) / 4"},
    ]
    results, reward = run_tool_calls(tool, IDENTITY, calls)
    assert results[:2] == [("30105", 0.0, {"calls": 1, "wasted": 0}),
                           ("0.33333333333333331", 0.0, {"calls": 2, "wasted": 0})]
    assert float(results[1][0]) == 1 / 3
    assert outputs(results)[2:] == [
        "0.29999999999999999",  # exactly 3/10, shown as the float nearest to it
        "1" + "0" * 40,
        "-3",
        "-374.5",
    ]
    assert [result[1] for result in results] == [0.0] * 6
    assert reward == 1.0


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"expression": "1 / 0"}, "division by zero"),
        ({"operation": "divide", "operand1": 1, "operand2": 0}, "division by zero"),
        ({"expression": "2 +"}, "end of expression"),
        ({"expression": "__import__('os')"}, "unexpected character"),
        ({"expression": 12}, "must be a string"),
        ({"expression": "1" * 2001}, "limit"),
        ({}, "either"),
        ({"expression": "1", "operation": "add", "operand1": 1, "operand2": 2}, "both"),
        ({"operation": "add", "operand1": 1}, "missing operand2"),
        ({"operation": "pow", "operand1": 2, "operand2": 3}, "unknown operation"),
        ({"operation": "add", "operand1": True, "operand2": 3}, "operand1 must be a number"),
        ({"operation": "add", "operand1": [1], "operand2": 3}, "operand1 must be a number"),
        ({"operation": "add", "operand1": 1, "operand2": "two"}, "not a number"),
        ({"operation": "add", "operand1": float("nan"), "operand2": 1}, "finite"),
        ({"expression": "1", "verbose": True}, "unknown argument"),
    ],
)
def test_errors_are_clear_and_wasted(tool: CalculatorTool, parameters: dict, message: str) -> None:
    [(text, step, metrics)], reward = run_tool_calls(tool, IDENTITY, [parameters])
    assert text.startswith("Error: ") and message in text
    assert step == -0.1
    assert metrics == {"calls": 1, "wasted": 1}
    assert reward == pytest.approx(0.9)


@pytest.mark.parametrize(("arguments", "message"), [("not json", "not valid JSON"), ([1, 2], "JSON object")])
def test_arguments_that_are_no_object_are_clear_and_wasted(tool: CalculatorTool, arguments: object,
                                                           message: str) -> None:
    async def episode() -> tuple[str, float, dict]:
        instance_id = await tool.create(None, identity=IDENTITY)
        try:
            return await tool.execute(instance_id, arguments)  # type: ignore[arg-type]
        finally:
            await tool.release(instance_id)

    text, step, metrics = asyncio.run(episode())
    assert text.startswith("Error: ") and message in text
    assert (step, metrics) == (-0.1, {"calls": 1, "wasted": 1})


def test_json_string_arguments_are_accepted(tool: CalculatorTool) -> None:
    async def episode() -> str:
        instance_id = await tool.create(None, identity=IDENTITY)
        text = (await tool.execute(instance_id, '{"expression": "6 * 7"}'))[0]  # type: ignore[arg-type]
        await tool.release(instance_id)
        return text

    assert asyncio.run(episode()) == "42"


def test_repeats_are_wasted_and_lower_calc_reward(tool: CalculatorTool) -> None:
    calls = [
        {"expression": "2 * 3"},
        {"expression": " 2*3 "},  # the same expression, spelled differently
        {"operation": "add", "operand1": 1, "operand2": 2},
        {"operation": "+", "operand1": 1.0, "operand2": "2"},  # the same operation and operands
        {"operation": "add", "operand1": 2, "operand2": 1},  # other operands: a new call
    ]
    results, reward = run_tool_calls(tool, IDENTITY, calls)
    assert results[1] == ("6", -0.1, {"calls": 2, "wasted": 1})
    assert [result[1] for result in results] == [0.0, -0.1, 0.0, -0.1, 0.0]
    assert reward == pytest.approx(0.8)
    _, reward = run_tool_calls(tool, IDENTITY, calls + [{"expression": "2 * 3"}] * 20)
    assert reward == 0.0


def test_concurrent_calls_across_episodes(tool: CalculatorTool) -> None:
    async def episode(index: int) -> list[str]:
        instance_id = await tool.create(f"concurrent-{index}", identity=IDENTITY)
        results = await asyncio.gather(*(tool.execute(instance_id, {"expression": f"{index} * {k}"}) for k in range(5)))
        assert await tool.calc_reward(instance_id) == 1.0
        await tool.release(instance_id)
        return [text for text, _, _ in results]

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(episode(index) for index in range(20)))

    texts = asyncio.run(main())
    assert texts == [[str(index * k) for k in range(5)] for index in range(20)]
    assert not any(key.startswith("concurrent-") for key in tool.instances)


def test_unknown_episode_is_a_clear_error(tool: CalculatorTool) -> None:
    with pytest.raises(KeyError, match="create"):
        asyncio.run(tool.execute("never-created", {"expression": "1"}))


def test_penalty_is_configurable() -> None:
    [(_, step, _)], reward = run_tool_calls(CalculatorTool(wasted_call_penalty=0.25), {}, [{"expression": "1 / 0"}])
    assert (step, reward) == (-0.25, 0.75)
