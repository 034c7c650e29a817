"""Scores read right: solved per reward threshold, pass@k from it, displays that never round a failure onto a pass,
generators' recommended turn limits, the turn-limit warning, rescoring that counts only real changes, and the
console's closing table and resume command."""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest

from bootcamp_core import ReferenceAgent, Reward, TaskGenerator, Tool, hookimpl, tool_call_message
from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import write_records
from bootcamp_core.evaluate.report import render_report, score_text
from bootcamp_core.evaluate.run import EvalConfig, run_evaluation
from bootcamp_core.evaluate.statistics import summarize
from bootcamp_core.evaluate.viewer import report_episodes
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.rescore import rescore_results
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text
from bootcamp_core.testing.helpers import generate_records


# ------------------------------------------------------------------------------------- a bootcamp to measure
class Steps(TaskGenerator):
    """A task scored n / 10, that the reference agent plays in ``turns`` tool calls before it answers."""

    name = "steps"
    tools = ("tick",)
    reward = "tenths"
    limits: ClassVar[dict[str, int]] = {"max_assistant_turns": 30, "max_user_turns": 60}

    def case_generator(self, rng):
        return {"n": rng.randint(0, 10), "turns": rng.randint(12, 15)}

    def prompt_func(self, identity, rng):
        return f"Tick {identity['turns']} times, then say {identity['n']}."


class Tick(Tool):
    name = "tick"
    description = "one tick"
    parameters: ClassVar[dict] = {"type": "object", "properties": {}}
    parallel_safe = True

    async def execute(self, instance_id, parameters, **kwargs):
        return "tock", 0.0, {}


class Tenths(Reward):
    """n / 10, answered as "n"; the extracted answer is a tuple (it is saved as a JSON list)."""

    name = "tenths"
    solved_threshold = 0.5

    def extract_output(self, output):
        text = output.strip()
        return (int(text), "tenths") if text.isdigit() else None

    def verify_correction(self, extracted, identity, **kwargs):
        return (extracted[0] + float(kwargs.get("bonus", 0))) / 10


class Stepper(ReferenceAgent):
    name = "stepper"
    generators = ("steps",)

    async def act(self, messages, tools, identity, rng):
        ticks = sum(1 for message in messages if message.get("role") == "tool")
        if ticks < identity["turns"]:
            return tool_call_message(messages, ("tick", {}))
        return {"role": "assistant", "content": str(identity["n"])}


class Hooks:
    @hookimpl
    def bootcamp_register_task_generators(self, register):
        register(Steps)

    @hookimpl
    def bootcamp_register_tools(self, register):
        register(Tick)

    @hookimpl
    def bootcamp_register_rewards(self, register):
        register(Tenths)

    @hookimpl
    def bootcamp_register_reference_agents(self, register):
        register(Stepper)


