"""The adapter against a real `bootcamp serve` on loopback: the tools run in the server's workers, not in verl's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
import yaml

from bootcamp_core.testing import free_port, serve_tools
from bootcamp_verl.export import ExportOptions, export_datasets
from bootcamp_verl.reward import compute_score

pytestmark = pytest.mark.slow
TOKEN = "loopback-secret"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    """`bootcamp serve --mode unified` with one worker serving example and mini, wanting a token."""
    with serve_tools("--mode", "unified", "--num-workers", "1", "--bootcamps", "example,mini", "--token", TOKEN,
                     log_dir=tmp_path_factory.mktemp("serve")) as running:
        yield running.url


def served_instances(url: str) -> int:
    return httpx.get(url + "/health", timeout=5).json()["instances"]


@pytest.fixture(scope="module")
def remote_export(server, datasets, tmp_path_factory):
    """The mixed dataset exported with --tool-server (token from BOOTCAMP_TOKEN): schemas from the server, every tool
    pointed at it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BOOTCAMP_TOKEN", TOKEN)
        return export_datasets([datasets.mixed_train], tmp_path_factory.mktemp("remote-export"),
                               options=ExportOptions(tool_server=server))


def remote_tools(remote_export) -> dict:
    """verl's loader on the exported config, with the server's token in each entry (BOOTCAMP_TOKEN works too)."""
    from verl.tools.tool_registry import initialize_tools_from_config

    config = yaml.safe_load(remote_export.tool_config.read_text())
    for entry in config["tools"]:
        entry["config"]["token"] = TOKEN
    path = remote_export.tool_config.with_name("tool_config_with_token.yaml")
    path.write_text(yaml.safe_dump(config))
    return {tool.name: tool for tool in initialize_tools_from_config(str(path))}


def test_export_points_every_tool_at_the_server(remote_export, server):
    entries = yaml.safe_load(remote_export.tool_config.read_text())["tools"]
    assert {entry["config"]["tool_id"]: entry["config"]["url"] for entry in entries} == {
        "example/calculator": server, "mini/counter": server}
    assert all(entry["config"]["type"] == "native" for entry in entries)  # verl's loader accepts nothing else
    # the server's parallel_safe travels in the config (the function schema has no place for it)
    assert {entry["config"]["tool_id"]: entry["config"]["parallel_safe"] for entry in entries} == {
        "example/calculator": True, "mini/counter": False}


def test_an_episode_runs_on_served_tools(server, remote_export, dataset_rows, make_loop, scripted_server, call):
    tools = remote_tools(remote_export)
    assert {type(tool.tool).__name__ for tool in tools.values()} == {"Remote_example_calculator", "Remote_mini_counter"}
    row = next(row for row in dataset_rows if row["data_source"] == "bootcamp/example")
    identity = json.loads(row["reward_model"]["ground_truth"])
    calculate = call("calculator", {"expression": identity["expression"]})
    right = f'Answer:\n```json\n{{"result": {json.dumps(identity["expected_result"])}}}\n```'

    async def episode():
        loop = make_loop("bootcamp_agent", scripted_server([calculate, calculate, right]), list(tools.values()))
        output = await loop.run({"temperature": 1.0}, **{k: v for k, v in row.items() if k != "agent_name"})
        for tool in tools.values():
            await tool.tool.client.aclose()
        return output

    output = asyncio.run(episode())
    extra = output.extra_fields
    assert extra["tool_rewards"] == [0.0, -0.1]  # the server kept the episode's state between verl's calls
    assert extra["tool_scores"] == {"calculator": pytest.approx(0.9)} and extra["turn_scores"] == [1.0]
    assert extra["infrastructure_error"] is None
    assert served_instances(server) == 0  # released on the server at the end of the episode
    reward = compute_score(row["data_source"], "", row["reward_model"]["ground_truth"], {**row["extra_info"], **extra})
    assert reward["score"] == 1.0


def test_served_state_survives_verls_stock_loop_and_is_reaped(server, remote_export, dataset_rows, make_loop,
                                                              scripted_server, call):
    tools = remote_tools(remote_export)
    row = next(row for row in dataset_rows if row["data_source"] == "bootcamp/mini")
    steps = call("counter", {"steps": "[1, 1]"})

    model = scripted_server([steps + steps, steps, "done"])  # two calls at once in the first turn

    async def episode():
        loop = make_loop("tool_agent", model, list(tools.values()))
        await loop.run({"temperature": 1.0}, **{k: v for k, v in row.items() if k != "agent_name"})
        held = served_instances(server)
        released = await tools["counter"].reap_idle()
        await tools["counter"].tool.client.aclose()
        return held, released

    held, released = asyncio.run(episode())
    # every call counted on from the calls before, whose state lives in the server's worker; verl started the two
    # calls of the first turn at once (max_parallel_calls), and the adapter ran them one after the other in call
    # order (counter is not parallel_safe), the second also waiting for the first's create
    assert "tool\ncount=2<|im_end|>" in model.prompts[1] and "tool\ncount=4<|im_end|>" in model.prompts[1]
    assert "tool\ncount=6<|im_end|>" in model.prompts[2]
    assert held == 1 and len(released) == 1 and served_instances(server) == 0


def test_a_tool_server_that_cannot_be_reached_fails_the_episode_untrained(remote_export, dataset_rows, make_loop,
                                                                           scripted_server, call):
    from verl.tools.tool_registry import initialize_tools_from_config

    config = yaml.safe_load(remote_export.tool_config.read_text())
    for entry in config["tools"]:
        entry["config"]["url"] = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    path = remote_export.tool_config.with_name("tool_config_unreachable.yaml")
    path.write_text(yaml.safe_dump(config))
    tools = initialize_tools_from_config(str(path))
    row = next(row for row in dataset_rows if row["data_source"] == "bootcamp/mini")

    async def episode(model):
        loop = make_loop("bootcamp_agent", model, tools)
        output = await loop.run({"temperature": 1.0}, **{k: v for k, v in row.items() if k != "agent_name"})
        for tool in tools:
            await tool.tool.client.aclose()
        return output

    model = scripted_server([call("counter", {"steps": "[1]"}), "done"])
    output = asyncio.run(episode(model))
    extra = output.extra_fields
    assert extra["finish_reason"] == "error" and "cannot connect" in extra["infrastructure_error"]
    assert extra["tool_scores"] == {} and extra["bootcamp_error"] == 1
    # the tools could not be opened: no model turn ran, and nothing of the trajectory is trained on
    assert model.prompts == []
    assert output.response_mask and set(output.response_mask) == {0}
    reward = compute_score(row["data_source"], "done", row["reward_model"]["ground_truth"],
                           {**row["extra_info"], **extra})
    assert reward["score"] == 0.0 and reward["bootcamp_error"] == 1.0
