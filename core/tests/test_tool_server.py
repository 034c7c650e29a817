"""The tool server with real processes on loopback: `bootcamp serve` master, workers and unified mode, driven through
the real HTTP API, the remote-tool client and `bootcamp eval --tool-server`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from bootcamp_core.evaluate.run import EvalConfig, run_evaluation
from bootcamp_core.plugin.errors import InfrastructureError
from bootcamp_core.serve.client import RemoteToolError, ToolServerClient
from bootcamp_core.serve.dashboard import render_dashboard
from bootcamp_core.serve.master import Router, WorkerEntry
from bootcamp_core.testing import free_port, serve_tools, write_distribution
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, per_conversation

pytestmark = pytest.mark.slow
FAST = ["--heartbeat-interval", "0.2", "--worker-timeout", "1.5"]
ROOT_ENV = {"BOOTCAMP_LOAD_PLUGINS": "example,servertest"}

SERVERTEST_HOOKS = '''
import time
from bootcamp_core import Tool, hookimpl

class Explode(Tool):
    name = "explode"
    description = "raises"
    parameters = {"type": "object", "properties": {}}
    async def execute(self, instance_id, parameters, **kwargs):
        raise ValueError("the tool says no")

class Crunch(Tool):
    name = "crunch"
    description = "computes for a while without yielding, like a simulator"
    parameters = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    async def execute(self, instance_id, parameters, **kwargs):
        time.sleep(float(parameters.get("seconds", 1)))
        return "done", 0.0, {}

@hookimpl
def bootcamp_register_tools(register):
    register(Explode)
    register(Crunch)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A second installed bootcamp whose tools raise and block, beside bootcamp-example."""
    folder = tmp_path_factory.mktemp("site")
    write_distribution(folder, "bootcamp-servertest", "0.3", entry_points={"bootcamp": {"servertest": "st_hooks"}},
                       modules={"st_hooks.py": SERVERTEST_HOOKS})
    return folder


def serve(site: Path, tmp_path: Path, *args: str, port: int | None = None, ready: bool = True,
          env: dict | None = None):
    """`bootcamp serve` with the servertest bootcamp on the path beside bootcamp-example."""
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return serve_tools(*args, log_dir=tmp_path, port=port, ready=ready,
                       env={**ROOT_ENV, "PYTHONPATH": path, **(env or {})})


def worker_pids(server) -> list[int]:
    return [worker["host"]["pid"] for worker in server.health()["workers"] if worker["alive"]]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError):  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return False


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "generate", "--bootcamp", "example", "--split-samples",
                    "test:200", "--output-dir", str(out), "-q"], check=True,
                   env={**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example"})
    [path] = out.glob("*_test.jsonl")
    return path


# ---------------------------------------------------------------------------------------------------------- tests
def test_unified_serves_episodes_and_survives_a_killed_worker(site, tmp_path, dataset):
    """200 concurrent episodes over 3 workers; kill -9 of one mid-run: its episodes fail as infrastructure errors,
    fast; the master keeps serving, new instances avoid the dead worker, and the failed episodes succeed when re-run."""
    with serve(site, tmp_path, "--num-workers", "3", "--bootcamps", "example", *FAST) as server:
        expressions = {}
        for line in dataset.read_text().splitlines():
            record = json.loads(line)
            identity = record["reward_model"]["ground_truth"]
            expressions[record["prompt"][0]["content"]] = identity

        pause = [15.0]

        def script(request: dict, turn: int) -> Reply:
            identity = expressions[next(m["content"] for m in request["messages"] if m["role"] == "user")]
            if turn < 2:  # two calls, the second after a pause, so that all episodes hold their instances at once
                return Reply.calls(("calculator", {"expression": identity["expression"]}),
                                   delay_s=0.0 if turn == 0 else pause[0])
            return Reply.text(f'```json\n{{"result": {identity["expected_result"]!r}}}\n```')

        with ScriptedChatServer(per_conversation(script)) as llm:
            # no in-run re-runs: the killed worker's episodes are left for the resume below
            config = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "eval", api_url=llm.base_url,
                                api_model="stub", tool_server=server.url, max_concurrent=200, rerun_failed=0)
            failure: list[BaseException] = []

            def evaluate() -> None:
                try:
                    run_evaluation(config, progress=False)
                except BaseException as error:
                    failure.append(error)

            thread = threading.Thread(target=evaluate)
            thread.start()

            def all_held(status: dict) -> bool:
                if failure:
                    raise failure[0]
                return status["instances"] == 200

            status = server.wait(all_held, "200 instances held", timeout_s=120)
            victim = max(status["workers"], key=lambda worker: worker["load"])
            held_by_victim = victim["load"]
            assert all(worker["load"] > 0 for worker in status["workers"]), "least-loaded routing spreads instances"
            os.kill(victim["host"]["pid"], signal.SIGKILL)
            thread.join(timeout=120)
            assert not thread.is_alive(), "the evaluation hung on a dead worker"
            assert not failure

            results = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
            failed = [result for result in results if not result["success"]]
            assert len(results) == 200
            assert len(failed) == held_by_victim
            assert all(result["error_type"] == "infrastructure" for result in failed)
            assert all("dead" in result["error"] and victim["id"] in result["error"] for result in failed), \
                [result["error"] for result in failed][:3]
            assert all(result["score"] == 1.0 for result in results if result["success"])

            status = server.health()  # the master still serves, and knows the worker is gone
            assert {worker["id"]: worker["alive"] for worker in status["workers"]}[victim["id"]] is False
            assert status["instances"] == 0  # every episode released, lost ones too
            # unified mode replaced the killed worker, under a new id, and counts the restart
            server.wait(lambda s: s["live_workers"] == 3 and s["worker_restarts"] == 1, "the killed worker replaced",
                        timeout_s=60)

            pause[0] = 0.0
            rerun = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "eval", api_url=llm.base_url,
                               api_model="stub", tool_server=server.url, max_concurrent=200,
                               resume_from=tmp_path / "eval" / "results.jsonl")
            run_evaluation(rerun, progress=False)
            results = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
            assert len(results) == 200 and all(result["success"] and result["score"] == 1.0 for result in results)
            after = {worker["id"]: worker for worker in server.health()["workers"]}
            assert after[victim["id"]]["alive"] is False and after[victim["id"]]["load"] == 0  # nothing new went there
        pids = worker_pids(server)
        assert len(pids) == 3
    # SIGTERM to the unified server stopped every worker it started
    assert not any(pid_alive(pid) for pid in pids)