@pytest.fixture
def steps(tmp_path):
    """(registry with the steps bootcamp only, a dataset of 30 of its records)."""
    registry = Registry(strict=True)
    registry.add_plugin(Hooks(), "steps")
    records = generate_records("steps", registry, overrides={"split_samples": {"test": 30}, "seed": 3})
    dataset = tmp_path / "steps.jsonl"
    write_records(dataset, records)
    return registry, dataset


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------------------- solved
def test_solved_follows_the_rewards_threshold_and_pass_at_k_counts_it(steps, tmp_path):
    registry, dataset = steps
    summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out", policy="reference"),
                             registry=registry, progress=False)
    lines = lines_of(tmp_path / "out" / "results.jsonl")
    scores = [line["score"] for line in lines]
    assert len(lines) == 30 and all(line["success"] for line in lines)
    assert any(score < 0.5 for score in scores) and any(0.5 <= score < 1 for score in scores)  # both kinds drawn
    assert [line["solved"] for line in lines] == [score >= 0.5 - 1e-9 for score in scores]
    expected = sum(score >= 0.5 - 1e-9 for score in scores) / 30
    overall = summary["overall"]
    assert overall["pass_at_k"]["pass@1"] == pytest.approx(expected)
    assert overall["solved_rate"] == pytest.approx(expected) and overall["solved"] == round(expected * 30)
    assert "solved_threshold" in summary["pass_at_k_definition"]
    header = (tmp_path / "out" / "summary.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "solved" in header and "solved_rate" in header

    # no plugin needed to read it; a line without `solved` (older runs, the original framework) counts score >= 1
    for line in lines:
        del line["solved"]
    legacy = summarize(lines)["overall"]
    assert legacy["pass_at_k"]["pass@1"] == pytest.approx(sum(score >= 1 for score in scores) / 30)


def test_an_infrastructure_failure_is_never_solved():
    lines = [{"id": "a:0", "score": 1.0, "success": False, "solved": True},
             {"id": "b:0", "score": 0.7, "success": True, "solved": True}]
    overall = summarize(lines)["overall"]
    assert overall["solved"] == 1 and overall["pass_at_k"]["pass@1"] == 0.5


def test_a_failing_score_never_shows_as_a_passing_number():
    assert score_text(0.99999997) == "0.99999997"
    assert score_text(1e-12) != "0" and score_text(1.0) == "1" and score_text(0.0) == "0"
    assert score_text(0.123456) == "0.1235"
    line = {"id": "x:0", "generator": "g", "score": 0.99999997, "success": True, "solved": False,
            "messages": [{"role": "assistant", "content": "almost"}]}
    examples: list = []
    summary = summarize([line], examples=examples)
    html = render_report(summary, [line])
    # the viewer's list row: its score, and solved from the line (the browser tests show how the page writes them)
    assert [row[3:5] for row in report_episodes(html)[0]] == [[0.99999997, False]]
    overall = html.split("<h2>Overall</h2>")[1].split("</table>")[0]
    assert "<td>0.99999997</td>" in overall  # the mean score is not rounded onto 1 either


# ----------------------------------------------------------------------------------------------------- limits
def test_a_generators_limits_apply_unless_the_user_sets_them_and_hitting_them_is_warned(steps, tmp_path, caplog):
    registry, dataset = steps
    summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "own", policy="reference"),
                             registry=registry, progress=False)
    lines = lines_of(tmp_path / "own" / "results.jsonl")
    # 12-15 ticks and an answer: past RolloutLimits' default of 10 assistant turns, within the generator's 30
    assert {line["finish_reason"] for line in lines} == {"answered"}
    assert not summary["warnings"]

    from bootcamp_core.episode.engine import RolloutLimits

    caplog.set_level(logging.WARNING, logger="bootcamp_core")
    config = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "user", policy="reference",
                        limits=RolloutLimits(max_assistant_turns=10), explicit_limits={"max_assistant_turns"})
    summary = run_evaluation(config, registry=registry, progress=False)
    lines = lines_of(tmp_path / "user" / "results.jsonl")
    assert {line["finish_reason"] for line in lines} == {"max_assistant_turns"}
    assert {line["turn_record"]["assistant_turns"] for line in lines} == {10}
    (warning,) = summary["warnings"]
    assert "30 of 30 episodes of steps/steps (100%) ended at a turn limit" in warning
    assert warning in caplog.text

    # without explicit_limits, a limit that differs from the default counts as set by the user
    config = EvalConfig(dataset_path=dataset, output_dir=tmp_path / "python", policy="reference",
                        limits=RolloutLimits(max_assistant_turns=11))
    assert config.limits_for(Steps.limits).max_assistant_turns == 11
    assert config.limits_for(Steps.limits).max_user_turns == 60
    assert EvalConfig(dataset_path=dataset, output_dir=tmp_path).limits_for({"max_assistant_turns": True,
                                                                            "max_user_turns": -3}) == RolloutLimits()


