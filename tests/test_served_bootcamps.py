"""Every installed bootcamp through the tool server: the reference agents score the same with tools served by
`bootcamp serve` workers as with tools in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.testing import serve_tools

pytestmark = pytest.mark.slow


def bootcamp(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_reference_agents_score_the_same_with_served_tools(tmp_path: Path):
    plugins = json.loads(bootcamp("plugins", "--json").stdout)
    playable = [item["namespace"] for item in plugins
                if item["components"].get("reference_agent") and item["components"].get("tool")]
    assert playable, "no installed bootcamp has tools and a reference agent"
    registry = tmp_path / "registry.jsonl"
    registry.write_text("".join(json.dumps({"namespace": ns, "sample_number": {"test": 3}}) + "\n" for ns in playable))
    data = tmp_path / "data"
    generated = bootcamp("generate", "--bootcamp-registry", str(registry), "--concat-files", "--output-dir", str(data),
                         "-q")
    assert generated.returncode == 0, generated.stderr

    with serve_tools("--num-workers", "2", "--bootcamp-registry", str(registry), log_dir=tmp_path) as server:
        runs = {}
        for name, extra in (("local", []), ("served", ["--tool-server", server.url])):
            result = bootcamp("eval", "--dataset-path", str(data / "all_test.jsonl"), "--output-dir",
                              str(tmp_path / name), "-q", *extra)
            assert result.returncode == 0, result.stderr
            runs[name] = {line["id"]: line for line in map(json.loads, (tmp_path / name / "results.jsonl")
                                                          .read_text().splitlines())}
    assert runs["local"].keys() == runs["served"].keys() and len(runs["local"]) == 3 * len(playable)
    for key, local in runs["local"].items():
        served = runs["served"][key]
        assert served["success"], served["error"]
        assert served["score"] == pytest.approx(local["score"]), (local["data_source"], served["tool_calls"])
        assert [call["output"] for call in served["tool_calls"]] == [call["output"] for call in local["tool_calls"]]
        assert served["tool_scores"] == pytest.approx(local["tool_scores"])
