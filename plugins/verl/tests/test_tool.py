"""The BaseTool adapter: one bootcamp instance per trajectory across verl's per-call create/execute/release."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

from bootcamp_core import ConfigError, UnknownIdError, get_registry
from bootcamp_verl.tool import INSTANCE_ATTRIBUTE, BootcampTool


def agent_data(tools_kwargs: dict | None = None):
    """A trajectory's state object, as verl's ToolAgentLoop makes one per sample."""
    from verl.experimental.agent_loop.tool_agent_loop import AgentData

    return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id="request", tools_kwargs=tools_kwargs or {})


async def one_call(tool: BootcampTool, parameters: dict, data, create_kwargs: dict | None = None):
    """One tool call exactly as verl 0.9's ToolAgentLoop._call_tool makes it."""
    handle, _ = await tool.create(create_kwargs=create_kwargs or {})
    try:
        return await tool.execute(handle, parameters, agent_data=data)
    finally:
        await tool.release(handle)


def example_row(rows: list[dict]) -> dict:
    return next(row for row in rows if row["data_source"] == "bootcamp/example")


def test_state_survives_verls_per_call_lifecycle_under_its_stock_loop(dataset_rows, run_loop, load_tools,
                                                                      scripted_server, call):
    row = example_row(dataset_rows)
    identity = json.loads(row["reward_model"]["ground_truth"])
    calculate = call("calculator", {"expression": identity["expression"]})
    tools = load_tools()
    calculator = tools["calculator"]
    server = scripted_server([calculate, calculate, 'Answer:\n```json\n{"result": 1}\n```'])
    _, output = run_loop("tool_agent", server, list(tools.values()), row)

    # the second call repeats the first: only a tool that kept the episode's state knows (the example charges 0.1)
    assert output.extra_fields["tool_rewards"] == [0.0, -0.1]
    assert server.prompts[2].count("<|im_start|>tool\n") == 2
    # verl never said the trajectory ended; its AgentData is gone, so the next sweep releases the instance
    [instance_id] = calculator.open_instances
    assert instance_id in calculator.tool.instances
    assert asyncio.run(calculator.reap_idle()) == [instance_id]
    assert calculator.open_instances == [] and instance_id not in calculator.tool.instances


def test_an_idle_trajectory_is_released_after_the_timeout():
    tool = BootcampTool({"type": "native", "tool_id": "example/calculator", "idle_timeout_s": 60})
    data = agent_data({"calculator": {"create_kwargs": {"identity": json.dumps({"expression": "1+2"})}}})

    async def scenario():
        first = await one_call(tool, {"expression": "1+2"}, data)
        second = await one_call(tool, {"expression": "1+2"}, data)
        instance_id = getattr(data, INSTANCE_ATTRIBUTE)
        assert tool.open_instances == [instance_id]
        kept = await tool.reap_idle(now=time.monotonic() + 30)  # still running, not idle long enough
        released = await tool.reap_idle(now=time.monotonic() + 61)
        return first, second, instance_id, kept, released

    first, second, instance_id, kept, released = asyncio.run(scenario())
    assert (first[0].text, first[1]) == ("3", 0.0) and (second[0].text, second[1]) == ("3", -0.1)
    assert kept == [] and released == [instance_id]
    assert tool.open_instances == [] and instance_id not in tool.tool.instances


def test_a_trajectory_released_as_idle_starts_over_with_a_warning(caplog):
    tool = BootcampTool({"type": "native", "tool_id": "example/calculator", "idle_timeout_s": 60})
    data = agent_data()

    async def scenario():
        await one_call(tool, {"expression": "1+2"}, data)
        await tool.reap_idle(now=time.monotonic() + 61)
        with caplog.at_level(logging.WARNING, logger="bootcamp_verl"):
            again = await one_call(tool, {"expression": "1+2"}, data)
        await tool.close_episode(getattr(data, INSTANCE_ATTRIBUTE))
        return again

    _, reward, metrics = asyncio.run(scenario())
    assert reward == 0.0 and metrics == {"calls": 1, "wasted": 0}  # a fresh instance
    assert "released as idle while its trajectory still ran" in caplog.text


def test_verls_older_lifecycle_keeps_its_instance_id():
    tool = BootcampTool({"type": "native", "tool_id": "example/calculator"})
    identity = {"expression": "2*3", "expected_result": 6, "tolerance": 0}

    async def scenario():
        instance_id, _ = await tool.create("trajectory-1", create_kwargs={"identity": json.dumps(identity)})
        state = tool.tool.state(instance_id)
        results = [await tool.execute(instance_id, {"expression": "2*3"}) for _ in range(2)]
        score = await tool.calc_reward(instance_id)
        await tool.release(instance_id)
        return instance_id, state, results, score

    instance_id, state, results, score = asyncio.run(scenario())
    assert instance_id == "trajectory-1" and state["identity"] == identity
    assert [reward for _, reward, _ in results] == [0.0, -0.1] and score == pytest.approx(0.9)
    assert tool.open_instances == [] and instance_id not in tool.tool.instances


def test_json_text_parameters_are_decoded_and_mistakes_read_as_in_eval(load_tools):
    counter = load_tools()["counter"]
    data = agent_data({"counter": {"create_kwargs": {"identity": json.dumps({"target": 5})}}})

    async def scenario():
        texts = []
        for parameters in ({"steps": "[1, 2]"}, {"steps": [4]}, {"steps": "[1,"}, {"steps": '"x"'}, ["steps"]):
            response, _, _ = await one_call(counter, parameters, data)
            texts.append(response.text)
        return texts, await counter.episode_reward(getattr(data, INSTANCE_ATTRIBUTE))

    texts, score = asyncio.run(scenario())
    assert texts[:2] == ["count=3", "count=7"]  # JSON text, or the value itself
    assert texts[2].startswith("Error: counter: argument 'steps' must be JSON text (")
    assert texts[3] == "Error: counter failed: ValueError: steps must be a list of integers"
    assert texts[4] == "Error: arguments of counter must be a JSON object, got list"
    assert score == 0.0  # 7, not the target 5


