"""`bootcamp eval` end to end: real bootcamp-example components, reference agents, and a real OpenAI-compatible
server on loopback (the only stand-in) driven through the real `openai` client."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import write_records
from bootcamp_core.episode.engine import RolloutLimits, episode_id
from bootcamp_core.episode.policies import OpenAIPolicy
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.evaluate.statistics import pass_at_k
from bootcamp_core.evaluate.viewer import report_episodes
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text

SECRET = "sk-test-secret-key-0123456789"


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


def make_dataset(registry, directory: Path, count: int, *, parquet: bool = False) -> Path:
    overrides = {"split_samples": {"test": count}, "gen_parquet": parquet}
    config = config_for_bootcamp("example", registry, overrides, name="example")
    generate(config, directory, registry=registry)
    return directory / "example_test.jsonl"


def expression_of(request: dict) -> str:
    # the example prompt puts the expression in its own paragraph, second
    return first_user_text(request).split("\n\n")[1]


def last_tool_output(request: dict) -> str | None:
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "tool":
            return message.get("content")
    return None


def solver(answer=None, *, delay_s: float = 0.0):
    """Plays the calculator like a model: call it on the whole expression, then answer with its output.

    ``answer(request, value)`` may replace the final answer text.
    """

    def script(request: dict) -> Reply:
        output = last_tool_output(request)
        if output is None:
            return Reply.calls(("calculator", {"expression": expression_of(request)}), delay_s=delay_s,
                               usage={"prompt_tokens": 10, "completion_tokens": 5})
        text = answer(request, output) if answer else f'```json\n{{"result": {output}}}\n```'
        return Reply.text(text, delay_s=delay_s, usage={"prompt_tokens": 20, "completion_tokens": 7})

    return script


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def eval_args(dataset: Path, out: Path, server: ScriptedChatServer | None, *extra: str) -> list[str]:
    args = ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet"]
    if server is not None:
        args += ["--api-url", server.base_url + "/chat/completions", "--api-model", "stub", "--api-key", SECRET]
    return args + list(extra)


# ------------------------------------------------------------------------------------------ end to end
def test_eval_against_the_stub_server_writes_consistent_outputs(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 12)
    records = list(load_dataset(dataset))
    bad = first_user_text({"messages": records[0]["prompt"]})

    def answer(request, output):
        if first_user_text(request) == bad:  # markup in a model answer must reach the report escaped
            return '<script>alert("x")</script> ```json\n{"result": 0.5}\n```'
        return f'```json\n{{"result": {output}}}\n```'

    out = tmp_path / "out"
    with ScriptedChatServer(solver(answer)) as server:
        code = main(eval_args(dataset, out, server, "--max-concurrent", "4",
                              "--api-extra-headers", "X-Team:eval,Authorization:Bearer " + SECRET,
                              "--verify_correction_kwargs", '{"soft": false}', "--max_assistant_turns", "6"))
    assert code == 0, capsys.readouterr().err
    assert {path.name for path in out.iterdir()} == {"results.jsonl", "summary.json", "summary.csv", "report.html"}
    results = lines_of(out / "results.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    assert len(results) == 12 == summary["overall"]["count"] == sum(group["count"] for group in summary["groups"])
    assert {line["id"] for line in results} == {episode_id(record, 0) for record in records}
    by_id = {line["id"]: line for line in results}
    assert by_id[episode_id(records[0], 0)]["score"] == 0.0
    assert all(by_id[episode_id(record, 0)]["score"] == 1.0 for record in records[1:])
    assert summary["overall"]["successes"] == 12 and summary["overall"]["infrastructure_errors"] == 0
    assert summary["overall"]["mean_score"] == pytest.approx(11 / 12)
    assert summary["overall"]["pass_at_k"] == {"pass@1": pytest.approx(11 / 12)}
    # the wrong answer is retried by the feedback interaction up to its three attempts; right ones take 2 turns
    assert by_id[episode_id(records[0], 0)]["turn_record"]["assistant_turns"] > 2
    line = by_id[episode_id(records[1], 0)]
    assert line["turn_record"] == {"assistant_turns": 2, "user_turns": 2, "tool_calls": 1, "model_errors": 0}
    assert line["token_usage"] == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    assert line["evaluation_config"]["verify_kwargs"] == {"soft": False}
    assert line["evaluation_config"]["limits"]["max_assistant_turns"] == 6
    assert line["evaluation_config"]["api_extra_headers"] == ["Authorization", "X-Team"]
    for field in ("input", "tools", "messages", "extracted_output", "ground_truth", "score", "reached_max_turns",
                  "turn_record", "success", "token_usage", "evaluation_config", "tool_rewards", "tool_scores",
                  "turn_scores", "error_type", "repeat", "timings", "versions"):
        assert field in line
    csv_rows = (out / "summary.csv").read_text().splitlines()
    assert csv_rows[0].startswith("data_source,generator,count") and csv_rows[-1].startswith("ALL,ALL,12,")
    # the key reached the server, never a file
    assert server.request_headers[0]["authorization"] == "Bearer " + SECRET
    for path in out.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8")
    report = (out / "report.html").read_text(encoding="utf-8")
    # offline: nothing is fetched; the only URL is the endpoint's, shown as text in the configuration table
    for needle in ("src=", "href=", "url(", "@import", "<link"):
        assert needle not in report
    assert "http" not in report.replace(server.base_url, "")
    # the one script is the viewer's; the episodes are base64 a browser never runs, the markup in them only data
    assert report.count("<script>") == 1 and "alert(" not in report
    assert re.sub(r'<script( type="application/octet-stream"[^>]*)?>', "", report).count("<script") == 0
    _, episodes = report_episodes(report)
    assert sorted(episode["id"] for episode in episodes) == sorted(by_id)
    assert any('<script>alert("x")</script>' in str(message["content"]) for episode in episodes
               for message in episode["messages"])
    assert 'class="plots"' in report


def test_the_progress_bar_ends_on_the_final_counts(example_registry, tmp_path, capsys):
    """The bar is updated at most 20 times a second, and once more when it closes: its last state is the run's."""
    dataset = make_dataset(example_registry, tmp_path / "data", 8)
    args = [arg for arg in eval_args(dataset, tmp_path / "out", None, "--policy", "reference", "--repeats", "3")
            if arg != "--quiet"]
    assert main(args) == 0
    bar = capsys.readouterr().err.strip().splitlines()[-1]
    assert "24/24" in bar and "errors 0" in bar and "mean score 1.000" in bar, bar


