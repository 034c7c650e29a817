"""``bootcamp mcp serve`` played by the ``mcp`` SDK's own client, over streamable HTTP and stdio: one MCP session is
one episode, scored as ``run_episode`` scores the reference agent's; bad inputs are MCP errors the server survives;
results land in ``results.jsonl`` in the evaluator's format, and a kill -9 loses no finished episode."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client

from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.io import write_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import run_episode
from bootcamp_core.episode.policies import ReferencePolicy
from bootcamp_core.evaluate.results import iter_result_lines
from bootcamp_core.testing import free_port

WATCHDOG_S = 120  # a hang fails the test instead of holding CI


@pytest.fixture(scope="module")
def records(example_registry) -> list[dict]:
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:4", "seed": 7})
    return list(iter_records(config, "test", example_registry))


@pytest.fixture(scope="module")
def dataset(records, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "data.jsonl"
    write_records(path, records)
    return path


def _serve_command(dataset: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bootcamp_core.cli", "mcp", "serve", "--dataset-path", str(dataset), *extra]


class _HttpServer:
    def __init__(self, dataset: Path, out: Path, *extra: str, host: str = "127.0.0.1") -> None:
        self.port, self.out = free_port(), out
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = open(out.parent / f"server-{self.port}.log", "w")  # noqa: SIM115
        env = {**os.environ, "BOOTCAMP_STRICT_PLUGINS": "1"}
        self.process = subprocess.Popen(
            _serve_command(dataset, "--port", str(self.port), "--host", host, "--output-dir", str(out), *extra),
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, Path(self.log.name).read_text()
            try:
                httpx2.get(f"http://127.0.0.1:{self.port}/", timeout=1)
                return
            except httpx2.HTTPError:
                time.sleep(0.1)
        raise AssertionError("the MCP server did not start")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)
        self.log.close()


@pytest.fixture(scope="module")
def http_server(dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("mcp-http")
    server = _HttpServer(dataset, out)
    yield server
    server.stop()


@asynccontextmanager
async def http_session(url: str, headers: dict | None = None, notifications: list | None = None):
    async def on_message(message) -> None:
        if notifications is not None:
            notifications.append(message)

    client = httpx2.AsyncClient(headers=headers or {}, timeout=60)
    async with (client, streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write, message_handler=on_message) as session):
        await session.initialize()
        yield session


async def play(session: ClientSession, record: dict, index: int) -> dict:
    """The reference agent, through MCP: its tool calls become MCP tool calls, its answer ``submit_answer``."""
    started = await session.call_tool("start_episode", {"index": index})
    assert not started.is_error, started.content
    info = started.structured_content
    assert info["index"] == index and info["tools"]
    listed = {tool.name for tool in (await session.list_tools()).tools}
    assert {"start_episode", "submit_answer", *info["tools"]} == listed
    sample = GeneratedSample.from_record(record)
    messages = [dict(message) for message in sample.prompt]
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                 "parameters": t.input_schema}}
             for t in (await session.list_tools()).tools if t.name in info["tools"]]
    policy, rng = ReferencePolicy(), random.Random(info["episode_id"])
    for _ in range(50):
        turn = await policy(messages, tools, sample, rng)
        message = dict(turn.message)
        messages.append(message)
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                arguments = json.loads(call["function"]["arguments"] or "{}")
                result = await session.call_tool(call["function"]["name"], arguments)
                text = result.content[0].text
                if result.structured_content and result.structured_content.get("done"):
                    return result.structured_content
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
            continue
        result = await session.call_tool("submit_answer", {"answer": message.get("content") or ""})
        assert not result.is_error, result.content
        if result.structured_content["done"]:
            return result.structured_content
        messages.append({"role": "user", "content": result.structured_content["feedback"]})
    raise AssertionError("the episode did not end")


def reference_scores(records: list[dict], registry) -> list[float]:
    async def scores() -> list[float]:
        return [(await run_episode(record, ReferencePolicy(registry), registry=registry)).score for record in records]

    return anyio.run(scores)


def test_the_sdk_client_plays_full_episodes_over_http_and_scores_as_run_episode(http_server, records,
                                                                               example_registry):
    async def main() -> list[dict]:
        outcomes = []
        with anyio.fail_after(WATCHDOG_S):
            for index in range(2):
                notifications: list = []
                async with http_session(http_server.url, notifications=notifications) as session:
                    outcomes.append(await play(session, records[index], index))
                assert any(isinstance(getattr(n, "root", n), types.ToolListChangedNotification)
                           for n in notifications), notifications
        return outcomes

    outcomes = anyio.run(main)
    expected = reference_scores(records[:2], example_registry)
    assert [outcome["score"] for outcome in outcomes] == expected
    assert all(outcome["done"] and outcome["solved"] == (score >= 1.0) for outcome, score in zip(outcomes, expected))


def test_the_results_file_holds_each_finished_episode_in_the_evaluators_format(http_server, records):
    results = http_server.out / "results.jsonl"
    for _ in range(100):
        if results.exists() and len(results.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(lines) >= 2
    assert {line["finish_reason"] for line in lines} <= {"answered", "terminated", "abandoned"}
    assert all(line["input"] in records and line["messages"][-1]["role"] == "assistant" for line in lines)
    assert list(iter_result_lines(results))  # the evaluator's own reader takes it


def test_the_sdk_client_plays_an_episode_over_stdio_and_scores_as_run_episode(dataset, records, example_registry,
                                                                              tmp_path):
    params = StdioServerParameters(command=sys.executable, env={"BOOTCAMP_STRICT_PLUGINS": "1"}, args=[
        "-m", "bootcamp_core.cli", "mcp", "serve", "--transport", "stdio", "--dataset-path", str(dataset),
        "--output-dir", str(tmp_path)])

    async def main() -> dict:
        with anyio.fail_after(WATCHDOG_S):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await play(session, records[2], 2)

    outcome = anyio.run(main)
    assert outcome["score"] == reference_scores(records[2:3], example_registry)[0]
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(line["input"], line["score"]) for line in lines] == [(records[2], outcome["score"])]


def _text(result: types.CallToolResult) -> str:
    return result.content[0].text


def test_bad_inputs_are_mcp_errors_and_the_server_lives_on(http_server, records):
    async def main() -> None:
        with anyio.fail_after(WATCHDOG_S):
            async with http_session(http_server.url) as session:
                early = await session.call_tool("calculator", {"expression": "1+2"})
                assert early.is_error and "start_episode first" in _text(early)
                unknown_record = await session.call_tool("start_episode", {"index": 99})
                assert unknown_record.is_error and "unknown record 99" in _text(unknown_record)
                started = await session.call_tool("start_episode", {"index": 3})
                assert not started.is_error
                again = await session.call_tool("start_episode", {"index": 0})
                assert again.is_error and "one session plays one episode" in _text(again)
                unknown_tool = await session.call_tool("no_such_tool", {})
                assert unknown_tool.is_error and "unknown tool 'no_such_tool'" in _text(unknown_tool)
                malformed = await session.call_tool("calculator", {"expression": {"nested": [1, 2]}})
                assert malformed.is_error and _text(malformed).startswith("Error: ")
                bad_answer = await session.call_tool("submit_answer", {"answer": 42})
                assert bad_answer.is_error
                for _ in range(20):  # a wrong answer gets the interaction's feedback until the turn limits end it
                    done = await session.call_tool("submit_answer", {"answer": "no idea"})
                    assert not done.is_error, _text(done)
                    if done.structured_content["done"]:
                        break
                    assert done.structured_content["feedback"]
                assert done.structured_content["done"] and done.structured_content["score"] == 0.0
                after = await session.call_tool("calculator", {"expression": "1+2"})
                assert after.is_error and "the episode has ended" in _text(after)
            # a session left before its answer is recorded as abandoned, scored as an empty answer
            async with http_session(http_server.url) as session:
                assert not (await session.call_tool("start_episode", {"index": 1})).is_error
            async with http_session(http_server.url) as session:  # still serving
                assert (await session.list_tools()).tools

    anyio.run(main)
    results = http_server.out / "results.jsonl"
    for _ in range(100):
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        if any(line["finish_reason"] == "abandoned" for line in lines):
            break
        time.sleep(0.1)
    abandoned = [line for line in lines if line["finish_reason"] == "abandoned"]
    assert len(abandoned) == 1 and abandoned[0]["input"] == records[1] and abandoned[0]["score"] == 0.0
    played = [line for line in lines if line["input"] == records[3]]
    assert played[-1]["messages"][-1] == {"role": "assistant", "content": "no idea"}
    assert [m["role"] for m in played[-1]["messages"]].count("tool") == 1  # the malformed call, told to the model


def test_a_token_is_required_when_given_and_to_bind_off_loopback(dataset, tmp_path):
    refused = subprocess.run(_serve_command(dataset, "--host", "0.0.0.0", "--port", str(free_port())),
                             check=False, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "BOOTCAMP_TOKEN": ""})
    assert refused.returncode == 1 and refused.stderr.startswith("error: ") and "needs a token" in refused.stderr
    server = _HttpServer(dataset, tmp_path, "--token", "s3cret-token")
    try:
        async def main() -> None:
            with anyio.fail_after(WATCHDOG_S):
                for headers in ({}, {"Authorization": "Bearer wrong"}):
                    with pytest.raises(BaseException) as raised:  # an MCPError inside task groups
                        async with http_session(server.url, headers=headers) as session:
                            await session.list_tools()
                    assert "wrong or missing token" in repr(raised.value), raised.value  # the MCP error it got
                async with http_session(server.url, {"Authorization": "Bearer s3cret-token"}) as session:
                    assert (await session.list_tools()).tools

        anyio.run(main)
        assert server.process.poll() is None
    finally:
        server.stop()
    assert "s3cret-token" not in Path(server.log.name).read_text()


def test_kill_9_mid_episode_loses_no_finished_episode(dataset, records, tmp_path):
    server = _HttpServer(dataset, tmp_path)
    try:
        async def main() -> None:
            with anyio.fail_after(WATCHDOG_S):
                for index in range(2):
                    async with http_session(server.url) as session:
                        await play(session, records[index], index)
                async with http_session(server.url) as session:
                    assert not (await session.call_tool("start_episode", {"index": 2})).is_error
                    await session.call_tool("calculator", {"expression": "1+2"})
                    server.process.send_signal(signal.SIGKILL)
                    server.process.wait(30)

        anyio.run(main)
    finally:
        server.stop()
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [line["input"] for line in lines] == records[:2]
