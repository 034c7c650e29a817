"""The adapter runs each call as ``bootcamp eval`` does, through ``bootcamp_core.execute_tool``: the same text for
every kind of call, the same split of the model's mistakes from infrastructure failures."""

from __future__ import annotations

import asyncio
import json

import pytest

from bootcamp_core import InfrastructureError, ModelError, execute_tool
from bootcamp_verl.tool import FAILURE_ATTRIBUTE, INSTANCE_ATTRIBUTE, BootcampTool

TIMEOUT_S = 0.05
IDENTITY = {"target": 5}


def agent_data():
    from verl.experimental.agent_loop.tool_agent_loop import AgentData

    return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id="request",
                     tools_kwargs={"counter": {"create_kwargs": {"identity": json.dumps(IDENTITY)}}})


async def as_the_engine_runs_it(tool, instance_id: str, parameters) -> tuple[str, float]:
    """What the rollout engine shows the model for one call: the output, or ``Error: ...`` for the model's mistake."""
    try:
        text, reward, _ = await execute_tool(tool, instance_id, parameters, timeout_s=TIMEOUT_S, name="counter")
    except ModelError as error:
        return f"Error: {error}", 0.0
    return text, reward


async def as_the_adapter_runs_it(adapter: BootcampTool, parameters, data) -> tuple[str, float]:
    handle, _ = await adapter.create(create_kwargs={})
    try:
        response, reward, _ = await adapter.execute(handle, parameters, agent_data=data)
    finally:
        await adapter.release(handle)
    return response.text, reward


# a call the tool answers, one it rejects by raising, arguments that are no object, a call that never ends
CALLS = [{"steps": [2]}, {"steps": ["x"]}, ["steps"], {"steps": [0]}, {"steps": [1, 1]}]


def test_every_kind_of_call_reads_as_the_engine_shows_it():
    adapter = BootcampTool({"type": "native", "tool_id": "mini/counter", "tool_timeout_s": TIMEOUT_S})
    data = agent_data()

    async def scenario():
        await adapter.tool.create("engine-episode", identity=IDENTITY)
        try:
            expected = [await as_the_engine_runs_it(adapter.tool, "engine-episode", call) for call in CALLS]
        finally:
            await adapter.tool.release("engine-episode")
        seen = [await as_the_adapter_runs_it(adapter, call, data) for call in CALLS]
        await adapter.close_episode(getattr(data, INSTANCE_ATTRIBUTE))
        return expected, seen

    expected, seen = asyncio.run(scenario())
    assert seen == expected
    assert [text for text, _ in seen] == [
        "count=2", "Error: counter failed: ValueError: steps must be a list of integers",
        "Error: arguments of counter must be a JSON object, got list", f"Error: counter timed out after {TIMEOUT_S:g} s",
        "count=4"]


def test_an_infrastructure_failure_is_raised_by_both_and_recorded_on_the_trajectory():
    adapter = BootcampTool({"type": "native", "tool_id": "mini/counter", "tool_timeout_s": TIMEOUT_S})
    data = agent_data()

    async def scenario():
        await adapter.tool.create("engine-episode", identity=IDENTITY)
        try:
            with pytest.raises(InfrastructureError, match="the tool server went away"):
                await as_the_engine_runs_it(adapter.tool, "engine-episode", {"steps": [-1]})
        finally:
            await adapter.tool.release("engine-episode")
        with pytest.raises(InfrastructureError, match="the tool server went away"):
            await as_the_adapter_runs_it(adapter, {"steps": [-1]}, data)
        await adapter.close_episode(getattr(data, INSTANCE_ATTRIBUTE))

    asyncio.run(scenario())
    assert getattr(data, FAILURE_ATTRIBUTE) == "mini/counter: the tool server went away"