# ----------------------------------------------------------------------------------------------------- rescore
def test_rescore_counts_only_real_changes(steps, tmp_path):
    registry, dataset = steps
    run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out", policy="reference"),
                   registry=registry, progress=False)
    results = tmp_path / "out" / "results.jsonl"
    saved = lines_of(results)
    assert all(isinstance(line["extracted_output"], list) for line in saved)  # a tuple, saved as a list

    same = rescore_results(results, output=tmp_path / "same.jsonl", registry=registry)
    assert same.rescored == 30 and same.changes == [] and same.unchanged == 30
    assert [line["solved"] for line in lines_of(tmp_path / "same.jsonl")] == [line["solved"] for line in saved]

    bonus = rescore_results(results, output=tmp_path / "bonus.jsonl", registry=registry, verify_kwargs={"bonus": 5})
    rescored = lines_of(tmp_path / "bonus.jsonl")
    below_one = sum(line["score"] < 1 for line in saved)  # a perfect score cannot rise: unchanged
    assert 0 < below_one < 30 and len(bonus.changes) == below_one and bonus.unchanged == 30 - below_one
    assert all(change.new_score == pytest.approx(min(1.0, change.old_score + 0.5)) for change in bonus.changes)
    assert [line["solved"] for line in rescored] == [line["score"] >= 0.5 - 1e-9 for line in rescored]
    assert all(line["solved"] for line in rescored)


# ----------------------------------------------------------------------------------------------------- console
@pytest.fixture
def example_dataset(example_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("BOOTCAMP_LOAD_PLUGINS", "example")
    monkeypatch.setenv("BOOTCAMP_STRICT_PLUGINS", "1")
    monkeypatch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 40}}, name="example")
    generate(config, tmp_path / "data", registry=example_registry)
    return tmp_path / "data" / "example_test.jsonl"


def test_the_console_ends_with_the_per_generator_table(example_dataset, tmp_path, capsys):
    assert main(["eval", "--dataset-path", str(example_dataset), "--output-dir", str(tmp_path / "out"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("by data source and generator"):]
    assert "bootcamp/example" in table and "solved" in table and "pass@1" in table
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    for group in summary["groups"]:
        assert group["generator"] in table


def slow_solver(request: dict) -> Reply:
    """Answers the example's arithmetic slowly (so a run can be interrupted), and anything else with text."""
    text = first_user_text(request)
    output = next((m["content"] for m in reversed(request.get("messages") or []) if m.get("role") == "tool"), None)
    if output is not None:
        return Reply.text(f'```json\n{{"result": {output}}}\n```', delay_s=0.05)
    if "\n\n" not in text:
        return Reply.text("ok")
    return Reply.calls(("calculator", {"expression": text.split("\n\n")[1]}), delay_s=0.05)


def test_ctrl_c_prints_the_command_that_resumes(example_dataset, tmp_path):
    out = tmp_path / "out"
    password = "resume-pass-4711"
    with ScriptedChatServer(slow_solver) as server:
        url = server.base_url.replace("://", f"://alice:{password}@")
        command = [sys.executable, "-m", "bootcamp_core.cli", "eval", "--dataset-path", str(example_dataset),
                   "--output-dir", str(out), "--api-url", url, "--api-model", "stub", "--max-concurrent", "1",
                   "--quiet", "--overwrite"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "OPENAI_API_KEY": "sk-resume-test-key"})
        results = out / "results.jsonl"
        watchdog = threading.Timer(120, process.kill)  # a hang detector, not a benchmark
        watchdog.start()
        try:
            while process.poll() is None and not (results.exists() and results.read_text(encoding="utf-8").strip()):
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate()
        finally:
            watchdog.cancel()
        assert process.returncode == 130, stderr
        (line,) = [line for line in stderr.splitlines() if line.startswith("resume with: ")]
        assert password not in stderr and password not in stdout
        resume, _, note = line.removeprefix("resume with: ").partition("  (plus, as before: ")
        assert "the credentials in --api-url" in note
        argv = shlex.split(resume)
        assert argv[:2] == ["bootcamp", "eval"] and "--overwrite" not in argv
        assert argv[argv.index("--resume-from-result-path") + 1] == str(results)
        done = len(lines_of(results))
        assert 0 < done < 40
        argv[argv.index("--api-url") + 1] = url  # the credentials, as before
        os.environ["OPENAI_API_KEY"] = "sk-resume-test-key"
        try:
            assert main(argv[1:]) == 0
        finally:
            del os.environ["OPENAI_API_KEY"]
    lines = lines_of(results)
    assert len(lines) == 40 and len({line["id"] for line in lines}) == 40
