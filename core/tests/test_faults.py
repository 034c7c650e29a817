"""Storms that finish: every fault an endpoint can throw, injected by a real server on loopback into the requests of
real episodes (bootcamp-example, the real `openai` client), on first attempts only and in runs of consecutive
failures; time-bounded retries, re-runs of failed episodes and concurrency that adapts to 429s."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.episode.retries import AdaptiveConcurrency, RetryableError, RetryPolicy, RetryStats, with_retries
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.errors import ERROR_KINDS, InfrastructureError
from bootcamp_core.testing.chat_server import (
    FAULT_KINDS,
    Reply,
    ScriptedChatServer,
    failing_first,
    first_user_text,
    storm,
)


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


def make_dataset(registry, directory: Path, count: int) -> Path:
    config = config_for_bootcamp("example", registry, {"split_samples": {"test": count}, "gen_parquet": False},
                                 name="example")
    generate(config, directory, registry=registry)
    return directory / "example_test.jsonl"


def solver(request: dict) -> Reply:
    """Plays the calculator like a model: call it on the prompt's expression, then answer with its output."""
    tool = next((m for m in reversed(request["messages"]) if m.get("role") == "tool"), None)
    if tool is None:
        expression = first_user_text(request).split("\n\n")[1]
        return Reply.calls(("calculator", {"expression": expression}))
    return Reply.text(f'```json\n{{"result": {tool["content"]}}}\n```')


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


#: small budgets so a test waits milliseconds, not the defaults' seconds; a hang outlasts the request timeout
FAST = {"retry_backoff_s": 0.01, "request_timeout_s": 0.4}
HANG_S = 1.0


def config_for(dataset: Path, out: Path, server: ScriptedChatServer, **kwargs) -> EvalConfig:
    return EvalConfig(dataset_path=dataset, output_dir=out, api_url=server.base_url, api_model="stub",
                      **{**FAST, **kwargs})


# ----------------------------------------------------------------------------------- each fault, each pattern
@pytest.mark.parametrize("times", [1, 3], ids=["first-attempt", "three-in-a-row"])
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_is_retried_until_the_answer(example_registry, tmp_path, kind, times):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    script = failing_first(solver, kind, times=times, hang_s=HANG_S, retry_after=0.05)
    with ScriptedChatServer(script) as server:
        summary = run_evaluation(config_for(dataset, tmp_path / "out", server, max_concurrent=3), progress=False)
        requests = len(server.requests)
    results = lines_of(tmp_path / "out" / "results.jsonl")
    assert len(results) == 3
    assert all(line["success"] and line["score"] == 1.0 and line["error_kind"] is None for line in results), results
    # every turn (two per episode) failed `times` times before its answer
    assert requests == 3 * 2 * (times + 1)
    this_run = summary["this_run"]
    assert this_run["retries"] == 3 * 2 * times and this_run["reruns"] == 0
    assert this_run["infrastructure_errors"] == 0 and not this_run["too_many_infrastructure_errors"]
    if kind == "429_retry_after":  # the server's 0.05 s is honoured over the 0.01 s backoff
        assert this_run["waiting_s"] >= 0.05 * this_run["retries"] - 1e-3


@pytest.mark.parametrize(
    ("kind", "error_kind"),
    [("500", "server_error"), ("429", "rate_limited"), ("reset", "endpoint_unreachable"), ("hang", "timeout"),
     ("cut_json", "malformed_response"), ("empty_choices", "malformed_response"),
     ("null_message", "malformed_response")],
)
def test_a_fault_that_never_ends_fails_the_episode_when_the_budget_is_spent(example_registry, tmp_path, kind,
                                                                               error_kind):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    with ScriptedChatServer(lambda request: Reply.fault(kind, hang_s=HANG_S)) as server:
        config = config_for(dataset, tmp_path / "out", server, retry_budget_s=0.6, rerun_failed=1)
        summary = run_evaluation(config, progress=False)
        requests = len(server.requests)
    [line] = lines_of(tmp_path / "out" / "results.jsonl")
    assert not line["success"] and line["error_type"] == "infrastructure"
    assert line["error_kind"] == error_kind and error_kind in ERROR_KINDS
    assert "retry budget" in line["error"] and "AttributeError" not in line["error"]
    assert requests >= 2  # retried, and then given up: the run returned
    assert summary["this_run"]["reruns"] == 1 and summary["this_run"]["infrastructure_errors"] == 1
    overall = summary["overall"]["error_kinds"]
    assert list(overall) == [error_kind] and overall[error_kind]["count"] == 1
    assert overall[error_kind]["example"] == line["error"][:300]


