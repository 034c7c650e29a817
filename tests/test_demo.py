"""`bootcamp demo`: the whole loop offline on every installed bootcamp; bootcamps without reference agents skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bootcamp_core.testing import MINIMAL_HOOKS, write_distribution


def test_demo_generates_evaluates_reports_and_postprocesses_offline(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-silent", "0.1", entry_points={"bootcamp": {"silent": "silent_hooks"}},
                       modules={"silent_hooks.py": MINIMAL_HOOKS})
    out = tmp_path / "demo"
    # the example and a bootcamp without a reference agent; test_demo_over_every_installed_bootcamp covers the rest
    env = {**os.environ, "PYTHONPATH": str(site), "OPENAI_API_KEY": "", "BOOTCAMP_STRICT_PLUGINS": "1",
           "BOOTCAMP_LOAD_PLUGINS": "example,silent"}
    result = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "demo", "--output-dir", str(out),
                             "--samples", "4", "-q"], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "skipped silent: no reference agent plays silent/g" in result.stderr
    assert "bootcamp/example" in result.stdout and str(out / "eval" / "report.html") in result.stdout
    # it names the folder it writes into, and the dataset is there once: no per-bootcamp copy beside it
    assert f"writing into {out}{os.sep}" in result.stdout and f"everything is in {out}{os.sep}" in result.stdout
    assert sorted(path.name for path in out.iterdir()) == ["data", "eval"]
    assert sorted(path.name for path in (out / "data").iterdir()) == ["demo_test.jsonl"]

    lines = [json.loads(line) for line in (out / "eval" / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and {line["data_source"] for line in lines} == {"bootcamp/example"}
    assert all(line["success"] and line["score"] == 1.0 for line in lines)
    assert all(any(message["role"] == "tool" for message in line["messages"]) for line in lines)
    summary = json.loads((out / "eval" / "summary.json").read_text())
    assert summary["overall"]["count"] == 4 and summary["overall"]["mean_score"] == 1.0
    training = [json.loads(line) for line in (out / "eval" / "training_data.jsonl").read_text().splitlines()]
    assert len(training) == 4 and set(training[0]) == {"id", "data_source", "prompt", "messages", "tools"}
    assert (out / "eval" / "report.html").read_text().count("<svg") >= 1

    # running it again into the same folder works (fresh results, same bytes of data)
    data_before = (out / "data" / "demo_test.jsonl").read_bytes()
    again = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "demo", "--output-dir", str(out),
                            "--samples", "4", "-q"], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    assert (out / "data" / "demo_test.jsonl").read_bytes() == data_before
    assert len((out / "eval" / "results.jsonl").read_text().splitlines()) == 4