def test_remote_tools_behave_like_local_ones(site, tmp_path):
    with serve(site, tmp_path, "--num-workers", "2", "--bootcamps", "example,servertest", "--idle-timeout", "0.6",
               *FAST) as server:

        async def scenario() -> None:
            client = ToolServerClient(server.url)
            schemas = await client.schemas()
            assert set(schemas) == {"example/calculator", "servertest/explode", "servertest/crunch"}
            calculator = client.tool("example/calculator")
            assert type(calculator).name == "calculator" and type(calculator).openai_schema()["function"]["name"] \
                == "calculator"
            instance = await calculator.create(identity={"expression": "1 + 2"})
            assert await calculator.execute(instance, {"expression": "6 * 7"}) == ("42", 0.0, {"calls": 1,
                                                                                               "wasted": 0})
            assert await calculator.create(instance, identity={}) == instance  # a repeated create is a no-op
            text, reward, metrics = await calculator.execute(instance, {"expression": "1 +"})
            assert text.startswith("Error:") and metrics == {"calls": 2, "wasted": 1}  # state kept across calls
            # the tool raising on the server raises here, with its class name, for the engine to show the model
            explode = client.tool("servertest/explode")
            other = await explode.create(identity={})
            with pytest.raises(RemoteToolError) as raised:
                await explode.execute(other, {})
            assert type(raised.value).__name__ == "ValueError" and str(raised.value) == "the tool says no"
            await explode.release(other)
            await explode.release(other)  # twice is fine
            with pytest.raises(InfrastructureError, match="unknown instance"):
                await explode.execute(other, {})
            # a computing tool blocks only its tool thread: the worker keeps answering and heartbeating meanwhile
            crunch = client.tool("servertest/crunch")
            busy = await crunch.create(identity={})
            call = asyncio.create_task(crunch.execute(busy, {"seconds": 2.5}))
            await asyncio.sleep(0.3)
            for _ in range(10):
                status = await client.health()
                assert all(worker["alive"] for worker in status["workers"])
                await asyncio.sleep(0.2)
            assert (await call)[0] == "done"
            # the caller's own limit reaches the server: past it the call is a timeout the model sees
            limited = client.tool("servertest/crunch", call_timeout_s=0.5)
            with pytest.raises(RemoteToolError, match="longer than 0.5 s"):
                await limited.execute(busy, {"seconds": 1.5})
            # idle instances are reaped by their worker, and their tools released
            await asyncio.sleep(2.0)
            with pytest.raises(InfrastructureError, match="unknown instance|no instance"):
                await calculator.execute(instance, {"expression": "1"})
            assert (await client.health())["instances"] == 0
            await client.aclose()

        run(scenario())
        # request size limit, and bad input answered clearly
        big = httpx.post(server.url + "/tools/example/calculator/create", content=b"x" * (17 * 1024 * 1024))
        assert big.status_code == 413 and big.json()["error"]["type"] == "too_large"
        bad = httpx.post(server.url + "/tools/example/calculator/execute", content=b"{not json")
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
        unknown = httpx.post(server.url + "/tools/nope/tool/create", json={})
        assert unknown.status_code == 503 and "nope" in unknown.json()["error"]["message"]