def test_eval_with_reference_agents(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 8)
    out = tmp_path / "out"
    assert main(eval_args(dataset, out, None, "--policy", "reference", "--repeats", "2")) == 0
    assert "16 episodes, 0 infrastructure errors, mean score 1.000" in capsys.readouterr().out
    results = lines_of(out / "results.jsonl")
    assert len(results) == 16 and all(line["score"] == 1.0 and line["success"] for line in results)
    assert sorted(line["repeat"] for line in results) == [0] * 8 + [1] * 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["pass_at_k"] == {"pass@1": 1.0, "pass@2": 1.0}
    assert summary["evaluation_config"]["policy"] == "reference"
    assert "success is true and score >= 1" in summary["pass_at_k_definition"]
    # a second run into the same folder refuses to clobber the results unless told to
    assert main(eval_args(dataset, out, None, "--policy", "reference")) == 1
    assert "already holds results" in capsys.readouterr().err
    assert len(lines_of(out / "results.jsonl")) == 16
    assert main(eval_args(dataset, out, None, "--overwrite", "--limit", "3")) == 0
    assert len(lines_of(out / "results.jsonl")) == 3


# ------------------------------------------------------------------------------------------------ resume
def test_kill_9_mid_run_then_resume_is_exact(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 30)
    records = list(load_dataset(dataset))
    expected = {episode_id(record, repeat) for record in records for repeat in range(2)}
    out = tmp_path / "out"
    results = out / "results.jsonl"
    with ScriptedChatServer(solver(delay_s=0.1)) as server:
        command = [sys.executable, "-m", "bootcamp_core.cli.main", *eval_args(dataset, out, server, "--repeats", "2",
                                                                          "--max-concurrent", "3")]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not (results.exists() and len(results.read_bytes().splitlines()) >= 5):
                assert process.poll() is None, process.stderr.read().decode()
                assert time.monotonic() < deadline, "the evaluation wrote no results"
                time.sleep(0.02)
            os.kill(process.pid, signal.SIGKILL)
        finally:
            process.wait()
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    before = results.read_bytes()
    lines = before.splitlines() if before.endswith(b"\n") else before.splitlines()[:-1]  # the last may be cut off
    complete = [json.loads(line) for line in lines]
    assert 5 <= len(complete) < 60, "killed mid-run"
    assert not (out / "summary.json").exists()

    with ScriptedChatServer(solver()) as server:
        assert main(eval_args(dataset, out, server, "--repeats", "2", "--resume-from-result-path", str(results))) == 0
        # only what had not finished ran again: two requests per episode
        assert len(server.requests) == 2 * (60 - len(complete))
    after = results.read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["id"] for line in after]  # every line parses
    assert len(ids) == len(set(ids)) == 60 and set(ids) == expected
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["count"] == 60 and summary["results_path"] == str(results)
    assert summary["overall"]["pass_at_k"]["pass@2"] == 1.0
    # the lines finished before the kill are kept as they were
    assert [line["id"] for line in complete] == ids[: len(complete)]


