"""``bootcamp verl export --ray-tools``: the adapter runs its tools on tool actors in verl's own Ray job (a real local
Ray instance started here), so a verl job needs no tool server."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator

import pytest
import yaml

from bootcamp_verl.export import ExportOptions, export_datasets

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_ray() -> Iterator[object]:
    """A Ray instance of this test process (loopback, no dashboard), stopped with it: verl's driver stands here."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # short: Ray's socket paths live under it and a Unix socket path has a length limit
    temp_dir = tempfile.mkdtemp(prefix="rv-", dir="/tmp" if os.path.isdir("/tmp") else None)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", _temp_dir=temp_dir,
             logging_level="WARNING", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_export(datasets, tmp_path_factory):
    return export_datasets([datasets.mixed_train], tmp_path_factory.mktemp("ray-export"),
                           options=ExportOptions(ray_tools=True, ray_tool_actors=2))


def test_export_puts_every_tool_on_one_pool_of_tool_actors(ray_export):
    entries = yaml.safe_load(ray_export.tool_config.read_text())["tools"]
    assert all(entry["config"]["type"] == "native" for entry in entries)  # verl's loader accepts nothing else
    pools = [entry["config"]["ray_tools"] for entry in entries]
    # every actor builds every tool of the export, so one episode's tools live in one actor
    assert pools == [{"name": "bootcamp-tools", "tools": {"example/calculator": {}, "mini/counter": {}},
                      "actors": 2}] * 2
    assert {entry["config"]["tool_id"]: entry["config"]["parallel_safe"] for entry in entries} == {
        "example/calculator": True, "mini/counter": False}


def test_ray_tools_and_a_tool_server_exclude_each_other(datasets, tmp_path):
    from bootcamp_core import ConfigError

    with pytest.raises(ConfigError, match="--ray-tools and --tool-server exclude each other"):
        export_datasets([datasets.mixed_train], tmp_path,
                        options=ExportOptions(ray_tools=True, tool_server="http://127.0.0.1:9"))
    assert not any(tmp_path.iterdir())


def test_an_episode_runs_on_tool_actors_of_verls_ray_job(local_ray, ray_export, dataset_rows, make_loop,
                                                         scripted_server, call):
    from verl.tools.tool_registry import initialize_tools_from_config

    from bootcamp_core import ToolActors

    tools = {tool.name: tool for tool in initialize_tools_from_config(str(ray_export.tool_config))}
    assert {type(tool.tool).__name__ for tool in tools.values()} == {"RayTool_example_calculator",
                                                                     "RayTool_mini_counter"}
    row = next(row for row in dataset_rows if row["data_source"] == "bootcamp/example")
    identity = json.loads(row["reward_model"]["ground_truth"])
    calculate = call("calculator", {"expression": identity["expression"]})
    right = f'Answer:\n```json\n{{"result": {json.dumps(identity["expected_result"])}}}\n```'

    async def episode():
        loop = make_loop("bootcamp_agent", scripted_server([calculate, calculate, right]), list(tools.values()))
        return await loop.run({"temperature": 1.0}, **{k: v for k, v in row.items() if k != "agent_name"})

    output = asyncio.run(episode())
    extra = output.extra_fields
    assert extra["tool_rewards"] == [0.0, -0.1]  # the actor kept the episode's state between verl's calls
    assert extra["tool_scores"] == {"calculator": pytest.approx(0.9)} and extra["turn_scores"] == [1.0]
    assert extra["infrastructure_error"] is None
    status = ToolActors.connect("bootcamp-tools").status()
    assert len({actor["pid"] for actor in status["actors"]}) == 2
    assert os.getpid() not in [actor["pid"] for actor in status["actors"]]
    assert status["instances"] == 0  # released in its actor at the end of the episode