def test_master_restart_workers_register_again_and_keep_their_instances(site, tmp_path):
    port = free_port()
    master_url = f"http://127.0.0.1:{port}"
    with serve(site, tmp_path, "--mode", "master", *FAST, port=port, ready=False) as master:
        master.wait(lambda status: status["role"] == "master", "master up")
        with serve(site, tmp_path, "--mode", "worker", "--master-url", master_url, "--bootcamps", "example", *FAST,
                   ready=False) as worker:
            master.wait(lambda status: status["live_workers"] == 1, "worker registered")

            async def create() -> str:
                client = ToolServerClient(master_url)
                tool = client.tool("example/calculator")
                instance = await tool.create(identity={})
                assert (await tool.execute(instance, {"expression": "2 * 3"}))[0] == "6"
                await client.aclose()
                return instance

            instance = run(create())
            master.process.send_signal(signal.SIGTERM)
            master.process.wait(timeout=30)
        # a new master on the same port: the worker notices and registers again by itself, with its instance
            with serve(site, tmp_path, "--mode", "master", *FAST, port=port, ready=False) as again:
                status = again.wait(lambda s: s["live_workers"] == 1, "worker registered again", timeout_s=30)
                assert status["instances"] == 1

                async def resume() -> None:
                    client = ToolServerClient(master_url)
                    tool = client.tool("example/calculator")
                    text, _, metrics = await tool.execute(instance, {"expression": "7"})
                    assert text == "7" and metrics["calls"] == 2  # the same instance: its state survived
                    await tool.release(instance)
                    await client.aclose()

                run(resume())
                status = again.health()
                assert status["instances"] == 0 and status["workers"][0]["load"] == 0
            assert worker.process.poll() is None  # the worker rode out both restarts


def test_token_is_required_when_set_and_never_for_health_or_dashboard(site, tmp_path):
    with serve(site, tmp_path, "--num-workers", "1", "--bootcamps", "example", "--token", "s3cret", *FAST) as server:
        assert httpx.get(server.url + "/health").status_code == 200
        assert httpx.get(server.url + "/").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            answer = httpx.post(server.url + "/tools/example/calculator/create", json={}, headers=headers)
            assert answer.status_code == 401, headers
            assert httpx.post(server.url + "/workers/register", json={"worker_id": "x", "url": "http://h:1",
                                                                      "tools": {}}, headers=headers).status_code == 401

        worker_url = server.health()["workers"][0]["url"]
        for url, method, path in ((worker_url, "POST", "/tools/example/calculator/create"), (worker_url, "GET", "/tools"),
                                  (server.url, "GET", "/tools"), (server.url, "POST", "/workers/heartbeat"),
                                  (server.url, "POST", "/workers/unregister")):
            answer = httpx.request(method, url + path, json={} if method == "POST" else None,
                                   headers={"Authorization": "Bearer wrong"})
            assert answer.status_code == 401, (url, path)
        assert httpx.get(worker_url + "/health").status_code == 200

        async def calls() -> None:
            with pytest.raises(InfrastructureError, match="token"):
                await ToolServerClient(server.url, token="wrong").tool("example/calculator").create(identity={})
            client = ToolServerClient(server.url, token="s3cret")
            tool = client.tool("example/calculator")
            assert (await tool.execute(await tool.create(identity={}), {"expression": "1+1"}))[0] == "2"
            await client.aclose()

        run(calls())
        assert "s3cret" not in server.log.read_text()
    # beyond loopback without a token: refused before listening
    refused = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--host", "0.0.0.0", "--port",
                              str(free_port())], capture_output=True, text=True, timeout=60,
                             env={**os.environ, **ROOT_ENV, "BOOTCAMP_TOKEN": ""})
    assert refused.returncode == 1 and "refusing to listen on 0.0.0.0 without a token" in refused.stderr


