"""A professional bootcamp over MCP: the ``mcp`` SDK's client plays Texas Hold'em episodes of ``bootcamp mcp serve
--bootcamp texas_holdem`` (records generated on the fly) over streamable HTTP and over stdio, driving the reference
agent, and gets the scores ``run_episode`` gives that agent."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import RolloutLimits, run_episode
from bootcamp_core.episode.policies import ReferencePolicy
from bootcamp_core.plugin.loader import get_registry
from bootcamp_core.testing import free_port

NAMESPACE, SAMPLES, SEED = "texas_holdem", 2, 5
SERVE = [sys.executable, "-m", "bootcamp_core.cli", "mcp", "serve", "--bootcamp", NAMESPACE, "--samples",
         str(SAMPLES), "--seed", str(SEED)]


def _records() -> list[dict]:
    registry = get_registry()
    config = config_for_bootcamp(NAMESPACE, registry, overrides={"split_samples": f"test:{SAMPLES}", "seed": SEED})
    return list(iter_records(config, "test", registry))


async def _play(session: ClientSession, record: dict, index: int) -> float:
    started = await session.call_tool("start_episode", {"index": index})
    assert not started.is_error, started.content
    info = started.structured_content
    listed = (await session.list_tools()).tools
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                 "parameters": t.input_schema}} for t in listed if t.name in info["tools"]]
    sample = GeneratedSample.from_record(record)
    messages = [dict(message) for message in sample.prompt]
    policy, rng = ReferencePolicy(), random.Random(info["episode_id"])
    for _ in range(200):
        message = dict((await policy(messages, tools, sample, rng)).message)
        messages.append(message)
        for call in message.get("tool_calls") or []:
            result = await session.call_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
            if result.structured_content and result.structured_content.get("done"):
                return result.structured_content["score"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.content[0].text})
        if message.get("tool_calls"):
            continue
        result = await session.call_tool("submit_answer", {"answer": message.get("content") or ""})
        assert not result.is_error, result.content
        if result.structured_content["done"]:
            return result.structured_content["score"]
        messages.append({"role": "user", "content": result.structured_content["feedback"]})
    raise AssertionError("the episode did not end")


def test_a_professional_bootcamp_plays_over_http_and_stdio_as_run_episode_scores_it(tmp_path):
    records = _records()

    registry = get_registry()

    def limits(record: dict) -> RolloutLimits:  # the generator's turn limits, as the server (and the evaluator) use
        generator = registry.get_class("generator", record["extra_info"]["bootcamp"]["generator"])
        recommended = getattr(generator, "limits", None) or {}
        return RolloutLimits(**{name: recommended[name] for name in ("max_assistant_turns", "max_user_turns")
                                if name in recommended})

    async def reference() -> list[float]:
        return [(await run_episode(record, ReferencePolicy(), limits=limits(record))).score for record in records]

    expected = anyio.run(reference)
    port = free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115
    server = subprocess.Popen([*SERVE, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            try:
                httpx2.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx2.HTTPError:
                time.sleep(0.2)

        async def over_http() -> float:
            with anyio.fail_after(300):
                async with (streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                            ClientSession(read, write) as session):
                    await session.initialize()
                    return await _play(session, records[0], 0)

        assert anyio.run(over_http) == expected[0]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        log.close()

    params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], "--transport", "stdio"])

    async def over_stdio() -> float:
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await _play(session, records[1], 1)

    assert anyio.run(over_stdio) == expected[1]
