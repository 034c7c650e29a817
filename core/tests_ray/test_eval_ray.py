"""``bootcamp eval --ray``: episodes in Ray actors on a real local cluster, against a real OpenAI-compatible server on
loopback; the scores of a local run, a worker killed mid-run, a driver killed mid-run, and no key in Ray's logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.scale.cluster import connected
from bootcamp_core.scale.evaluate import RayEpisodes
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text

SECRET = "sk-ray-secret-key-5f1c0e9a7b"

pytestmark = pytest.mark.usefixtures("only_example")


def make_dataset(registry, directory: Path, count: int) -> Path:
    config = config_for_bootcamp("example", registry, {"split_samples": {"test": count}, "seed": 11}, name="example")
    generate(config, directory, registry=registry)
    return directory / "example_test.jsonl"


def answers_wrong(text: str) -> bool:
    """A third of the prompts get a wrong answer, the same ones in every run."""
    return zlib.crc32(text.encode()) % 3 == 0


def solver(delay_s: float = 0.0, on_request=None):
    """Plays the calculator like a model (call it on the expression, answer its output), wrong for some prompts."""

    def script(request: dict) -> Reply:
        if on_request is not None:
            on_request()
        prompt = first_user_text(request)
        output = next((message.get("content") for message in reversed(request.get("messages") or [])
                       if message.get("role") == "tool"), None)
        if output is None:
            return Reply.calls(("calculator", {"expression": prompt.split("\n\n")[1]}), delay_s=delay_s)
        value = "0.5" if answers_wrong(prompt) else output
        return Reply.text(f'```json\n{{"result": {value}}}\n```', delay_s=delay_s)

    return script


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def scores_of(path: Path) -> dict[str, float]:
    lines = lines_of(path)
    scores = {line["id"]: line["score"] for line in lines}
    assert len(scores) == len(lines), "an episode was written twice"
    return scores


def eval_config(dataset: Path, out: Path, server: ScriptedChatServer, **kwargs) -> EvalConfig:
    return EvalConfig(dataset_path=dataset, output_dir=out, api_url=server.base_url, api_model="stub",
                      api_key=SECRET, **kwargs)


def test_an_evaluation_in_ray_actors_scores_as_the_local_run(tmp_path: Path, ray_cluster, example_registry):
    dataset = make_dataset(example_registry, tmp_path / "data", 24)
    with ScriptedChatServer(solver()) as server:
        local = run_evaluation(eval_config(dataset, tmp_path / "local", server, max_concurrent=4), progress=False)
        local_requests = len(server.requests)
        with connected(ray_cluster.address) as ray:
            runner = RayEpisodes(ray, actors=2, concurrency=3)
            on_ray = run_evaluation(eval_config(dataset, tmp_path / "ray", server), progress=False, runner=runner)
        headers = list(server.request_headers)
    records = list(load_dataset(dataset))
    expected = {episode_id(record, 0): 0.0 if answers_wrong(first_user_text({"messages": record["prompt"]})) else 1.0
                for record in records}
    assert 0 < sum(expected.values()) < len(expected)  # right and wrong answers both
    assert scores_of(tmp_path / "ray" / "results.jsonl") == scores_of(tmp_path / "local" / "results.jsonl") == expected
    for field in ("count", "successes", "infrastructure_errors", "mean_score", "pass_at_k"):
        assert on_ray["overall"][field] == local["overall"][field]
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["overall"] == on_ray["overall"]
    assert (tmp_path / "ray" / "report.html").stat().st_size > 0
    # the pool's shape, and the work done by two distinct actor processes, none of them this one
    assert on_ray["this_run"]["ray"] == {"actors": 2, "concurrency_per_actor": 3, "worker_processes": 2,
                                         "episodes_on_a_lost_worker": 0}
    assert on_ray["this_run"]["episodes"] == 24 and on_ray["this_run"]["reruns"] == 0
    assert len(runner.worker_pids) == 2 and os.getpid() not in runner.worker_pids
    # the actors made the requests the local run made, and the key reached them: they sent it on every one
    assert len(headers) == 2 * local_requests
    assert {header.get("authorization") for header in headers} == {f"Bearer {SECRET}"}


def test_a_worker_killed_mid_run_loses_and_duplicates_no_episode(tmp_path: Path, ray_cluster, example_registry):
    dataset = make_dataset(example_registry, tmp_path / "data", 20)
    killed: list[int] = []
    requests = iter(range(10_000))
    runner: RayEpisodes | None = None

    def kill_one_actor() -> None:
        # at the 10th request, episodes are in flight on both actors: one worker process dies with them
        if next(requests) != 10 or runner is None:
            return
        pid = runner.actor_pids[0]
        assert pid in {process.pid for process in ray_cluster.processes()}  # one of the cluster's own workers
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    with ScriptedChatServer(solver(delay_s=0.1, on_request=kill_one_actor)) as server, \
            connected(ray_cluster.address) as ray:
        runner = RayEpisodes(ray, actors=2, concurrency=3)
        # no re-run rounds: the episodes of the lost worker are run again on Ray, within the round
        summary = run_evaluation(eval_config(dataset, tmp_path / "out", server, rerun_failed=0),
                                 progress=False, runner=runner)
    assert len(killed) == 1
    records = list(load_dataset(dataset))
    scores = scores_of(tmp_path / "out" / "results.jsonl")
    assert set(scores) == {episode_id(record, 0) for record in records}  # 0 lost, 0 written twice
    assert summary["overall"]["count"] == 20 and summary["overall"]["infrastructure_errors"] == 0
    lost = summary["this_run"]["ray"]["episodes_on_a_lost_worker"]
    assert 1 <= lost <= 3  # the killed actor's episodes in flight
    assert summary["this_run"]["reruns"] == lost == runner.reruns
    assert summary["this_run"]["infrastructure_errors"] == 0


def test_the_command_resumes_after_its_driver_is_killed_and_never_logs_the_key(tmp_path: Path, ray_cluster,
                                                                               example_registry):
    dataset = make_dataset(example_registry, tmp_path / "data", 16)
    out = tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    with ScriptedChatServer(solver(delay_s=0.4)) as server:
        command = [sys.executable, "-m", "bootcamp_core.cli.main", "eval", "--dataset-path", str(dataset),
                   "--output-dir", str(out), "--api-url", server.base_url, "--api-model", "stub", "-q",
                   "--ray", ray_cluster.address, "--ray-actors", "2", "--ray-concurrency", "2"]
        driver = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120  # a hang watchdog: the machine may be busy
        results = out / "results.jsonl"
        while not (results.exists() and len(results.read_text(encoding="utf-8").splitlines()) >= 4):
            assert driver.poll() is None, "the first run ended before it was killed"
            assert time.monotonic() < deadline, "no results came"
            time.sleep(0.05)
        driver.kill()
        driver.wait(timeout=30)
        written = len(lines_of(results))
        assert 4 <= written < 16
        resumed = subprocess.run([*command, "--resume-from-result-path", str(results)], env=env, check=False,
                                 capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "ray: 2 actors x 2 episodes at once, results from 2 worker processes" in resumed.stderr
    records = list(load_dataset(dataset))
    expected = {episode_id(record, 0): 0.0 if answers_wrong(first_user_text({"messages": record["prompt"]})) else 1.0
                for record in records}
    assert scores_of(results) == expected
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["count"] == 16
    assert summary["this_run"]["skipped_as_finished"] >= written - 1  # a cut last line is run again
    # the key reached the actors as a constructor argument: nothing Ray wrote holds it
    logs = ray_cluster.session_logs()
    assert any(path.name.startswith("worker-") for path in logs)
    holding = [str(path) for path in logs if SECRET.encode() in path.read_bytes()]
    assert holding == []
    assert SECRET not in resumed.stderr and SECRET not in (out / "summary.json").read_text()


def test_ray_flags_need_ray(tmp_path: Path, only_example):
    result = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "eval", "--dataset-path", "x.jsonl",
                             "--ray-actors", "2"], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "--ray-actors needs --ray" in result.stderr


def test_a_pool_of_no_actors_is_refused():
    from bootcamp_core.plugin.errors import ConfigError

    with pytest.raises(ConfigError, match="--ray-actors must be at least 1"):
        RayEpisodes(None, actors=0)
    with pytest.raises(ConfigError, match="--ray-concurrency must be at least 1"):
        RayEpisodes(None, concurrency=0)



def test_an_evaluation_through_ray_client_scores_as_the_local_run(tmp_path: Path, ray_cluster, example_registry):
    """``--ray ray://HOST:PORT``: the driver is a Ray Client of the cluster's head, and the results are the same."""
    dataset = make_dataset(example_registry, tmp_path / "data", 6)
    with ScriptedChatServer(solver()) as server:
        local = run_evaluation(eval_config(dataset, tmp_path / "local", server, max_concurrent=2), progress=False)
        with connected(ray_cluster.client_address) as ray:
            runner = RayEpisodes(ray, actors=2, concurrency=2)
            on_ray = run_evaluation(eval_config(dataset, tmp_path / "ray", server), progress=False, runner=runner)
    assert scores_of(tmp_path / "ray" / "results.jsonl") == scores_of(tmp_path / "local" / "results.jsonl")
    assert on_ray["overall"]["mean_score"] == local["overall"]["mean_score"]
    assert on_ray["this_run"]["episodes"] == 6 and on_ray["this_run"]["ray"]["actors"] == 2