def test_dashboard_escapes_what_workers_report(site, tmp_path):
    hostile = '<script>alert("x")</script>'
    with serve(site, tmp_path, "--mode", "master", *FAST, ready=False) as master:
        master.wait(lambda status: status["role"] == "master", "master up")
        registered = httpx.post(master.url + "/workers/register", json={
            "worker_id": hostile, "url": f"http://127.0.0.1:1/{hostile}",
            "tools": {f"evil/{hostile}": {"type": "function", "function": {"name": "x"}}},
            "host": {"hostname": hostile, "pid": 1, "platform": hostile},
        })
        assert registered.status_code == 200
        page = httpx.get(master.url + "/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<script" not in page.text and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page.text
        assert 'http-equiv="refresh"' in page.text and "online" in page.text
        # silent past the worker timeout: offline on the page and in /health, out of routing
        status = master.wait(lambda s: s["workers"] and not s["workers"][0]["alive"], "worker declared dead")
        assert status["ready"] is False
        assert "offline" in httpx.get(master.url + "/").text
        answer = httpx.post(master.url + "/tools/evil/x/create", json={})
        assert answer.status_code == 503


def test_underscore_aliases_tool_config_and_the_written_remote_config(site, tmp_path, dataset):
    tool_config = tmp_path / "tools.yaml"
    tool_config.write_text("tools:\n  - class_name: example/calculator\n    config: {type: native}\n")
    remote_config = tmp_path / "remote.yaml"
    with serve(site, tmp_path, "--num_workers", "2", "--tools_yaml_path", str(tool_config), "--write_tool_config",
               str(remote_config), "--keep-running", *FAST) as server:
        status = server.health()
        assert status["live_workers"] == 2
        assert all(worker["tools"] == ["example/calculator"] for worker in status["workers"])
        deadline = time.monotonic() + 30
        while not remote_config.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        written = remote_config.read_text()
        assert "type: remote" in written and server.url in written and "token" not in written.lower()
        local = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "local", limit=20),
                               progress=False)
        remote = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "remote", limit=20,
                                           tool_config=remote_config), progress=False)
        assert remote["overall"]["mean_score"] == local["overall"]["mean_score"] == 1.0
        assert remote["overall"]["infrastructure_errors"] == 0

        def outputs(folder: str) -> dict:
            lines = (tmp_path / folder / "results.jsonl").read_text().splitlines()
            return {json.loads(line)["id"]: [call["output"] for call in json.loads(line)["tool_calls"]]
                    for line in lines}

        assert outputs("remote") == outputs("local")  # the same tool behaviour, in-process or served

        async def burst() -> None:  # new episodes spread over the workers at once, not as the answers come back
            client = ToolServerClient(server.url)
            calculator = client.tool("example/calculator")
            instances = await asyncio.gather(*(calculator.create(identity={}) for _ in range(60)))
            loads = [worker["load"] for worker in (await client.health())["workers"]]
            assert loads == [30, 30], loads
            await asyncio.gather(*(calculator.release(instance) for instance in instances))
            assert [worker["load"] for worker in (await client.health())["workers"]] == [0, 0]
            await client.aclose()

        run(burst())


def test_router_picks_the_least_loaded_live_worker_per_bootcamp():
    router = Router()

    def worker(name: str, *namespaces: str) -> WorkerEntry:
        entry = WorkerEntry(id=name, url=f"http://{name}", tools={f"{ns}/t": {} for ns in namespaces},
                            namespaces=frozenset(namespaces), host={}, registered_at=0.0, last_heartbeat=0.0)
        router.add(entry, {})
        return entry

    a, b, c = worker("a", "x"), worker("b", "x", "y"), worker("c", "y")
    placed = []
    for number in range(6):
        chosen = router.pick("x")
        router.assign(f"i{number}", chosen, "x/t")
        placed.append(chosen.id)
    assert placed == ["a", "b", "a", "b", "a", "b"]
    assert router.pick("y") is c  # b already holds three
    router.assign("i1", b, "x/other")  # a second tool of an instance adds no load
    assert b.load == 3
    router.release("i0", "x/t")  # a's last tool of i0: a now holds two
    assert a.load == 2 and router.pick("x") is a
    router.kill(b, "test")
    assert router.pick("x") is a and router.pick("y") is c
    router.kill(a, "test")
    assert router.pick("x") is None
    assert router.pick("nothing") is None


def test_dashboard_render_without_workers():
    page = render_dashboard({"ready": False, "expected_workers": 2, "instances": 0, "workers": [], "host": {}})
    assert "no worker has registered yet" in page and "0 of 0 worker(s) online" in page


def test_every_route_is_documented():
    from bootcamp_core.serve.master import Master, MasterSettings
    from bootcamp_core.serve.worker import ToolHost, Worker, WorkerSettings

    docs = (Path(__file__).resolve().parents[2] / "docs" / "tool-server.md").read_text(encoding="utf-8")
    host = ToolHost({}, {}, WorkerSettings())
    try:
        apps = [Master(MasterSettings()).status_app(), Worker(host, host.settings).status_app()]
    finally:
        host.loop.close()
    for action in ("create", "execute", "calc_reward", "release"):  # answered before routing, by both
        assert f"`POST /tools/{{namespace}}/{{name}}/{action}`" in docs, action
    for app in apps:
        for route in app.routes:
            for method in sorted(route.methods - {"HEAD"}):
                assert f"`{method} {route.path}`" in docs, (method, route.path)
