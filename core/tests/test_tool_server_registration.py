"""Worker registration cannot be hijacked: a live worker's id, listed by the unauthenticated /health, cannot be
re-bound to another address (which would move its instances and the master's token there) without the secret the
master issued to that worker; its heartbeats and unregistration need the secret too."""

from __future__ import annotations

import asyncio
import os
import signal

import httpx
import pytest

from bootcamp_core.serve.client import ToolServerClient
from bootcamp_core.testing import free_port, serve_tools

pytestmark = pytest.mark.slow
FAST = ["--heartbeat-interval", "0.2", "--worker-timeout", "1.5"]
ENV = {"BOOTCAMP_LOAD_PLUGINS": "example"}


def test_a_live_worker_id_cannot_be_taken_over(tmp_path):
    port = free_port()
    master_url = f"http://127.0.0.1:{port}"
    with serve_tools("--mode", "master", *FAST, log_dir=tmp_path, port=port, ready=False, env=ENV) as master:
        master.wait(lambda status: status["role"] == "master", "master up")
        with serve_tools("--mode", "worker", "--master-url", master_url, "--bootcamps", "example", *FAST,
                         log_dir=tmp_path, ready=False, env=ENV):
            status = master.wait(lambda s: s["live_workers"] == 1, "worker registered", timeout_s=60)
            [worker] = status["workers"]

            async def create() -> str:
                client = ToolServerClient(master_url)
                tool = client.tool("example/calculator")
                instance = await tool.create(identity={})
                await client.aclose()
                return instance

            instance = asyncio.run(create())
            fake = f"http://127.0.0.1:{free_port()}"
            takeover = httpx.post(master_url + "/workers/register", json={
                "worker_id": worker["id"], "url": fake, "tools": {"example/calculator": {}},
                "instances": {instance: ["example/calculator"]},
            })
            assert takeover.status_code == 403 and takeover.json()["error"]["type"] == "worker_id_taken"
            guessed = httpx.post(master_url + "/workers/register", json={
                "worker_id": worker["id"], "url": fake, "tools": {"example/calculator": {}}, "secret": "guess"})
            assert guessed.status_code == 403
            for path in ("/workers/heartbeat", "/workers/unregister"):
                answer = httpx.post(master_url + path, json={"worker_id": worker["id"], "secret": "guess"})
                assert answer.status_code == 403 and answer.json()["error"]["type"] == "wrong_secret", path
            after = master.health()
            [same] = after["workers"]
            assert same["url"] == worker["url"] and same["alive"] and after["instances"] == 1

            async def still_served() -> None:  # the instance still runs on the real worker
                client = ToolServerClient(master_url)
                text, _, _ = await client.tool("example/calculator").execute(instance, {"expression": "2 * 4"})
                assert text == "8"
                await client.aclose()

            asyncio.run(still_served())
            # the real worker keeps heartbeating with its secret: still alive past the worker timeout
            master.wait(lambda s: s["uptime_s"] > 2.0, "past the worker timeout", timeout_s=30)
            assert master.health()["workers"][0]["alive"]


def test_deeply_nested_json_is_a_json_400(tmp_path):
    with serve_tools("--mode", "master", *FAST, log_dir=tmp_path, ready=False, env=ENV) as master:
        master.wait(lambda status: status["role"] == "master", "master up")
        deep = b'{"instance_id": null, "kwargs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        for path in ("/tools/example/calculator/create", "/workers/register"):
            answer = httpx.post(master.url + path, content=deep)
            assert answer.status_code == 400, (path, answer.text[:200])
            assert answer.json()["error"]["type"] == "bad_request" and "nested" in answer.json()["error"]["message"]


def test_unified_mode_restarts_a_killed_worker_and_counts_it(tmp_path):
    with serve_tools("--num-workers", "2", "--bootcamps", "example", *FAST, log_dir=tmp_path, env=ENV) as server:
        status = server.health()
        assert status["worker_restarts"] == 0
        victim = status["workers"][0]
        os.kill(victim["host"]["pid"], signal.SIGKILL)
        healed = server.wait(lambda s: s["live_workers"] == 2 and s["worker_restarts"] == 1
                             and any(w["id"] == victim["id"] and not w["alive"] for w in s["workers"]),
                             "the killed worker replaced", timeout_s=60)
        fresh = [w for w in healed["workers"] if w["alive"]]
        assert victim["id"] not in {w["id"] for w in fresh}  # the restarted worker registers under a new id

        async def call() -> None:
            client = ToolServerClient(server.url)
            tool = client.tool("example/calculator")
            instances = [await tool.create(identity={}) for _ in range(4)]
            assert [(await tool.execute(i, {"expression": "3 * 3"}))[0] for i in instances] == ["9"] * 4
            await client.aclose()

        asyncio.run(call())
        assert all(w["load"] > 0 for w in server.health()["workers"] if w["alive"])
