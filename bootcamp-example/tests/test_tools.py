"""The calculator tool through its real async lifecycle: both call modes, wasted calls, isolation."""

from __future__ import annotations

import asyncio

import pytest

from bootcamp_core import Registry
from bootcamp_example.tools import CalculatorTool

IDENTITY = {"expression": "123 + 456 * 789 / 12", "expected_result": 30105.0, "tolerance": 1e-8}


@pytest.fixture
def tool(registry: Registry) -> CalculatorTool:
    return registry.component("tool", "example/calculator")


def test_schema_is_valid_and_accepts_exactly_one_mode() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(CalculatorTool.parameters)
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
    assert CalculatorTool.openai_schema()["function"]["name"] == "calculator"


def test_lifecycle_both_modes(tool: CalculatorTool) -> None:
    async def episode() -> None:
        instance_id = await tool.create("lifecycle", identity=IDENTITY)
        assert instance_id == "lifecycle"
        assert await tool.execute(instance_id, {"expression": IDENTITY["expression"]}) == (
            "30105",
            0.0,
            {"calls": 1, "wasted": 0},
        )
        text, step, metrics = await tool.execute(instance_id, {"operation": "divide", "operand1": 1, "operand2": 3})
        assert (text, step, metrics) == ("0.33333333333333331", 0.0, {"calls": 2, "wasted": 0})
        assert float(text) == 1 / 3
        assert (await tool.execute(instance_id, {"operation": "+", "operand1": 0.1, "operand2": "0.2"}))[0] == (
            "0.29999999999999999"  # exactly 3/10, shown as the float nearest to it
        )
        assert (await tool.execute(instance_id, {"operation": "multiply", "operand1": 10**20, "operand2": 10**20}))[
            0
        ] == "1" + "0" * 40
        assert (await tool.execute(instance_id, {"operation": "subtract", "operand1": 2, "operand2": 5}))[0] == "-3"
        assert (await tool.execute(instance_id, {"expression": "-(1.5e3 - 2) / 4"}))[0] == "-374.5"
        assert await tool.calc_reward(instance_id) == 1.0
        state = tool.state(instance_id)
        assert state["calls"] == 6 and len(state["history"]) == 6 and state["step_rewards"] == [0.0] * 6
        assert state["history"][0] == ({"expression": IDENTITY["expression"]}, "30105")
        await tool.release(instance_id)
        assert instance_id not in tool.instances
        await tool.release(instance_id)  # twice is harmless

    asyncio.run(episode())


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
        ("not json", "not valid JSON"),
        ([1, 2], "JSON object"),
    ],
)
def test_errors_are_clear_and_wasted(tool: CalculatorTool, parameters: object, message: str) -> None:
    async def episode() -> tuple[str, float, dict, float]:
        instance_id = await tool.create(None, identity=IDENTITY)
        try:
            text, step, metrics = await tool.execute(instance_id, parameters)  # type: ignore[arg-type]
            return text, step, metrics, await tool.calc_reward(instance_id)
        finally:
            await tool.release(instance_id)

    text, step, metrics, score = asyncio.run(episode())
    assert text.startswith("Error: ") and message in text
    assert step == -0.1
    assert metrics == {"calls": 1, "wasted": 1}
    assert score == pytest.approx(0.9)


def test_json_string_arguments_are_accepted(tool: CalculatorTool) -> None:
    async def episode() -> str:
        instance_id = await tool.create(None, identity=IDENTITY)
        text = (await tool.execute(instance_id, '{"expression": "6 * 7"}'))[0]  # type: ignore[arg-type]
        await tool.release(instance_id)
        return text

    assert asyncio.run(episode()) == "42"


def test_repeats_are_wasted_and_lower_calc_reward(tool: CalculatorTool) -> None:
    async def episode() -> None:
        instance_id = await tool.create(None, identity=IDENTITY)
        assert (await tool.execute(instance_id, {"expression": "2 * 3"}))[1] == 0.0
        text, step, metrics = await tool.execute(instance_id, {"expression": " 2*3 "})
        assert (text, step, metrics) == ("6", -0.1, {"calls": 2, "wasted": 1})
        assert (await tool.execute(instance_id, {"operation": "add", "operand1": 1, "operand2": 2}))[1] == 0.0
        assert (await tool.execute(instance_id, {"operation": "+", "operand1": 1.0, "operand2": "2"}))[1] == -0.1
        assert (await tool.execute(instance_id, {"operation": "add", "operand1": 2, "operand2": 1}))[1] == 0.0
        assert await tool.calc_reward(instance_id) == pytest.approx(0.8)
        for _ in range(20):
            await tool.execute(instance_id, {"expression": "2 * 3"})
        assert await tool.calc_reward(instance_id) == 0.0
        assert tool.state(instance_id)["step_rewards"][:5] == [0.0, -0.1, 0.0, -0.1, 0.0]
        await tool.release(instance_id)

    asyncio.run(episode())


def test_instance_ids_do_not_share_state(tool: CalculatorTool) -> None:
    async def episode() -> None:
        first, second = await tool.create(None, identity=IDENTITY), await tool.create(None, identity=IDENTITY)
        assert first != second
        await tool.execute(first, {"expression": "1 +"})
        await tool.execute(first, {"expression": "7 * 6"})
        # the same call in another episode is not a repeat
        assert await tool.execute(second, {"expression": "7 * 6"}) == ("42", 0.0, {"calls": 1, "wasted": 0})
        assert await tool.calc_reward(first) == pytest.approx(0.9)
        assert await tool.calc_reward(second) == 1.0
        await tool.release(first)
        assert await tool.calc_reward(second) == 1.0
        await tool.release(second)

    asyncio.run(episode())


def test_concurrent_calls_across_episodes(tool: CalculatorTool) -> None:
    async def episode(index: int) -> list[str]:
        instance_id = await tool.create(f"concurrent-{index}", identity=IDENTITY)
        results = await asyncio.gather(*(tool.execute(instance_id, {"expression": f"{index} * {k}"}) for k in range(5)))
        assert await tool.calc_reward(instance_id) == 1.0
        await tool.release(instance_id)
        return [text for text, _, _ in results]

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(episode(index) for index in range(20)))

    outputs = asyncio.run(main())
    assert outputs == [[str(index * k) for k in range(5)] for index in range(20)]
    assert not any(key.startswith("concurrent-") for key in tool.instances)


def test_unknown_episode_is_a_clear_error(tool: CalculatorTool) -> None:
    with pytest.raises(KeyError, match="create"):
        asyncio.run(tool.execute("never-created", {"expression": "1"}))


def test_penalty_is_configurable() -> None:
    tool = CalculatorTool(wasted_call_penalty=0.25)

    async def episode() -> tuple[float, float]:
        instance_id = await tool.create(None)
        step = (await tool.execute(instance_id, {"expression": "1 / 0"}))[1]
        return step, await tool.calc_reward(instance_id)

    assert asyncio.run(episode()) == (-0.25, 0.75)
