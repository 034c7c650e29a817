"""``type: mcp`` tools: an MCP server's tools as a bootcamp's tools. A small independent MCP server written with the
SDK (stdio, one session per episode) serves bootcamp-example's calculator; ``bootcamp eval`` through it scores as with
the local tool, and a server whose tool takes other arguments is one clear error before any episode."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time

import pytest

from bootcamp_core import ConfigError
from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.io import write_records
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.results import iter_result_lines
from bootcamp_core.evaluate.run import run_evaluation

SERVER = textwrap.dedent('''
    import sys

    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from bootcamp_example.tools import CalculatorTool

    calculator = CalculatorTool()
    sessions = {}  # client session -> its calculator instance: this server keeps per-session state

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[
            types.Tool(name="calculator", description="exact arithmetic", input_schema=CalculatorTool.parameters),
            types.Tool(name="adder", description="adds", input_schema={
                "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]}),
        ])

    async def call_tool(ctx, params):
        key = id(ctx.session)
        if key not in sessions:
            sessions[key] = await calculator.create()
        text, _, _ = await calculator.execute(sessions[key], params.arguments or {})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    is_error=text.startswith("Error:"))

    async def main():
        server = Server("calculator", on_list_tools=list_tools, on_call_tool=call_tool)
        if len(sys.argv) > 1:  # streamable HTTP on 127.0.0.1:<port>/mcp
            import uvicorn

            app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
            config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="on")
            await uvicorn.Server(config).serve()
            return
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')


@pytest.fixture(scope="module")
def setup(example_registry, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-backend")
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:3", "seed": 11})
    records = list(iter_records(config, "test", example_registry))
    dataset = folder / "data.jsonl"
    write_records(dataset, records)
    script = folder / "calculator_server.py"
    script.write_text(SERVER)
    return folder, dataset, script


def _tools_yaml(folder, script, extra: str = "") -> object:
    path = folder / f"tools{len(extra)}.yaml"
    path.write_text(f"tools:\n  - class_name: example/calculator\n    type: mcp\n    command: {sys.executable}\n"
                    f"    args: [{script}]\n{extra}")
    return path


def test_eval_through_an_mcp_servers_calculator_scores_as_the_local_tool(setup, example_registry):
    folder, dataset, script = setup
    local = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=folder / "local"), registry=example_registry,
                           progress=False)
    remote = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=folder / "mcp",
                                       tool_config=_tools_yaml(folder, script)),
                            registry=example_registry, progress=False)
    scores = {}
    for name in ("local", "mcp"):
        lines = [line for line in iter_result_lines(folder / name / "results.jsonl")]
        scores[name] = sorted((line["id"], line["score"], line["success"]) for line in lines)
    assert scores["mcp"] == scores["local"] and all(success for _, _, success in scores["mcp"])
    assert remote["overall"]["mean_score"] == local["overall"]["mean_score"]
    calls = [line["turn_record"]["tool_calls"] for line in iter_result_lines(folder / "mcp" / "results.jsonl")]
    assert sum(calls) > 0  # the calls went to the MCP server


@pytest.fixture
def http_server(setup):
    """The same independent server over streamable HTTP, in a process of its own."""
    script = setup[2]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # a hang detector, not a timing check
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP test server did not start: {process.stderr.read()!r}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


def test_eval_through_an_mcp_server_over_streamable_http_scores_as_the_local_tool(setup, http_server,
                                                                                  example_registry):
    folder, dataset, _ = setup
    tools = folder / "tools_http.yaml"
    tools.write_text(f"tools:\n  - class_name: example/calculator\n    type: mcp\n    url: {http_server}\n")
    local = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=folder / "local_http"),
                           registry=example_registry, progress=False)
    remote = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=folder / "mcp_http", tool_config=tools),
                            registry=example_registry, progress=False)
    lines = {name: sorted((line["id"], line["score"], line["success"])
                          for line in iter_result_lines(folder / name / "results.jsonl"))
             for name in ("local_http", "mcp_http")}
    assert lines["mcp_http"] == lines["local_http"] and all(success for *_, success in lines["mcp_http"])
    assert remote["overall"]["mean_score"] == local["overall"]["mean_score"]
    assert sum(line["turn_record"]["tool_calls"] for line in iter_result_lines(folder / "mcp_http" / "results.jsonl"))


def test_a_server_tool_with_other_arguments_is_one_clear_error(setup, example_registry):
    folder, dataset, script = setup
    tools = _tools_yaml(folder, script, "    mcp_tool: adder\n")
    with pytest.raises(ConfigError, match=r"the MCP server's tool 'adder' takes \['a', 'b'\]"):
        run_evaluation(EvalConfig(dataset_path=dataset, output_dir=folder / "bad", tool_config=tools),
                       registry=example_registry, progress=False)
    assert not (folder / "bad" / "results.jsonl").exists()


def test_the_originals_mcp_server_url_and_top_level_keys_are_read(tmp_path):
    from bootcamp_core.data.config import load_component_config

    path = tmp_path / "tools.yaml"
    path.write_text("tools:\n  - class_name: example/calculator\n    type: mcp\n"
                    "    mcp_server_url: http://127.0.0.1:9/mcp\n    mcp_tool: calc\n")
    [entry] = load_component_config(path, "tool")
    assert entry.config == {"type": "mcp", "url": "http://127.0.0.1:9/mcp", "mcp_tool": "calc",
                            "tool_id": "example/calculator"}
