"""The tool server heals under a running evaluation: a worker killed with SIGKILL, a worker frozen (SIGSTOP) for
longer than the worker timeout and then resumed, and the master killed with SIGKILL and started again. Each time a
real `bootcamp eval` runs through it (bootcamp-example, a scripted OpenAI-compatible server): the episodes that lost
their tool state end in an infrastructure error, eval runs them again, and every episode ends scored right. `/health`
counts what happened (restarts, deaths, rejoins, registrations), so a server that never heals cannot hide behind
eval's re-runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

import httpx
import pytest

from bootcamp_core.evaluate.run import EvalConfig, run_evaluation
from bootcamp_core.testing import free_port, serve_tools
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, per_conversation

pytestmark = pytest.mark.slow
FAST = ["--heartbeat-interval", "0.2", "--worker-timeout", "1.5"]
ENV = {"BOOTCAMP_LOAD_PLUGINS": "example"}
EPISODES = 40
PAUSE_S = 3.0  # between an episode's two tool calls: every episode holds its instance while the fault happens


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("data")
    subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "generate", "--bootcamp", "example",
                    "--split-samples", f"test:{EPISODES}", "--output-dir", str(out), "-q"], check=True,
                   env={**os.environ, **ENV})
    [path] = out.glob("*_test.jsonl")
    return path


class Evaluation:
    """`bootcamp eval`'s evaluation in a thread, through the tool server at ``url``, with the calculator's answers
    scripted: two tool calls PAUSE_S apart, then the right result."""

    def __init__(self, dataset: Path, url: str, out: Path) -> None:
        identities = {}
        for line in dataset.read_text().splitlines():
            record = json.loads(line)
            identities[record["prompt"][0]["content"]] = record["reward_model"]["ground_truth"]

        def script(request: dict, turn: int) -> Reply:
            identity = identities[next(m["content"] for m in request["messages"] if m["role"] == "user")]
            if turn < 2:
                return Reply.calls(("calculator", {"expression": identity["expression"]}),
                                   delay_s=0.0 if turn == 0 else PAUSE_S)
            return Reply.text(f'```json\n{{"result": {identity["expected_result"]!r}}}\n```')

        self.llm = ScriptedChatServer(per_conversation(script))
        self.out = out
        self.config_args = {"dataset_path": dataset, "output_dir": out, "api_model": "stub", "tool_server": url,
                            "max_concurrent": EPISODES, "rerun_failed": 2}
        self.summary: dict = {}
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run)

    def __enter__(self) -> Self:
        self.llm.__enter__()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=180)
        self.llm.__exit__(*exc)

    def _run(self) -> None:
        try:
            config = EvalConfig(api_url=self.llm.base_url, **self.config_args)
            self.summary = run_evaluation(config, progress=False)
        except BaseException as error:  # noqa: BLE001  # re-raised in the test's thread
            self.failure.append(error)

    def holding(self, predicate: Callable[[dict], bool]) -> Callable[[dict], bool]:
        def check(status: dict) -> bool:
            if self.failure:
                raise self.failure[0]
            return predicate(status)

        return check

    def finish(self) -> list[dict]:
        """Wait for the evaluation; every episode must have succeeded with score 1.0."""
        self.thread.join(timeout=180)
        assert not self.thread.is_alive(), "the evaluation hung"
        if self.failure:
            raise self.failure[0]
        results = [json.loads(line) for line in (self.out / "results.jsonl").read_text().splitlines()]
        assert len(results) == EPISODES
        wrong = [(result.get("error_type"), result.get("error")) for result in results
                 if not result["success"] or result["score"] != 1.0]
        assert not wrong, wrong[:3]
        return results


def all_held(status: dict) -> bool:
    return status["instances"] == EPISODES


def test_a_worker_killed_under_load_is_replaced_and_its_episodes_run_again(tmp_path, dataset):
    with serve_tools("--num-workers", "2", "--bootcamps", "example", *FAST, log_dir=tmp_path, env=ENV) as server:
        with Evaluation(dataset, server.url, tmp_path / "eval") as evaluation:
            status = server.wait(evaluation.holding(all_held), "every episode holding its instance", timeout_s=120)
            victim = max(status["workers"], key=lambda worker: worker["load"])
            assert victim["load"] > 0
            os.kill(victim["host"]["pid"], signal.SIGKILL)
            # its routes are released as soon as it is declared dead, not at the idle timeout
            dead = server.wait(lambda s: any(w["id"] == victim["id"] and not w["alive"] for w in s["workers"]),
                               "the killed worker declared dead", timeout_s=30)
            assert dead["instances"] <= EPISODES - victim["load"]
            evaluation.finish()
        assert evaluation.summary["this_run"]["reruns"] >= victim["load"]
        status = server.wait(lambda s: s["live_workers"] == 2, "the killed worker replaced", timeout_s=60)
        assert status["worker_restarts"] == 1 and status["worker_deaths"] >= 1 and status["dead_workers"] >= 1
        assert status["instances"] == 0
        fresh = [worker for worker in status["workers"] if worker["alive"]]
        assert victim["id"] not in {worker["id"] for worker in fresh}
        assert sum(worker["calls"] for worker in status["workers"]) >= 3 * EPISODES  # per-worker call counts
        page = httpx.get(server.url + "/", timeout=10).text  # the dashboard shows the same
        assert "1 worker restart(s)" in page and "<th>calls</th>" in page
        assert re.search(r"[1-9]\d* dead,", page) and ("connection refused" in page or "no heartbeat" in page)


def test_a_frozen_worker_is_declared_dead_and_rejoins_clean_when_resumed(tmp_path, dataset):
    with serve_tools("--num-workers", "2", "--bootcamps", "example", *FAST, log_dir=tmp_path, env=ENV) as server:
        with Evaluation(dataset, server.url, tmp_path / "eval") as evaluation:
            status = server.wait(evaluation.holding(all_held), "every episode holding its instance", timeout_s=120)
            victim = max(status["workers"], key=lambda worker: worker["load"])
            pid = victim["host"]["pid"]
            os.kill(pid, signal.SIGSTOP)
            try:
                dead = server.wait(lambda s: any(w["id"] == victim["id"] and not w["alive"] for w in s["workers"]),
                                   "the frozen worker declared dead", timeout_s=30)
                assert dead["instances"] <= EPISODES - victim["load"]  # its routes released at once
                time.sleep(1.0)  # frozen a while longer: its episodes fail and run again on the other worker
            finally:
                os.kill(pid, signal.SIGCONT)
            evaluation.finish()
        assert evaluation.summary["this_run"]["reruns"] >= 1
        # resumed, it was told it had been declared dead, dropped what it held and joined again under a new id
        status = server.wait(lambda s: s["live_workers"] == 2 and s["worker_rejoins"] >= 1,
                             "the resumed worker rejoined", timeout_s=60)
        back = [worker for worker in status["workers"] if worker["alive"] and worker["host"]["pid"] == pid]
        assert len(back) == 1 and back[0]["id"] != victim["id"]
        assert status["worker_restarts"] == 0 and status["worker_deaths"] >= 1
        assert status["instances"] == 0


def test_workers_register_again_after_the_master_is_killed_and_restarted(tmp_path, dataset):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    master_args = ("--mode", "master", "--num-workers", "2", *FAST)
    worker_args = ("--mode", "worker", "--master-url", url, "--bootcamps", "example", *FAST)
    with serve_tools(*master_args, log_dir=tmp_path, port=port, ready=False, env=ENV) as master, \
            serve_tools(*worker_args, log_dir=tmp_path, ready=False, env=ENV) as first, \
            serve_tools(*worker_args, log_dir=tmp_path, ready=False, env=ENV) as second:
        master.wait(lambda s: s["live_workers"] == 2, "both workers registered", timeout_s=120)
        with Evaluation(dataset, url, tmp_path / "eval") as evaluation:
            master.wait(evaluation.holding(all_held), "every episode holding its instance", timeout_s=120)
            master.process.kill()
            master.process.wait(timeout=30)
            # the same command again, on the same port: the workers find it by themselves, with their instances
            with serve_tools(*master_args, log_dir=tmp_path, port=port, ready=False, env=ENV) as again:
                status = again.wait(lambda s: s["live_workers"] == 2, "workers registered again", timeout_s=60)
                assert all(worker["registrations"] >= 2 for worker in status["workers"])
                evaluation.finish()
                status = again.health()
                assert status["live_workers"] == 2 and status["instances"] == 0
                assert sum(worker["calls"] for worker in status["workers"]) > 0  # service returned
        assert first.process.poll() is None and second.process.poll() is None  # the workers rode it out