def test_a_tool_that_does_not_answer_in_time_is_the_models_mistake():
    tool = BootcampTool({"type": "native", "tool_id": "mini/counter", "tool_timeout_s": 0.05})
    response, reward, _ = asyncio.run(one_call(tool, {"steps": [0]}, agent_data()))
    assert (response.text, reward) == ("Error: counter timed out after 0.05 s", 0.0)


def test_the_adapter_shares_the_registrys_tool_and_its_constructor_config():
    plain = BootcampTool({"type": "native", "tool_id": "example/calculator"})
    assert plain.tool is get_registry().component("tool", "example/calculator")
    costly = BootcampTool({"type": "native", "tool_id": "example/calculator",
                           "tool_config": {"wasted_call_penalty": 0.5}})
    data = agent_data()
    rewards = [asyncio.run(one_call(costly, {"expression": "1+1"}, data))[1] for _ in range(2)]
    assert rewards == [0.0, -0.5]


@pytest.mark.parametrize("config, schema_name, error", [
    ({"type": "native"}, None, "needs tool_id"),
    ({"type": "native", "tool_id": "example/calculater"}, None, 'Did you mean "example/calculator"'),
    ({"type": "native", "tool_id": "example/calculator"}, "other", "its tool_schema says 'other'"),
    ({"type": "native", "tool_id": "example/calculator", "idle_timeout_s": 0}, None, "must be positive"),
    ({"type": "remote", "tool_id": "example/calculator"}, None, "needs url"),
    ({"type": "native", "tool_id": "example/calculator", "url": "http://127.0.0.1:9", "tool_config": {"a": 1}}, None,
     "a served tool is built by its server"),
])
def test_bad_tool_configs_are_clear_errors(config, schema_name, error):
    from verl.tools.schemas import OpenAIFunctionToolSchema

    schema = None
    if schema_name:
        schema = OpenAIFunctionToolSchema.model_validate(
            {"type": "function", "function": {"name": schema_name, "description": "d"}})
    with pytest.raises((ConfigError, UnknownIdError), match=error):
        BootcampTool(config, schema)


def test_verls_loader_takes_only_native_tools_so_a_served_tool_is_native_with_a_url(tmp_path):
    from verl.tools.tool_registry import initialize_tools_from_config

    from bootcamp_core import tool_server_client

    def served_by_the_server(adapter: BootcampTool) -> bool:
        # the tool server's client hands out one tool object per (id, call limit): the adapter's is that one
        return adapter.tool is tool_server_client("http://127.0.0.1:9").tool(
            "example/calculator", call_timeout_s=adapter.tool_timeout_s)

    entry = {"class_name": "bootcamp_verl.tool.BootcampTool",
             "config": {"type": "remote", "tool_id": "example/calculator", "url": "http://127.0.0.1:9"}}
    path = tmp_path / "tools.yaml"
    path.write_text(json.dumps({"tools": [entry]}))
    with pytest.raises(ValueError, match="'remote' is not a valid ToolType"):
        initialize_tools_from_config(str(path))
    entry["config"]["type"] = "native"
    path.write_text(json.dumps({"tools": [entry]}))
    [served] = initialize_tools_from_config(str(path))
    assert served_by_the_server(served) and served.name == "calculator"
    assert served.tool is not get_registry().component("tool", "example/calculator")
    # built directly, the spelling of `bootcamp eval --tool-config` works too; neither touches the network
    assert served_by_the_server(BootcampTool(dict(entry["config"], type="remote")))


def test_calls_of_a_tool_that_is_not_parallel_safe_run_one_at_a_time():
    """verl's stock loop runs the calls of one turn concurrently; one trajectory's instance gets them in turn."""
    # delay_s: each call of the test bootcamp's counter waits between reading and writing the count, so two calls
    # that overlap both read the same count and one update is lost
    tool = BootcampTool({"type": "native", "tool_id": "mini/counter", "tool_config": {"delay_s": 0.05}})
    assert tool.parallel_safe is False
    data = agent_data({"counter": {"create_kwargs": {"identity": json.dumps({"target": 3})}}})

    async def turn():
        return await asyncio.gather(*(one_call(tool, {"steps": [step]}, data) for step in (1, 2)))

    results = asyncio.run(turn())
    assert [response.text for response, _, _ in results] == ["count=1", "count=3"]  # in call order, none lost

    # a parallel_safe tool is not held back: both calls read count=3, so the second one's write wins
    tool.parallel_safe = True
    results = asyncio.run(turn())
    assert [response.text for response, _, _ in results] == ["count=4", "count=5"]


@pytest.mark.parametrize("with_schema", [True, False])
def test_a_served_tool_is_stopped_by_the_server_at_the_tool_timeout(with_schema):
    from verl.tools.schemas import OpenAIFunctionToolSchema

    from bootcamp_verl.schemas import verl_schema

    schema = None
    if with_schema:
        cls = get_registry().get_class("tool", "mini/counter")
        schema = OpenAIFunctionToolSchema.model_validate(
            verl_schema("mini/counter", cls.openai_schema()["function"]).schema)
    tool = BootcampTool({"type": "native", "tool_id": "mini/counter", "url": "http://127.0.0.1:9",
                         "tool_timeout_s": 7, "parallel_safe": True}, schema)
    assert tool.tool.call_timeout_s == 7.0
    if with_schema:  # the tool config carries parallel_safe, which the function schema cannot
        assert tool.parallel_safe is True
