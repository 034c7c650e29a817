"""`bootcamp rescore`: saved trajectories re-scored with the installed rewards, never calling a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.rescore import default_output_path, rescore_results
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer


@pytest.fixture(autouse=True)
def _only_example(monkeypatch):
    monkeypatch.setenv("BOOTCAMP_LOAD_PLUGINS", "example")
    monkeypatch.setenv("BOOTCAMP_STRICT_PLUGINS", "1")
    monkeypatch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def near_miss(request: dict) -> Reply:
    """Calls the calculator, then answers with its value off by a relative 1e-4: wrong for the exact reward,
    worth partial credit for the soft one."""
    output = next((m["content"] for m in reversed(request["messages"]) if m.get("role") == "tool"), None)
    if output is None:
        expression = next(m["content"] for m in request["messages"] if m["role"] == "user").split("\n\n")[1]
        return Reply.calls(("calculator", {"expression": expression}))
    return Reply.text(f'```json\n{{"result": {float(output) * (1 + 1e-4)!r}}}\n```')


@pytest.fixture
def evaluated(example_registry, tmp_path):
    """A results.jsonl of 6 episodes against the stub server, and the server (still running)."""
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 6}}, name="example")
    generate(config, tmp_path / "data", registry=example_registry)
    out = tmp_path / "out"
    with ScriptedChatServer(near_miss) as server:
        assert main(["eval", "--dataset-path", str(tmp_path / "data" / "example_test.jsonl"), "--output-dir",
                     str(out), "--api-url", server.base_url, "--api-model", "stub", "--max-assistant-turns", "2",
                     "--quiet"]) == 0
        yield out / "results.jsonl", server


def test_rescore_reports_changes_when_a_verify_kwarg_changes_and_calls_no_model(evaluated, capsys):
    results, server = evaluated
    requests_before = len(server.requests)
    original = results.read_bytes()
    assert all(line["score"] == 0.0 and line["success"] for line in lines_of(results))

    assert main(["rescore", str(results), "--verify-correction-kwargs", '{"soft": true}']) == 0
    out = capsys.readouterr().out
    assert "6 lines: 6 re-scored, 6 changed" in out and "mean score 0 -> 0.5" in out
    rescored = lines_of(default_output_path(results))
    # relative error 1e-4 against tolerance 1e-8 is four decades out of eight: half credit
    assert [line["score"] for line in rescored] == pytest.approx([0.5] * 6)
    assert all(line["evaluation_config"]["verify_kwargs"] == {"soft": True} for line in rescored)
    assert results.read_bytes() == original  # the input is untouched without --in-place
    assert len(server.requests) == requests_before  # no model was asked anything

    # the saved kwargs reproduce the saved scores: nothing changes
    report = rescore_results(results, output=results.with_name("same.jsonl"))
    assert report.rescored == 6 and report.changes == [] and report.unchanged == 6

    # in place, atomically; the report as JSON
    assert main(["rescore", str(results), "--in-place", "--json", "--verify_correction_kwargs",
                 '{"soft": true, "soft_decades": 16}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changed"] == 6 and data["output_path"] == str(results)
    assert [change["new_score"] for change in data["changes"]] == pytest.approx([0.75] * 6)
    assert not [path for path in results.parent.iterdir() if ".tmp-" in path.name]
    assert len(server.requests) == requests_before


def test_rescore_keeps_failures_and_unreadable_lines(evaluated):
    results, _ = evaluated
    lines = results.read_text(encoding="utf-8").splitlines()
    failed = json.loads(lines[0])
    failed.update(success=False, error_type="infrastructure", error="server down", score=0.0)
    unknown = json.loads(lines[1])
    unknown["input"]["extra_info"]["bootcamp"]["reward"] = "example/nope"
    results.write_text("\n".join([json.dumps(failed), json.dumps(unknown), "{cut off", *lines[2:]]) + "\n",
                       encoding="utf-8")
    report = rescore_results(results, verify_kwargs={"soft": True})
    assert report.infrastructure_failures == 1 and report.rescored == 4 and len(report.changes) == 4
    assert [line for line, _ in report.skipped] == [2, 3]
    assert "example/nope" in report.skipped[0][1]
    written = report.output_path.read_text(encoding="utf-8").splitlines()
    assert len(written) == 7 and written[2] == "{cut off"
    assert json.loads(written[0]) == failed and json.loads(written[1]) == unknown
    with pytest.raises(ConfigError):
        rescore_results(results.with_name("missing.jsonl"))


def test_in_place_rescore_rewrites_the_summary_beside_the_results(evaluated):
    results, _ = evaluated
    out = results.parent
    before = json.loads((out / "summary.json").read_text())
    assert before["overall"]["mean_score"] == 0.0
    assert main(["rescore", str(results), "--in-place", "--verify-correction-kwargs", '{"soft": true}']) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["mean_score"] == pytest.approx(0.5) and summary["overall"]["count"] == 6
    assert summary["evaluation_config"]["verify_kwargs"] == {"soft": True}
    assert summary["this_run"] == before["this_run"] and "rescored_at" in summary
    rows = (out / "summary.csv").read_text().splitlines()
    row = dict(zip(rows[0].split(","), rows[-1].split(",")))
    assert row["data_source"] == "ALL" and float(row["mean_score"]) == pytest.approx(0.5)
    assert ">0.5<" in (out / "report.html").read_text()  # the mean score cell
    # a copy elsewhere leaves the summary alone
    rescore_results(results, output=results.with_name("copy.jsonl"), verify_kwargs={"soft": False})
    assert json.loads((out / "summary.json").read_text())["overall"]["mean_score"] == pytest.approx(0.5)


def test_the_reward_sees_the_saved_tool_rewards_tool_scores_and_turn_scores(evaluated):
    """A reward computed only from what the episode saved: the re-score must hand it exactly that."""
    import types

    from bootcamp_core import Reward, hookimpl
    from bootcamp_core.plugin.loader import Registry
    from bootcamp_core.rescore import rescore_line

    seen: list[dict] = []

    class FromKwargs(Reward):
        name = "from_kwargs"

        def extract_output(self, output):
            return output

        def verify_correction(self, extracted, identity, **kwargs):
            seen.append(kwargs)
            return (kwargs["tool_scores"]["calculator"] + sum(kwargs["tool_rewards"]) + sum(kwargs["turn_scores"])
                    + kwargs["bonus"])

    module = types.ModuleType("probe_plugin")

    def bootcamp_register_rewards(register):
        register(FromKwargs)

    module.bootcamp_register_rewards = hookimpl(bootcamp_register_rewards)
    registry = Registry(strict=True)
    registry.add_plugin(module, "probe")

    results, _ = evaluated
    lines = lines_of(results)
    for number, line in enumerate(lines):
        line["input"]["extra_info"]["bootcamp"]["reward"] = "probe/from_kwargs"
        line["tool_scores"] = {"calculator": 0.1 * number}
        line["tool_rewards"] = [0.05, 0.05]
        line["turn_scores"] = [0.1]
        line["evaluation_config"]["verify_kwargs"] = {"bonus": 0.2}
    results.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    score, _ = rescore_line(lines[1], registry)
    assert score == pytest.approx(0.1 + 0.1 + 0.1 + 0.2)
    assert seen[-1]["messages"] == lines[1]["messages"]
    report = rescore_results(results, registry=registry)
    assert report.rescored == 6 and report.skipped == []
    assert [line["score"] for line in lines_of(report.output_path)] == pytest.approx(
        [min(1.0, 0.1 * number + 0.4) for number in range(6)])
    # --verify-correction-kwargs replaces the saved kwargs, the saved trajectory data stays
    report = rescore_results(results, registry=registry, verify_kwargs={"bonus": 0.0})
    assert [line["score"] for line in lines_of(report.output_path)] == pytest.approx(
        [0.1 * number + 0.2 for number in range(6)])
