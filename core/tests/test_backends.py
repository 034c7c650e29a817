"""The table of tool backends: a tool-config entry's ``type:`` names the module that runs the tool."""

from __future__ import annotations

import anyio
import pytest

from bootcamp_core import ConfigError
from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.io import write_records
from bootcamp_core.episode.engine import run_episode
from bootcamp_core.episode.policies import ReferencePolicy
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.backends import tool_backend
from bootcamp_core.testing import serve_tools


@pytest.fixture(scope="module")
def records(example_registry) -> list[dict]:
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:4"})
    return list(iter_records(config, "test", example_registry))


def test_an_unknown_type_is_a_config_error_naming_the_field_and_the_known_backends():
    with pytest.raises(ConfigError, match=r"^type 'mcq' is not a tool backend; known: mcp, ray, remote$") as raised:
        tool_backend("mcq")
    assert raised.value.field == "type"


def test_an_unknown_type_in_a_tool_config_fails_the_evaluation_before_any_episode(example_registry, records, tmp_path):
    dataset = tmp_path / "data.jsonl"
    write_records(dataset, records)
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools:\n  - class_name: example/calculator\n    config: {type: mcq, url: http://127.0.0.1:9}\n")
    config = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out", tool_config=tools)
    with pytest.raises(ConfigError, match=r"tools\.yaml: tool example/calculator: type 'mcq' is not a tool backend"
                       ) as raised:
        run_evaluation(config, registry=example_registry, progress=False)
    assert raised.value.field == "type"
    assert not (tmp_path / "out").exists()


def test_verl_native_type_is_no_backend_and_the_tool_stays_local(example_registry, records, tmp_path):
    dataset = tmp_path / "data.jsonl"
    write_records(dataset, records)
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools:\n  - class_name: example/calculator\n    config: {type: native}\n")
    summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out", tool_config=tools),
                             registry=example_registry, progress=False)
    assert summary["overall"]["count"] == len(records) and summary["overall"]["mean_score"] == 1.0


def test_a_remote_entry_without_a_url_names_the_field():
    with pytest.raises(ConfigError, match="tool example/calculator: a remote tool needs url") as raised:
        tool_backend("remote").tool("example/calculator", {"type": "remote"})
    assert raised.value.field == "url"


@pytest.mark.slow
def test_the_engine_runs_a_remote_entry_through_its_backend_like_a_local_tool(example_registry, records, tmp_path):
    with serve_tools("--num-workers", "1", "--bootcamps", "example", log_dir=tmp_path,
                     env={"BOOTCAMP_LOAD_PLUGINS": "example"}) as server:
        entry = {"type": "remote", "url": server.url, "call_timeout_s": 30}
        backend = tool_backend("remote")

        async def episodes() -> tuple[set[str], list, list]:
            served = await backend.served_tools(entry)
            policy = ReferencePolicy(example_registry)
            remote = [await run_episode(record, policy, registry=example_registry,
                                        component_config={"example/calculator": entry}) for record in records]
            local = [await run_episode(record, policy, registry=example_registry) for record in records]
            await backend.close(entry)
            return served, remote, local

        served, remote, local = anyio.run(episodes)
    assert "example/calculator" in served
    for there, here in zip(remote, local):
        assert there.success and there.score == here.score == 1.0
        assert [call.output for call in there.tool_calls] == [call.output for call in here.tool_calls]
        assert set(here.versions) <= set(there.versions)  # plus what the server reported running the tool