def test_resume_reruns_infrastructure_failures(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 10)
    records = list(load_dataset(dataset))
    failing = {first_user_text({"messages": records[i]["prompt"]}) for i in (2, 5)}

    def flaky(request: dict) -> Reply:
        if first_user_text(request) in failing:
            return Reply.error(500, message="overloaded")
        return solver()(request)

    out = tmp_path / "out"
    limits = RolloutLimits(max_assistant_turns=5)
    config = EvalConfig(dataset_path=dataset, output_dir=out, api_url="unused", limits=limits, max_concurrent=4)
    with ScriptedChatServer(flaky) as server:
        # one attempt only, so the test does not wait out the backoff
        policy = OpenAIPolicy(api_url=server.base_url, model="stub", retry=RetryPolicy(attempts=1))
        summary = run_evaluation(config, policy=policy, progress=False)
    results = lines_of(out / "results.jsonl")
    failed = {line["id"] for line in results if not line["success"]}
    assert failed == {episode_id(records[i], 0) for i in (2, 5)}
    assert all(line["error_type"] == "infrastructure" and "overloaded" in line["error"] for line in results
               if not line["success"])
    assert summary["overall"]["infrastructure_errors"] == 2 and summary["overall"]["successes"] == 8
    assert summary["overall"]["mean_score"] == pytest.approx(8 / 10)  # failures count in the denominator

    # the file as a crash could leave it: a duplicated line and a cut-off one at the end
    path = out / "results.jsonl"
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    path.write_text(text + first + "\n" + first[: len(first) // 2], encoding="utf-8")
    with ScriptedChatServer(solver()) as server:
        assert main(eval_args(dataset, out, server, "--resume_from_result_path", str(path))) == 0
        assert len(server.requests) == 4  # exactly the two failed episodes, two turns each
    results = lines_of(path)
    assert len(results) == 10 and len({line["id"] for line in results}) == 10
    assert all(line["success"] and line["score"] == 1.0 for line in results)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["infrastructure_errors"] == 0 and summary["overall"]["count"] == 10


# ----------------------------------------------------------------------------------------------- dry run
def test_dry_run_checks_everything_and_writes_nothing(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 5)
    out = tmp_path / "out"
    with ScriptedChatServer(solver()) as server:
        assert main(eval_args(dataset, out, server, "--dry-run")) == 0
        assert server.requests == []  # the check lists models, it runs no episode
    assert "dry run ok: 5 records, 5 episodes" in capsys.readouterr().out
    assert not out.exists()

    # a dead endpoint: a port nobody listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--dry-run",
            "--api-url", f"http://127.0.0.1:{port}/v1", "--api-model", "stub", "--api-key", SECRET]
    assert main(args) == 3  # the preflight's exit code
    err = capsys.readouterr().err
    assert "endpoint check failed" in err and f"127.0.0.1:{port}" in err and SECRET not in err
    assert not out.exists()

    # an unknown generator id, anywhere in the file, fails before anything runs
    records = list(load_dataset(dataset))
    records[3]["extra_info"]["bootcamp"]["generator"] = "example/arithmetik"
    broken = tmp_path / "broken.jsonl"
    write_records(broken, records)
    assert main(["eval", "--dataset-path", str(broken), "--output-dir", str(out), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "record 3" in err and "example/arithmetik" in err and 'Did you mean "example/arithmetic"' in err
    assert main(["eval", "--dataset-path", str(broken), "--output-dir", str(out), "--quiet"]) == 1
    assert not out.exists()


def test_reference_policy_without_agent_fails_before_any_episode(example_registry, tmp_path):
    from bootcamp_core import TaskGenerator, hookimpl
    from bootcamp_core.plugin.loader import Registry

    class Lonely(TaskGenerator):
        name = "lonely"
        reward = "example/arithmetic"

    class Hooks:
        @hookimpl
        def bootcamp_register_task_generators(self, register):
            register(Lonely)

    registry = Registry.from_entry_points(strict=True)
    registry.add_plugin(Hooks(), "lonely_ns")
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    records = list(load_dataset(dataset))
    records[1]["extra_info"]["bootcamp"]["generator"] = "lonely_ns/lonely"
    write_records(tmp_path / "mixed.jsonl", records)
    config = EvalConfig(dataset_path=tmp_path / "mixed.jsonl", output_dir=tmp_path / "out")
    with pytest.raises(ConfigError, match="lonely_ns/lonely"):
        run_evaluation(config, registry=registry, progress=False)
    assert not (tmp_path / "out" / "results.jsonl").exists()


# ------------------------------------------------------------------------------------------- concurrency
def test_one_thousand_concurrent_episodes(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 1000)
    state = {"in_flight": 0, "peak": 0}
    everyone = asyncio.Event()

    async def gathered(request: dict) -> Reply:
        # first turns wait until all 1,000 are in flight at once (or 20 s pass), so the peak proves the concurrency
        if last_tool_output(request) is None:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
            if state["in_flight"] >= 1000:
                everyone.set()
            try:
                await asyncio.wait_for(everyone.wait(), 20)
            except asyncio.TimeoutError:
                pass
            state["in_flight"] -= 1
        return solver()(request)

    out = tmp_path / "out"
    with ScriptedChatServer(gathered) as server:
        assert main(eval_args(dataset, out, server, "--max-concurrent", "1000")) == 0
    assert state["peak"] == 1000
    results = lines_of(out / "results.jsonl")
    assert len(results) == 1000 and len({line["id"] for line in results}) == 1000
    assert all(line["success"] and line["score"] == 1.0 for line in results)


# ------------------------------------------------------------------------------- selection and pass@k
def test_shard_limit_and_repeats_pass_at_k(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 10)
    records = list(load_dataset(dataset))
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def first_try_only(request, output):
        # per record, exactly one of the three episodes answers right
        with lock:
            key = first_user_text(request)
            seen[key] = seen.get(key, 0) + 1
            right = seen[key] == 1
        return f'```json\n{{"result": {output if right else -1}}}\n```'

    out = tmp_path / "out"
    with ScriptedChatServer(solver(first_try_only)) as server:
        assert main(eval_args(dataset, out, server, "--limit", "6", "--shard", "1/3", "--repeats", "3",
                              "--max-assistant-turns", "2")) == 0
    results = lines_of(out / "results.jsonl")
    # positions 1 and 4 of the first 6 records, three times each
    assert {line["id"] for line in results} == {episode_id(records[i], r) for i in (1, 4) for r in range(3)}
    overall = json.loads((out / "summary.json").read_text())["overall"]
    assert overall["records"] == 2 and overall["count"] == 6
    assert overall["pass_at_k"] == {"pass@1": pytest.approx(1 / 3), "pass@2": pytest.approx(2 / 3), "pass@3": 1.0}
    assert "pass@3" in (out / "summary.csv").read_text().splitlines()[0]


def test_pass_at_k_matches_counting_subsets():
    from itertools import combinations

    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(combinations(outcomes, k))
                assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_shards_partition_the_selection(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 7)
    records = list(load_dataset(dataset))
    ids = []
    for index in range(3):
        out = tmp_path / f"shard{index}"
        assert main(eval_args(dataset, out, None, "--shard", f"{index}/3")) == 0
        ids += [line["id"] for line in lines_of(out / "results.jsonl")]
    assert sorted(ids) == sorted(episode_id(record, 0) for record in records)
    with pytest.raises(ConfigError, match="shard"):
        EvalConfig(dataset_path=dataset, output_dir=tmp_path, shard=(3, 3))


# --------------------------------------------------------------------------------- inputs and options
def test_dataset_formats_agree(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 6, parquet=True)
    records = list(load_dataset(dataset))
    array = tmp_path / "array.json"
    array.write_text(json.dumps(records, indent=1), encoding="utf-8")
    lines = tmp_path / "lines.json"
    lines.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    for path in (dataset.with_suffix(".parquet"), array, lines):
        assert [episode_id(r, 0) for r in load_dataset(path)] == [episode_id(r, 0) for r in records]
    out = tmp_path / "out"
    assert main(eval_args(dataset.with_suffix(".parquet"), out, None)) == 0
    assert {line["id"] for line in lines_of(out / "results.jsonl")} == {episode_id(r, 0) for r in records}
    (tmp_path / "bad.json").write_text('{"data_source": 1}\n{oops\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.json:2"):
        list(load_dataset(tmp_path / "bad.json"))


def test_bootcamp_registry_tokenizer_and_component_config(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 4)
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_text('{"bootcamp_name": "other_camp", "sample_number": 3}\n', encoding="utf-8")
    assert main(eval_args(dataset, tmp_path / "none", None, "--bootcamp-registry", str(registry_file))) == 0
    assert lines_of(tmp_path / "none" / "results.jsonl") == []

    registry_file.write_text('{"bootcamp_name": "ex", "namespace": "example"}\n', encoding="utf-8")
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    template = ("{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content if m.content is string else '' }}"
                "{% for c in m.tool_calls or [] %}[call {{ c.function.name }}]{% endfor %}\n{% endfor %}"
                "{% if tools %}TOOLS {{ tools | tojson }}{% endif %}")
    (tokenizer / "tokenizer_config.json").write_text(json.dumps({"chat_template": template, "bos_token": "<s>"}))
    interaction_config = tmp_path / "interaction.yaml"
    interaction_config.write_text("interaction:\n  - class_name: example/feedback\n    config: {max_attempts: 1}\n")
    out = tmp_path / "out"

    def wrong(request, output):
        return '```json\n{"result": -1}\n```'

    with ScriptedChatServer(solver(wrong)) as server:
        assert main(eval_args(dataset, out, server, "--bootcamp-registry", str(registry_file), "--tokenizer-path",
                              str(tokenizer), "--interaction-config", str(interaction_config))) == 0
    results = lines_of(out / "results.jsonl")
    assert len(results) == 4
    for line in results:
        assert line["full_context"].startswith("<s><|user|>Compute the value")
        assert "[call calculator]" in line["full_context"] and 'TOOLS [{"type": "function"' in line["full_context"]
        # max_attempts 1 from the interaction config: one wrong answer ends the episode
        assert line["turn_record"]["assistant_turns"] == 2 and line["finish_reason"] == "terminated"
        assert line["evaluation_config"]["component_config"] == {"example/feedback": {"max_attempts": 1}}


def test_a_crashing_plugin_does_not_stop_the_run(example_registry, tmp_path):
    from bootcamp_core import Tool, hookimpl
    from bootcamp_core.plugin.loader import Registry

    class Exploding(Tool):
        name = "calculator"
        description = "breaks"
        parameters = {"type": "object", "properties": {}}

        async def create(self, instance_id=None, identity=None, **kwargs):
            if "7" in json.dumps(identity):
                raise RuntimeError("boom in create")
            return await super().create(instance_id, identity, **kwargs)

        async def execute(self, instance_id, parameters, **kwargs):
            return "42", 0.0, {}

    class Hooks:
        @hookimpl
        def bootcamp_register_tools(self, register):
            register(Exploding)

    registry = Registry.from_entry_points(strict=True)
    registry.add_plugin(Hooks(), "exploding")
    dataset = make_dataset(example_registry, tmp_path / "data", 12)
    records = list(load_dataset(dataset))
    for record in records:
        record["extra_info"]["bootcamp"]["tools"] = ["exploding/calculator"]
    write_records(tmp_path / "boom.jsonl", records)
    out = tmp_path / "out"
    summary = run_evaluation(EvalConfig(dataset_path=tmp_path / "boom.jsonl", output_dir=out), registry=registry,
                             progress=False)
    results = lines_of(out / "results.jsonl")
    crashed = [line for line in results if not line["success"]]
    assert len(results) == 12 and crashed
    assert all("boom in create" in line["error"] for line in crashed)
    assert summary["overall"]["infrastructure_errors"] == len(crashed)
    assert summary["overall"]["count"] == 12


# -------------------------------------------------------------------------------------------- secrets
@pytest.mark.parametrize("source", ["env", "api-key header", "authorization header"])
def test_no_secret_in_use_is_ever_written_or_logged(example_registry, tmp_path, capsys, monkeypatch, source):
    """A server that echoes the credentials it got, in answers and in an error: none reaches a file or a log."""
    dataset = make_dataset(example_registry, tmp_path / "data", 4)
    records = list(load_dataset(dataset))
    failing = first_user_text({"messages": records[0]["prompt"]})
    server = ScriptedChatServer()

    def echoed() -> str:
        headers = server.request_headers[-1]  # this request's: appended just before the script runs
        return f"authorization={headers.get('authorization')} api-key={headers.get('api-key')}"

    def answer(request, output):
        return f'I was sent {echoed()} ```json\n{{"result": {output}}}\n```'

    def script(request: dict) -> Reply:
        if first_user_text(request) == failing:  # a 4xx is not retried: its echo becomes the episode's error
            return Reply.error(400, message=f"bad credentials {echoed()}")
        return solver(answer)(request)

    server.script = script
    out = tmp_path / "out"
    args = ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet", "--verbose",
            "--api-url", "", "--api-model", "stub"]
    if source == "env":
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    elif source == "api-key header":
        args += ["--api-extra-headers", f"X-Team:eval,api-key:{SECRET}"]
    else:
        args += ["--api-extra-headers", json.dumps({"Authorization": f"Bearer {SECRET}"})]
    with server:
        args[args.index("--api-url") + 1] = server.base_url
        assert main(args) == 0
    # the secret was really in use: the server got it
    assert any(SECRET in value for headers in server.request_headers for value in headers.values())
    results = lines_of(out / "results.jsonl")
    assert len(results) == 4
    failed = [line for line in results if line["error"]]
    assert len(failed) == 1 and "bad credentials authorization=" in failed[0]["error"]
    assert any("[redacted]" in json.dumps(line["messages"]) for line in results if not line["error"])
    assert {path.name for path in out.iterdir()} == {"results.jsonl", "summary.json", "summary.csv", "report.html"}
    for path in out.iterdir():
        assert SECRET not in path.read_text(encoding="utf-8"), path.name
    captured = capsys.readouterr()
    assert SECRET not in captured.out and SECRET not in captured.err


def test_redactor_masks_whole_values_and_their_credential_part():
    from bootcamp_core.evaluate.secrets import Redactor

    redactor = Redactor(["Bearer " + SECRET, "EMPTY", "", None, "on"])
    assert redactor.text(f"a Bearer {SECRET} b {SECRET} on EMPTY") == "a [redacted] b [redacted] on EMPTY"
    assert redactor.data({"k": [SECRET, 1, {"x": "on"}]}) == {"k": ["[redacted]", 1, {"x": "on"}]}
    assert not Redactor(["EMPTY", "", "on"])


def test_log_records_of_a_run_are_masked(example_registry, tmp_path, caplog):
    """A plugin that logs the credential it was somehow handed, with a traceback: the log shows neither."""
    from bootcamp_core import Tool, hookimpl
    from bootcamp_core.plugin.loader import Registry

    class Leaky(Tool):
        name = "calculator"
        description = "logs what it should not"
        parameters = {"type": "object", "properties": {}}

        async def execute(self, instance_id, parameters, **kwargs):
            try:
                raise RuntimeError(f"token {os.environ['OPENAI_API_KEY']}")
            except RuntimeError:
                logging.getLogger("leaky_plugin").exception("execute failed with %s", os.environ["OPENAI_API_KEY"])
            return "42", 0.0, {}

    class Hooks:
        @hookimpl
        def bootcamp_register_tools(self, register):
            register(Leaky)

    registry = Registry.from_entry_points(strict=True)
    registry.add_plugin(Hooks(), "leaky")
    records = list(load_dataset(make_dataset(example_registry, tmp_path / "data", 1)))
    records[0]["extra_info"]["bootcamp"]["tools"] = ["leaky/calculator"]
    write_records(tmp_path / "leaky.jsonl", records)
    os.environ["OPENAI_API_KEY"] = SECRET  # removed again by the autouse fixture's monkeypatch
    with ScriptedChatServer(solver()) as server:
        config = EvalConfig(dataset_path=tmp_path / "leaky.jsonl", output_dir=tmp_path / "out",
                            api_url=server.base_url, api_model="stub")
        run_evaluation(config, registry=registry, progress=False)
    logged = [record for record in caplog.records if record.name == "leaky_plugin"]
    assert logged and "execute failed with [redacted]" in caplog.text and "token [redacted]" in caplog.text
    assert SECRET not in caplog.text
    # the filter is gone after the run
    logging.getLogger("leaky_plugin").warning("after %s", SECRET)
    assert SECRET in caplog.text


# ----------------------------------------------------------------------------------------------- timeouts
def test_timeout_flags_are_documented_recorded_and_effective(example_registry, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for flag, default in (("--episode-timeout", 600), ("--tool-timeout", 60), ("--request-timeout", 600),
                          ("--reward-timeout", 60)):
        # the option's own help entry ("--x SECONDS text"), not the usage line ("[--x SECONDS]")
        entry = re.search(rf"{flag} SECONDS .*?\(default: (\d+)\)", help_text)
        assert entry and int(entry.group(1)) == default

    dataset = make_dataset(example_registry, tmp_path / "data", 2)
    first_requests: set[str] = set()

    def slow_first_attempt(request: dict) -> Reply:
        key = first_user_text(request)
        if last_tool_output(request) is None and key not in first_requests:
            first_requests.add(key)
            return solver(delay_s=2.0)(request)  # longer than --request-timeout: this attempt times out
        return solver()(request)

    out = tmp_path / "out"
    with ScriptedChatServer(slow_first_attempt) as server:
        assert main(eval_args(dataset, out, server, "--limit", "1", "--request-timeout", "0.3",
                              "--tool-timeout", "7", "--episode-timeout", "30", "--reward-timeout", "9")) == 0
        # the timed-out attempt, its retry, and the answer
        assert len(server.requests) == 3
    [line] = lines_of(out / "results.jsonl")
    assert line["success"] and line["score"] == 1.0
    config = line["evaluation_config"]
    assert config["request_timeout_s"] == 0.3
    assert config["limits"]["tool_timeout_s"] == 7 and config["limits"]["episode_timeout_s"] == 30
    assert config["limits"]["reward_timeout_s"] == 9
    assert json.loads((out / "summary.json").read_text())["evaluation_config"]["request_timeout_s"] == 0.3

    # an episode longer than --episode-timeout ends there
    out = tmp_path / "slow"
    with ScriptedChatServer(solver(delay_s=2.0)) as server:
        # the one episode ends in an infrastructure error: more than --max-infra-error-rate, exit 4
        assert main(eval_args(dataset, out, server, "--limit", "1", "--episode-timeout", "0.3")) == 4
    [line] = lines_of(out / "results.jsonl")
    assert line["finish_reason"] == "episode_timeout" and not line["success"]


def test_request_timeout_fails_the_episode_after_the_retries(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    config = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out", api_url="http://placeholder/v1",
                        api_model="stub", request_timeout_s=0.2, retry=RetryPolicy(attempts=2, base_s=0.01),
                        rerun_failed=0)
    with ScriptedChatServer(solver(delay_s=1.0)) as server:
        config = attrs_evolve(config, api_url=server.base_url)
        summary = run_evaluation(config, progress=False)
        assert len(server.requests) == 2  # both attempts timed out
    [line] = lines_of(tmp_path / "out" / "results.jsonl")
    assert line["error_type"] == "infrastructure" and "2 attempts" in line["error"] and "timed out" in line["error"].lower()
    assert summary["overall"]["infrastructure_errors"] == 1


def test_tool_timeout_reaches_the_engine(example_registry, tmp_path):
    from bootcamp_core import Tool, hookimpl
    from bootcamp_core.plugin.loader import Registry

    class Sleepy(Tool):
        name = "calculator"
        description = "slow"
        parameters = {"type": "object", "properties": {}}

        async def execute(self, instance_id, parameters, **kwargs):
            await asyncio.sleep(5)
            return "42", 0.0, {}

    class Hooks:
        @hookimpl
        def bootcamp_register_tools(self, register):
            register(Sleepy)

    registry = Registry.from_entry_points(strict=True)
    registry.add_plugin(Hooks(), "sleepy")
    records = list(load_dataset(make_dataset(example_registry, tmp_path / "data", 1)))
    records[0]["extra_info"]["bootcamp"]["tools"] = ["sleepy/calculator"]
    write_records(tmp_path / "sleepy.jsonl", records)
    config = EvalConfig(dataset_path=tmp_path / "sleepy.jsonl", output_dir=tmp_path / "out",
                        limits=RolloutLimits(tool_timeout_s=0.2, max_assistant_turns=2))
    run_evaluation(config, registry=registry, progress=False)
    [line] = lines_of(tmp_path / "out" / "results.jsonl")
    assert line["error_type"] == "model" and line["evaluation_config"]["limits"]["tool_timeout_s"] == 0.2
    assert any("timed out after 0.2 s" in str(message.get("content")) for message in line["messages"]
               if message.get("role") == "tool")


# --------------------------------------------------------------------------------- resume and stale outputs
def test_resume_from_a_path_that_does_not_exist_yet_starts_it(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    results = tmp_path / "cluster" / "run" / "results.jsonl"
    assert main(eval_args(dataset, tmp_path / "out", None, "--resume-from-result-path", str(results))) == 0
    assert len(lines_of(results)) == 3
    # the same command again finds everything finished
    assert main(eval_args(dataset, tmp_path / "out", None, "--resume-from-result-path", str(results))) == 0
    assert len(lines_of(results)) == 3
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["this_run"]["skipped_as_finished"] == 3


def test_a_run_removes_the_previous_summary_before_it_starts(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 2)
    out = tmp_path / "out"
    assert main(eval_args(dataset, out, None)) == 0
    stale = {name: (out / name).exists() for name in ("summary.json", "summary.csv", "report.html")}
    assert all(stale.values())
    seen: list[dict] = []

    def script(request: dict) -> Reply:
        # what a reader of the folder sees while the run is under way (or after a kill now)
        seen.append({name: (out / name).exists() for name in stale})
        return solver()(request)

    with ScriptedChatServer(script) as server:
        assert main(eval_args(dataset, out, server, "--overwrite")) == 0
    assert seen and not any(any(state.values()) for state in seen)
    assert all((out / name).exists() for name in stale)  # and written again at the end
    # a dry run leaves a finished run's outputs alone
    assert main(eval_args(dataset, out, None, "--dry-run")) == 0
    assert all((out / name).exists() for name in stale)


def test_tokenizer_path_that_does_not_exist(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    assert main(eval_args(dataset, tmp_path / "out", None, "--tokenizer-path", str(tmp_path / "nonexistent"))) == 1
    err = capsys.readouterr().err
    assert "no such directory" in err and "chat_template" not in err


def attrs_evolve(config: EvalConfig, **changes) -> EvalConfig:
    import attrs

    return attrs.evolve(config, **changes)


# ------------------------------------------------------------------------------- errors name fields, the CLI flags
@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"repeats": 0}, "repeats", "repeats must be at least 1, got 0"),
    ({"max_concurrent": 0}, "max_concurrent", "max_concurrent must be at least 1, got 0"),
    ({"limit": -1}, "limit", "limit must be >= 0, got -1"),
    ({"shard": (4, 4)}, "shard", "shard i/n needs 0 <= i < n, got 4/4"),
    ({"request_timeout_s": 0}, "request_timeout_s", "request_timeout_s must be positive, got 0"),
])
def test_a_bad_setting_is_an_error_about_its_field(tmp_path, changes, field, message):
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$") as raised:
        EvalConfig(dataset_path=tmp_path / "d.jsonl", output_dir=tmp_path / "out", **changes)
    assert raised.value.field == field


def test_library_errors_about_files_name_their_field(tmp_path):
    from bootcamp_core.evaluate.chat_template import ChatTemplate
    from bootcamp_core.evaluate.config import parse_shard

    with pytest.raises(ConfigError, match=r"^dataset_path .*nope\.jsonl: no such file$") as raised:
        load_dataset(tmp_path / "nope.jsonl")
    assert raised.value.field == "dataset_path"
    with pytest.raises(ConfigError, match="^tokenizer_path .*: no such directory$") as raised:
        ChatTemplate(tmp_path / "nowhere")
    assert raised.value.field == "tokenizer_path"
    with pytest.raises(ConfigError, match='^shard must look like "i/n"') as raised:
        parse_shard("half")
    assert raised.value.field == "shard"


@pytest.mark.parametrize(("extra", "flag_message"), [
    (("--repeats", "0"), "--repeats must be at least 1, got 0"),
    (("--policy", "openai"), "policy openai needs --api-url"),
])
def test_the_command_line_names_its_flag_for_a_field(example_registry, tmp_path, capsys, extra, flag_message):
    dataset = make_dataset(example_registry, tmp_path / "data", 1)
    assert main(eval_args(dataset, tmp_path / "out", None, *extra)) == 1
    assert flag_message in capsys.readouterr().err
