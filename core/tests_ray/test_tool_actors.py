"""Tool workers as Ray actors on a real local cluster: placement, affinity, a killed actor, release, and
``bootcamp serve --ray`` in front of them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from bootcamp_core import InfrastructureError, RolloutLimits
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.scale.tools import ToolActors
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy

CALCULATOR = "example/calculator"


@pytest.fixture(scope="module")
def ray_driver(ray_cluster, only_example_module) -> Iterator[object]:
    """This process as a driver of the test cluster, for the module."""
    import ray

    ray.init(address=ray_cluster.address, logging_level="WARNING", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def only_example_module() -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in ("BOOTCAMP_LOAD_PLUGINS", "BOOTCAMP_STRICT_PLUGINS")}
    os.environ.update(BOOTCAMP_LOAD_PLUGINS="example", BOOTCAMP_STRICT_PLUGINS="1")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def shared_pool(ray_driver) -> Iterator[ToolActors]:
    """Two tool actors serving the example bootcamp, for the tests that leave them as they found them; they reserve
    no CPU, so the pools of the other tests start beside them on the cluster's two."""
    with ToolActors.start(bootcamps=["example"], actors=2, name="shared-tools", num_cpus=0) as pool:
        yield pool


def calculator_call(expression: str, number: int) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [{
        "id": f"call-{number}", "type": "function",
        "function": {"name": "calculator", "arguments": json.dumps({"expression": expression})}}]}


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process; one that exits (or is reaped) while it is looked at is not."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: list[int], within_s: float = 60.0) -> list[int]:
    """The processes of ``pids`` still running after waiting up to ``within_s`` (a hang watchdog, not a timing
    assertion)."""
    deadline = time.monotonic() + within_s
    while True:
        alive = [pid for pid in pids if running(pid)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_episodes_spread_over_two_actor_processes_and_stay_on_theirs(shared_pool: ToolActors):
    pool = shared_pool
    pids = pool.pids()
    assert len(set(pids)) == 2 and os.getpid() not in pids
    calculator = pool.tool(CALCULATOR)
    assert calculator.name == "calculator"

    async def episodes() -> list[list[dict]]:
        instances = await asyncio.gather(*(calculator.create(identity={"n": number}) for number in range(8)))
        placed = pool.status()
        # least-loaded placement: eight episodes, four on each actor
        assert sorted(actor["load"] for actor in placed["actors"]) == [4, 4]
        assert placed["instances"] == 8
        metrics = []
        for instance in instances:
            answers = [await calculator.execute(instance, {"expression": f"{turn} + 1"}) for turn in range(3)]
            assert [text for text, _, _ in answers] == ["1", "2", "3"]
            metrics.append([found for _, _, found in answers])
            await calculator.release(instance)
        return metrics

    metrics = asyncio.run(episodes())
    # each instance's state lives in one actor: its call count goes on across calls
    assert all([entry["calls"] for entry in found] == [1, 2, 3] for found in metrics)
    after = pool.status()
    assert after["instances"] == 0 and [actor["load"] for actor in after["actors"]] == [0, 0]


def test_a_tool_error_reaches_the_model_and_an_unknown_instance_is_an_infrastructure_error(shared_pool: ToolActors):
    calculator = shared_pool.tool(CALCULATOR)

    async def calls() -> None:
        instance = await calculator.create(identity={})
        text, reward, _ = await calculator.execute(instance, {"expression": "1 +"})
        assert text.startswith("Error:") and reward < 0
        with pytest.raises(InfrastructureError, match="unknown instance"):
            await calculator.execute("never-created", {"expression": "1"})
        await calculator.release(instance)
        await calculator.release(instance)  # twice: a no-op

    asyncio.run(calls())


def test_a_killed_actor_fails_its_episode_as_infrastructure_and_the_next_episode_is_served(
        ray_driver, example_registry: Registry):
    records = generate_records("example", example_registry, overrides={"split_samples": "test:2", "seed": 5})
    with ToolActors.start({CALCULATOR: {}}, actors=2, name="killed-actor-test", num_cpus=0) as pool:
        config = {CALCULATOR: {"type": "ray", "name": "killed-actor-test"}}
        killed: list[int] = []

        async def turn(messages, tools, record, rng):
            assistant_turns = sum(message["role"] == "assistant" for message in messages)
            if assistant_turns == 1 and not killed:
                # the episode's instance is on the actor that holds one: kill its process under the tool API
                holding = [actor for actor in pool.status()["actors"] if actor["load"] == 1]
                assert len(holding) == 1
                killed.append(holding[0]["pid"])
                os.kill(holding[0]["pid"], signal.SIGKILL)
                assert not wait_gone(killed)
            if assistant_turns < 2:
                return calculator_call(f"{assistant_turns} + 2", assistant_turns)
            return {"role": "assistant", "content": "ANSWER: 0"}

        first, second = play_episodes(records, example_registry, policy=scripted_policy(turn),
                                      limits=RolloutLimits(max_assistant_turns=4), component_config=config)
        assert killed
        assert first.success is False and first.error_type == "infrastructure"
        assert f"pid {killed[0]}" in first.error and "died" in first.error
        # the next episode runs on a live actor (the other one, or the one that replaced the dead one)
        assert second.success is True, second.error
        assert [call.output for call in second.tool_calls] == ["2", "3"]
        status = pool.status()
        assert status["deaths"] == 1 and status["replacements"] == 1 and status["live_workers"] == 2
        assert killed[0] not in [actor["pid"] for actor in status["actors"]]
        assert status["instances"] == 0  # both episodes released what they held, the failed one included


def test_the_ray_backend_scores_as_local_tools_do(shared_pool: ToolActors, example_registry: Registry):
    records = generate_records("example", example_registry, overrides={"split_samples": "test:6", "seed": 11})
    local = play_episodes(records, example_registry)
    # the entry names the pool: the backend joins it (a pool of that name not yet there, it starts)
    on_ray = play_episodes(records, example_registry,
                           component_config={CALCULATOR: {"type": "ray", "name": "shared-tools"}})
    assert [result.success for result in on_ray] == [True] * 6
    assert [result.score for result in on_ray] == [result.score for result in local]
    assert [[call.output for call in result.tool_calls] for result in on_ray] == [
        [call.output for call in result.tool_calls] for result in local]
    status = ToolActors.connect("shared-tools").status()
    assert status["instances"] == 0 and len({actor["pid"] for actor in status["actors"]}) == 2


def test_an_evaluation_runs_its_tools_on_the_pool_a_tool_config_names(shared_pool: ToolActors, example_registry,
                                                                     tmp_path):
    from bootcamp_core.data.io import write_records
    from bootcamp_core.evaluate.config import EvalConfig
    from bootcamp_core.evaluate.run import run_evaluation

    records = generate_records("example", example_registry, overrides={"split_samples": "test:5", "seed": 2})
    write_records(tmp_path / "data.jsonl", records)
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools:\n  - class_name: example/calculator\n    config: {type: ray, name: shared-tools}\n")
    summaries = {}
    for name, tool_config in (("local", None), ("ray", tools)):
        summaries[name] = run_evaluation(EvalConfig(dataset_path=tmp_path / "data.jsonl", output_dir=tmp_path / name,
                                                    tool_config=tool_config), registry=example_registry,
                                         progress=False)
    assert summaries["ray"]["overall"]["count"] == 5
    assert summaries["ray"]["overall"]["mean_score"] == summaries["local"]["overall"]["mean_score"]
    lines = [json.loads(line) for line in (tmp_path / "ray" / "results.jsonl").read_text().splitlines()]
    assert [line["success"] for line in lines] == [True] * 5
    assert shared_pool.status()["instances"] == 0


def test_close_releases_what_is_held_and_ends_the_actors(ray_driver):
    pool = ToolActors.start({CALCULATOR: {}}, actors=2)
    pids = pool.pids()
    calculator = pool.tool(CALCULATOR)

    async def open_three() -> None:
        for number in range(3):
            await calculator.create(identity={"n": number})

    asyncio.run(open_three())
    assert pool.close() == 3
    assert not wait_gone(pids)


CALLER = """
import sys
from bootcamp_core.scale.tools import ToolActors
import ray
ray.init(address=sys.argv[1], logging_level="WARNING", log_to_driver=False)
pool = ToolActors.start({"example/calculator": {}}, actors=2)
print(" ".join(map(str, pool.pids())), flush=True)
import os
os._exit(0)  # no clean-up at all: Ray itself must end what this process owned
"""


def test_the_actors_go_when_the_process_that_started_them_exits(ray_cluster, only_example_module):
    started = subprocess.run([sys.executable, "-c", CALLER, ray_cluster.address], check=False, capture_output=True,
                             text=True, timeout=180)
    assert started.returncode == 0, started.stderr
    pids = [int(pid) for pid in started.stdout.split()]
    assert len(set(pids)) == 2
    assert not wait_gone(pids)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_bootcamp_serve_ray_puts_the_actors_behind_the_tool_server_api(ray_cluster, only_example_module):
    from bootcamp_core.serve.client import ToolServerClient

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--ray", ray_cluster.address, "--ray-actors", "2",
         "--bootcamps", "example", "--port", str(port), "--token", "s3cret-token-for-the-test"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = ToolServerClient(f"http://127.0.0.1:{port}", token="s3cret-token-for-the-test")
    try:
        async def use() -> tuple[dict, list]:
            deadline = time.monotonic() + 120  # a hang watchdog: the machine may be busy
            while True:
                try:
                    health = await client.health()
                    break
                except InfrastructureError:
                    assert server.poll() is None, server.stdout.read()
                    assert time.monotonic() < deadline, "bootcamp serve --ray did not come up"
                    await asyncio.sleep(0.3)
            assert CALCULATOR in await client.schemas()
            calculator = client.tool(CALCULATOR)
            instances = [await calculator.create(identity={}) for _ in range(4)]
            answers = [await calculator.execute(instance, {"expression": "6 * 7"}) for instance in instances]
            middle = await client.health()
            for instance in instances:
                await calculator.release(instance)
            return {**health, "middle": middle}, answers

        health, answers = asyncio.run(use())
        assert health["role"] == "ray" and health["ready"] is True
        assert len({actor["pid"] for actor in health["actors"]}) == 2
        assert sorted(actor["load"] for actor in health["middle"]["actors"]) == [2, 2]
        assert [text for text, _, _ in answers] == ["42"] * 4
        pids = [actor["pid"] for actor in health["actors"]]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            output, _ = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            output, _ = server.communicate()
    assert server.returncode == 0, output
    assert "s3cret-token-for-the-test" not in output
    assert not wait_gone(pids)


def test_bad_pool_settings_are_one_line_errors(only_example_module):
    from bootcamp_core import ConfigError

    for settings, message in (({"actors": 0}, "actors must be at least 1, got 0"),
                              ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
                              ({"num_cpus": -1}, "num_cpus must not be negative, got -1")):
        with pytest.raises(ConfigError, match=message):
            ToolActors.start({CALCULATOR: {}}, **settings)
    for flags, message in ((["--ray-actors", "2"], "--ray-actors needs --ray"),
                           (["--ray", "--ray-actors", "0"], "--ray-actors must be at least 1, got 0"),
                           (["--ray", "--mode", "worker"], "--ray runs the whole server")):
        result = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "serve", *flags], check=False,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0 and message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