@pytest.mark.parametrize(("status", "error_kind"), [(401, "auth"), (403, "auth"), (404, "not_found")])
def test_errors_that_need_the_user_are_never_retried(example_registry, tmp_path, status, error_kind):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    with ScriptedChatServer(lambda request: Reply.error(status, message="no")) as server:
        config = config_for(dataset, tmp_path / "out", server, preflight=False, rerun_failed=0)
        run_evaluation(config, progress=False)
        assert len(server.requests) == 1
    [line] = lines_of(tmp_path / "out" / "results.jsonl")
    assert line["error_kind"] == error_kind and not line["success"]


def test_a_rejected_request_is_a_model_error_with_its_kind(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    with ScriptedChatServer(lambda request: Reply.error(400, message="maximum context length exceeded")) as server:
        run_evaluation(config_for(dataset, tmp_path / "out", server), progress=False)
        assert len(server.requests) == 1  # neither retried nor re-run: the same request gets the same answer
    [line] = lines_of(tmp_path / "out" / "results.jsonl")
    assert (line["success"], line["error_type"], line["error_kind"]) == (True, "model", "request_rejected")


# ------------------------------------------------------------------------------------------ retry bounds
def test_retry_after_is_honoured_up_to_the_cap_and_the_budget_bounds_the_attempts():
    calls = []

    async def throttled() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RetryableError("busy", retry_after=3600.0, kind="rate_limited")
        return "ok"

    stats = RetryStats()
    policy = RetryPolicy(budget_s=10.0, base_s=0.001, max_s=0.05)
    assert anyio.run(lambda: with_retries(throttled, policy, stats=stats)) == "ok"
    # an hour's Retry-After waits the cap, 0.05 s, twice
    assert stats.retries == 2 and stats.waiting_s == pytest.approx(0.1)
    assert stats.to_dict()["retries_by_kind"] == {"rate_limited": 2}

    async def always_failing() -> None:
        raise RetryableError("down", kind="server_error")

    with pytest.raises(Exception) as caught:
        anyio.run(lambda: with_retries(always_failing, RetryPolicy(budget_s=0.2, base_s=0.01, max_s=0.02)))
    assert getattr(caught.value, "kind", None) == "server_error" and "0.2 s retry budget" in str(caught.value)


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_a_transport_error_of_either_http_package_is_retried_and_other_errors_are_not(package):
    # openai 3 and the mcp SDK are built on httpx2, the tool server's clients and openai 1.x-2.x on httpx
    http = pytest.importorskip(package) if package == "httpx2" else __import__(package)
    failures = [http.ConnectError("refused"), http.ReadTimeout("slow")]

    async def flaky() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    stats = RetryStats()
    assert anyio.run(lambda: with_retries(flaky, RetryPolicy(base_s=0.001, max_s=0.002), stats=stats)) == "ok"
    assert stats.retries == 2

    async def broken() -> None:
        raise http.UnsupportedProtocol("ftp://")  # a TransportError too: retried until the budget ends

    with pytest.raises(InfrastructureError, match="after"):
        anyio.run(lambda: with_retries(broken, RetryPolicy(budget_s=0.05, base_s=0.001, max_s=0.002)))

    async def bug() -> None:
        raise KeyError("not transport")

    with pytest.raises(InfrastructureError, match="request failed: KeyError") as caught:
        anyio.run(lambda: with_retries(bug, RetryPolicy(base_s=0.001, max_s=0.002)))
    assert caught.value.__cause__ is not None and isinstance(caught.value.__cause__, KeyError)


def test_backoff_grows_exponentially_up_to_the_cap_with_jitter_from_the_given_random():
    import random

    policy = RetryPolicy(base_s=1.0, max_s=8.0)
    delays = [policy.delay(attempt, random.Random(5)) for attempt in range(6)]
    for attempt, delay in enumerate(delays):
        step = min(8.0, 2.0**attempt)
        assert step / 2 <= delay <= step
    assert delays == [policy.delay(attempt, random.Random(5)) for attempt in range(6)]  # seeded: repeatable


# ------------------------------------------------------------------------------------- adaptive concurrency
def test_concurrency_halves_on_a_burst_of_429s_and_recovers():
    async def scenario() -> None:
        limiter = AdaptiveConcurrency(8)
        rounds = [await limiter.acquire() for _ in range(8)]
        for round_ in rounds:  # a burst: 8 answers of one round are 429s, the limit halves once
            limiter.release(round_, throttled=True)
        assert int(limiter.limit) == 4 and limiter.lowest == 4
        rounds = [await limiter.acquire() for _ in range(4)]
        for round_ in rounds:
            limiter.release(round_, throttled=True)
        assert int(limiter.limit) == 2 and limiter.lowest == 2

        # a scattered 429 among answers is no burst: the limit stays
        scattered = AdaptiveConcurrency(64)
        for index in range(640):
            round_ = await scattered.acquire()
            scattered.release(round_, throttled=index % 13 == 0)  # 1 answer in 13 is a 429
        assert scattered.lowest == 64

        # below the limit, requests wait for a free slot: never more in flight than the limit
        peak = 0

        async def request() -> None:
            nonlocal peak
            round_ = await limiter.acquire()
            peak = max(peak, limiter.in_flight)
            await anyio.lowlevel.checkpoint()
            limiter.release(round_, throttled=False)

        async with anyio.create_task_group() as group:
            for _ in range(200):
                group.start_soon(request)
        assert limiter.limit == 8 and limiter.lowest == 2  # recovered to the ceiling
        assert 2 <= peak <= 8

    anyio.run(scenario)


def test_a_429_burst_lowers_the_concurrency_of_a_run_which_still_completes(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 16)
    served = {"count": 0}
    lock = threading.Lock()

    def burst(request: dict) -> Reply:
        with lock:
            served["count"] += 1
            number = served["count"]
        if number <= 24:  # the first 24 requests are rate limited
            return Reply.error(429, message="slow down")
        return solver(request)

    with ScriptedChatServer(burst) as server:
        summary = run_evaluation(config_for(dataset, tmp_path / "out", server, max_concurrent=16), progress=False)
    results = lines_of(tmp_path / "out" / "results.jsonl")
    assert len(results) == 16 and all(line["success"] and line["score"] == 1.0 for line in results)
    this_run = summary["this_run"]
    assert this_run["lowest_concurrency"] < 16 and this_run["retries"] == 24
    assert this_run["retries_by_kind"] == {"rate_limited": 24}


# ------------------------------------------------------------------------------------------------ re-runs
def test_episodes_failing_in_the_first_round_are_rerun_and_written_once(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 6)
    records = list(load_dataset(dataset))
    doomed = first_user_text({"messages": records[1]["prompt"]})
    attempts: dict[str, int] = {}
    lock = threading.Lock()

    def flaky(request: dict) -> Reply:
        key = first_user_text(request)
        if key == doomed:
            with lock:
                attempts[key] = attempts.get(key, 0) + 1
                if attempts[key] <= 2:  # longer than the retry budget allows: two rounds fail, the third passes
                    return Reply.error(503, message="down for a moment")
        return solver(request)

    with ScriptedChatServer(flaky) as server:
        config = config_for(dataset, tmp_path / "out", server, retry_budget_s=0.0)  # one attempt per request
        summary = run_evaluation(config, progress=False)
    results = lines_of(tmp_path / "out" / "results.jsonl")
    assert sorted(line["id"] for line in results) == sorted(episode_id(record, 0) for record in records)
    assert all(line["success"] and line["score"] == 1.0 for line in results)
    assert summary["this_run"]["reruns"] == 2 and summary["this_run"]["infrastructure_errors"] == 0


def test_nothing_is_rerun_without_rerun_failed(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 2)
    with ScriptedChatServer(lambda request: Reply.error(500)) as server:
        config = config_for(dataset, tmp_path / "out", server, retry_budget_s=0.0, rerun_failed=0, preflight=False)
        summary = run_evaluation(config, progress=False)
        assert len(server.requests) == 2
    assert summary["this_run"]["reruns"] == 0 and summary["this_run"]["infrastructure_error_rate"] == 1.0
    assert summary["this_run"]["too_many_infrastructure_errors"]


# -------------------------------------------------------------------------------------------------- storm
def test_200_episodes_complete_and_score_right_under_a_30_percent_storm(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 200)
    records = list(load_dataset(dataset))
    out = tmp_path / "out"
    script = storm(solver, 0.3, seed=15, hang_s=HANG_S, retry_after=0.02)
    preflight = storm(lambda request: Reply.text("OK"), 0.3, seed=16, hang_s=HANG_S)  # the storm hits it too
    with ScriptedChatServer(script, preflight_script=preflight) as server:
        code = main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet",
                     "--api-url", server.base_url, "--api-model", "stub", "--max-concurrent", "64",
                     "--retry-backoff", "0.01", "--request-timeout", "0.4"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    results = lines_of(out / "results.jsonl")
    assert sorted(line["id"] for line in results) == sorted(episode_id(record, 0) for record in records)
    assert all(line["success"] and line["score"] == 1.0 and line["error_kind"] is None for line in results)
    summary = json.loads((out / "summary.json").read_text())
    this_run = summary["this_run"]
    assert this_run["infrastructure_errors"] == 0 and this_run["retries"] > 50
    assert set(this_run["retries_by_kind"]) == {"server_error", "rate_limited", "endpoint_unreachable", "timeout",
                                                "malformed_response"}
    assert summary["overall"]["solved"] == 200
    assert "retries " in captured.err and "lowest concurrency" in captured.err
