"""Resume cannot destroy: a file that is not a results file of the dataset is refused and left as it is, rewrites are
atomic, one run at a time per results file, and what dead runs left behind (lock files, temporaries) is cleaned up.
Real bootcamp-example records, reference agents, the real evaluator and CLI (in-process and in subprocesses), and a
real OpenAI-compatible server on loopback where a run has to be slow."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import write_records
from bootcamp_core.episode.engine import episode_id
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.evaluate.results import ResultsLock, prepare_resume, remove_stale_temporaries
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


def make_dataset(registry, directory: Path, count: int, seed: int = 42) -> Path:
    config = config_for_bootcamp("example", registry, {"split_samples": {"test": count}, "gen_parquet": False,
                                                       "seed": seed}, name="example")
    generate(config, directory, registry=registry)
    return directory / "example_test.jsonl"


def eval_args(dataset: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet", *extra]


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# ------------------------------------------------------------------------------------ refused, left untouched
def test_the_dataset_file_itself_is_refused_and_left_untouched(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 20)
    before = dataset.read_bytes()
    assert main(eval_args(dataset, tmp_path / "out", "--resume-from-result-path", str(dataset))) == 1
    line = one_error_line(capsys.readouterr().err)
    assert "--resume-from-result-path" in line and "dataset file itself" in line
    assert dataset.read_bytes() == before
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_copy_of_a_dataset_file_is_refused_and_left_untouched(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 20)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(dataset.read_bytes())
    assert main(eval_args(dataset, tmp_path / "out", "--resume-from-result-path", str(copy))) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{copy}:1: a record, not a result line" in line and "left as it is" in line
    assert copy.read_bytes() == dataset.read_bytes()


@pytest.mark.parametrize("content", [
    '{"name": "a", "value": 1}\n{"name": "b", "value": 2}\n',  # JSON lines of another schema
    '{"input": {"prompt": []}, "score": "high"}\n',  # a score that is no number
    '[1, 2, 3]\n',  # not objects
    'plain text, one line\n',  # not JSON at all: no cut-off result line either
], ids=["another-schema", "score-not-a-number", "not-objects", "text"])
def test_a_file_of_another_schema_is_refused_and_left_untouched(example_registry, tmp_path, capsys, content):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    other = tmp_path / "other.jsonl"
    other.write_text(content, encoding="utf-8")
    assert main(eval_args(dataset, tmp_path / "out", "--resume-from-result-path", str(other))) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{other}:1:" in line and "not a results file" in line
    assert other.read_text(encoding="utf-8") == content


def test_a_parquet_file_is_refused_and_left_untouched(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 5)
    parquet = tmp_path / "records.parquet"
    write_records(parquet, load_dataset(dataset))
    before = parquet.read_bytes()
    assert main(eval_args(dataset, tmp_path / "out", "--resume-from-result-path", str(parquet))) == 1
    assert "not a results file" in one_error_line(capsys.readouterr().err)
    assert parquet.read_bytes() == before


def test_results_of_another_dataset_are_refused_and_left_untouched(example_registry, tmp_path, capsys):
    first = make_dataset(example_registry, tmp_path / "a", 6, seed=1)
    second = make_dataset(example_registry, tmp_path / "b", 6, seed=2)
    assert main(eval_args(first, tmp_path / "run-a")) == 0
    results = tmp_path / "run-a" / "results.jsonl"
    before = results.read_bytes()
    capsys.readouterr()
    assert main(eval_args(second, tmp_path / "run-b", "--resume-from-result-path", str(results))) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{results}:1: not an episode of a record of {second}" in line
    assert results.read_bytes() == before
    # the dataset it belongs to resumes it (everything is finished already)
    assert main(eval_args(first, tmp_path / "run-a", "--resume-from-result-path", str(results))) == 0
    assert results.read_bytes() == before


def test_an_unreadable_line_before_the_last_is_refused(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 4)
    assert main(eval_args(dataset, tmp_path / "out")) == 0
    results = tmp_path / "out" / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = lines[0] + lines[1][:40] + "\n" + "".join(lines[2:])
    results.write_text(broken, encoding="utf-8")
    capsys.readouterr()
    assert main(eval_args(dataset, tmp_path / "out", "--resume-from-result-path", str(results))) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{results}:2: not valid JSON" in line and "only the last line" in line
    assert results.read_text(encoding="utf-8") == broken


# ------------------------------------------------------------------------------------------ what resume keeps
def test_resume_drops_only_what_it_must_and_rewrites_atomically(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 8)
    records = list(load_dataset(dataset))
    out = tmp_path / "out"
    run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out), progress=False)
    results = out / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    failed = json.loads(lines[3])
    failed.update(success=False, error_type="infrastructure", error="boom", score=0.0)
    # an infrastructure failure, a repeated line and a last line cut mid-character by a kill
    text = "".join(lines[:3] + [json.dumps(failed) + "\n"] + lines[4:]) + lines[0]
    cut = lines[1].encode("utf-8")[:-30] + "é".encode()[:1]
    results.write_bytes(text.encode("utf-8") + cut)
    inode = results.stat().st_ino

    finished, counts = prepare_resume(results, dataset)
    assert counts == {"kept": 7, "infrastructure": 1, "unreadable": 1, "duplicates": 1}
    assert finished == {json.loads(line)["id"] for index, line in enumerate(lines) if index != 3}
    assert results.stat().st_ino != inode  # a new file renamed into place, not the old one edited
    assert results.read_text(encoding="utf-8") == "".join(lines[:3] + lines[4:])
    assert sorted(path.name for path in out.iterdir() if ".tmp-" in path.name) == []

    # nothing to drop: the file is left exactly as it is
    inode = results.stat().st_ino
    assert prepare_resume(results, dataset)[1] == {"kept": 7, "infrastructure": 0, "unreadable": 0, "duplicates": 0}
    assert results.stat().st_ino == inode

    summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, resume_from=results), progress=False)
    assert summary["this_run"]["episodes"] == 1 and summary["overall"]["count"] == 8
    assert sorted(line["id"] for line in lines_of(results)) == sorted(episode_id(record, 0) for record in records)


def test_results_of_the_original_framework_and_other_keys_are_keyed_by_their_input(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 3)
    records = list(load_dataset(dataset))
    legacy = tmp_path / "legacy.jsonl"
    lines = [{"input": records[0], "output": "x", "score": 1.0},  # the original framework's: no id
             {"id": "written-by-hand:1", "input": records[1], "repeat": 1, "score": 0.5}]
    legacy.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    finished, counts = prepare_resume(legacy, dataset)
    assert finished == {episode_id(records[0], 0), episode_id(records[1], 1)} and counts["kept"] == 2
    assert [line["id"] for line in lines_of(legacy)] == [episode_id(records[0], 0), episode_id(records[1], 1)]


# ---------------------------------------------------------------------------------------- one run at a time
def slow_solver(request: dict) -> Reply:
    """The calculator played like a model, a quarter second per answer (any other request, e.g. a check of the
    endpoint, gets a plain answer)."""
    text = first_user_text(request)
    parts = text.split("\n\n")
    tool_outputs = [message.get("content") for message in request.get("messages") or [] if message.get("role") == "tool"]
    if len(parts) < 2:
        return Reply.text("ok")
    if not tool_outputs:
        return Reply.calls(("calculator", {"expression": parts[1]}), delay_s=0.25)
    return Reply.text(f'```json\n{{"result": {tool_outputs[-1]}}}\n```', delay_s=0.25)


def start_eval(dataset: Path, out: Path, server: ScriptedChatServer, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "bootcamp_core.cli.main", *eval_args(dataset, out, *extra), "--api-url",
               server.base_url, "--api-model", "stub", "--no-preflight", "--max-concurrent", "2"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_lines(process: subprocess.Popen, path: Path, count: int) -> None:
    deadline = time.monotonic() + 60  # a hang detector, not a timing assertion
    while not (path.exists() and len(path.read_bytes().splitlines()) >= count):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the evaluation wrote no results"
        time.sleep(0.02)


def test_two_resumes_of_one_file_at_once_the_second_is_refused(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 16)
    records = list(load_dataset(dataset))
    results = tmp_path / "shared" / "results.jsonl"
    with ScriptedChatServer(slow_solver) as server:
        first = start_eval(dataset, tmp_path / "out-1", server, "--resume-from-result-path", str(results))
        try:
            wait_for_lines(first, results, 2)
            assert (tmp_path / "shared" / "results.jsonl.lock").read_text().strip() == str(first.pid)
            during = results.read_bytes()
            # the same file, through the evaluator and through the command line, while the first run writes it
            for attempt in range(2):
                if attempt == 0:
                    with pytest.raises(ConfigError, match=f"being written by another run \\(pid {first.pid}\\)"):
                        run_evaluation(EvalConfig(dataset_path=dataset, output_dir=tmp_path / "out-2",
                                                  resume_from=results), progress=False)
                else:
                    code = main(eval_args(dataset, tmp_path / "out-3", "--resume-from-result-path", str(results)))
                    assert code == 1
                    line = one_error_line(capsys.readouterr().err)
                    assert f"{results} is being written by another run (pid {first.pid})" in line
            assert results.read_bytes()[: len(during)] == during  # nothing of the first run's was touched
            assert first.wait(timeout=120) == 0, first.stderr.read()
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
            first.stderr.close()
    ids = [line["id"] for line in lines_of(results)]
    assert sorted(ids) == sorted(episode_id(record, 0) for record in records)  # every line, each once
    assert not (tmp_path / "shared" / "results.jsonl.lock").exists()  # released
    # and the file is free again
    assert main(eval_args(dataset, tmp_path / "out-4", "--resume-from-result-path", str(results))) == 0


def test_two_runs_into_one_output_dir_at_once_the_second_is_refused(example_registry, tmp_path, capsys):
    dataset = make_dataset(example_registry, tmp_path / "data", 12)
    out = tmp_path / "out"
    with ScriptedChatServer(slow_solver) as server:
        first = start_eval(dataset, out, server)
        try:
            wait_for_lines(first, out / "results.jsonl", 1)
            assert main(eval_args(dataset, out, "--overwrite")) == 1  # overwrite cannot take it from a live run
            assert "is being written by another run" in one_error_line(capsys.readouterr().err)
            assert first.wait(timeout=120) == 0, first.stderr.read()
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
            first.stderr.close()
    assert len(lines_of(out / "results.jsonl")) == 12
    assert {path.name for path in out.iterdir()} == {"results.jsonl", "summary.json", "summary.csv", "report.html"}


def test_a_killed_run_leaves_nothing_that_blocks_or_survives_the_resume(example_registry, tmp_path):
    dataset = make_dataset(example_registry, tmp_path / "data", 16)
    records = list(load_dataset(dataset))
    out = tmp_path / "out"
    results = out / "results.jsonl"
    with ScriptedChatServer(slow_solver) as server:
        process = start_eval(dataset, out, server)
        try:
            wait_for_lines(process, results, 2)
            os.kill(process.pid, signal.SIGKILL)
        finally:
            process.wait()
            process.stderr.close()
    lock = out / "results.jsonl.lock"
    assert lock.read_text().strip() == str(process.pid)  # the killed run's lock file is still there
    # what a kill -9 or a full disk in the middle of a rewrite leaves behind, and a live process's temporary
    stale = [out / f"results.jsonl.tmp-{process.pid}", out / f"summary.json.tmp-{dead_pid()}"]
    for path in stale:
        path.write_text("partial", encoding="utf-8")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = out / f"results.jsonl.tmp-{sleeper.pid}"
        alive.write_text("in progress", encoding="utf-8")
        unrelated = out / "notes.tmp-1"
        unrelated.write_text("mine", encoding="utf-8")
        summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, resume_from=results),
                                 progress=False)
        assert not any(path.exists() for path in stale)
        assert alive.read_text(encoding="utf-8") == "in progress" and unrelated.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert summary["overall"]["count"] == 16 and not lock.exists()
    assert sorted(line["id"] for line in lines_of(results)) == sorted(episode_id(r, 0) for r in records)


def test_the_lock_is_exclusive_and_released(tmp_path):
    results = tmp_path / "deep" / "results.jsonl"
    with ResultsLock(results) as held:
        assert held.path.read_text().strip() == str(os.getpid())
        with pytest.raises(ConfigError, match=f"being written by another run \\(pid {os.getpid()}\\)"):
            ResultsLock(results).acquire()
    assert not held.path.exists()
    with ResultsLock(results):  # free again
        pass


def test_stale_temporaries_of_dead_processes_only(tmp_path):
    pid = dead_pid()
    dead = tmp_path / f"results.jsonl.tmp-{pid}"
    mine = tmp_path / f"results.jsonl.tmp-{os.getpid()}"
    odd = tmp_path / "results.jsonl.tmp-x1"
    for path in (dead, mine, odd):
        path.write_text("", encoding="utf-8")
    assert remove_stale_temporaries(tmp_path, ["results.jsonl"]) == [dead]
    assert mine.exists() and odd.exists() and not dead.exists()


def test_a_kill_during_a_batched_run_loses_no_finished_episode(example_registry, tmp_path):
    """Episodes finishing together share one write and fsync; kill -9 in the middle of such a run, and every episode
    the run had counted as done (printed by --verbose once its batch is on disk) has its whole line in the file; the
    resume runs the others, and the file ends with one line per episode."""
    dataset = make_dataset(example_registry, tmp_path / "data", 40)
    records = list(load_dataset(dataset))
    out = tmp_path / "out"
    results = out / "results.jsonl"
    with ScriptedChatServer(slow_solver) as server:
        command = [sys.executable, "-m", "bootcamp_core.cli.main", *eval_args(dataset, out, "--verbose"),
                   "--api-url", server.base_url, "--api-model", "stub", "--no-preflight", "--max-concurrent", "8"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_lines(process, results, 9)  # past the first batch: batches of several episodes are on disk
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            err = process.stderr.read()
            written = results.read_bytes()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    assert written.endswith(b"\n")  # every line whole
    lines = [json.loads(line) for line in written.decode("utf-8").splitlines()]
    on_disk = [line["id"] for line in lines]
    assert len(on_disk) == len(set(on_disk)) >= 9
    # a line per episode counted as done: "<id[:12]>… r<repeat> ..." (a log line may share stderr; it has no "…")
    counted = [text.split("…", 1)[0] for text in err.splitlines() if "…" in text]
    assert counted, err
    prefixes = {episode[:12] for episode in on_disk}
    assert all(prefix in prefixes for prefix in counted), (counted, on_disk)
    assert len(counted) <= len(on_disk)

    summary = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, resume_from=results), progress=False)
    assert summary["this_run"]["skipped_as_finished"] == len(on_disk)
    assert summary["overall"]["count"] == len(records)
    final = lines_of(results)
    assert [line["id"] for line in final[: len(on_disk)]] == on_disk  # the killed run's lines are kept as they were
    assert sorted(line["id"] for line in final) == sorted(episode_id(record, 0) for record in records)


def test_the_summary_folded_during_a_run_is_the_summary_of_its_results_file(example_registry, tmp_path):
    """The run summarizes its lines as their batches reach the disk (and a resumed file's earlier lines first): the
    figures are those of the results file read afresh, the report's episodes those of the file."""
    from bootcamp_core.evaluate.report import ReportParts
    from bootcamp_core.evaluate.statistics import summarize_file
    from bootcamp_core.evaluate.viewer import report_episodes

    dataset = make_dataset(example_registry, tmp_path / "data", 12)
    out = tmp_path / "out"
    results = out / "results.jsonl"
    first = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, repeats=3, limit=5), progress=False)
    assert first["overall"]["count"] == 15
    resumed = run_evaluation(EvalConfig(dataset_path=dataset, output_dir=out, repeats=3, resume_from=results),
                             progress=False)
    assert resumed["this_run"]["skipped_as_finished"] == 15 and resumed["overall"]["count"] == 36
    parts = ReportParts()
    afresh = summarize_file(results, report=parts)
    for key in ("overall", "groups", "pass_at_k_definition", "interval_definition"):
        assert resumed[key] == afresh[key]
    index, episodes = report_episodes((out / "report.html").read_text(encoding="utf-8"))
    assert [row[0] for row in index] == [line["id"] for line in lines_of(results)]
    assert len(episodes) == 36
