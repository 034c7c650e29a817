"""Every installed bootcamp through the tool server: the reference agents score the same with tools served by
`bootcamp serve` workers as with tools in-process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow


def bootcamp(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli", *args], capture_output=True, text=True,
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

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "w") as handle:
        server = subprocess.Popen([sys.executable, "-m", "bootcamp_core.cli", "serve", "--port", str(port),
                                   "--num-workers", "2", "--bootcamp-registry", str(registry)],
                                  stdout=handle, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while True:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                if httpx.get(url + "/health", timeout=5).json()["ready"]:
                    break
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        runs = {}
        for name, extra in (("local", []), ("served", ["--tool-server", url])):
            result = bootcamp("eval", "--dataset-path", str(data / "all_test.jsonl"), "--output-dir",
                              str(tmp_path / name), "-q", *extra)
            assert result.returncode == 0, result.stderr
            runs[name] = {line["id"]: line for line in map(json.loads, (tmp_path / name / "results.jsonl")
                                                          .read_text().splitlines())}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert runs["local"].keys() == runs["served"].keys() and len(runs["local"]) == 3 * len(playable)
    for key, local in runs["local"].items():
        served = runs["served"][key]
        assert served["success"], served["error"]
        assert served["score"] == pytest.approx(local["score"]), (local["data_source"], served["tool_calls"])
        assert [call["output"] for call in served["tool_calls"]] == [call["output"] for call in local["tool_calls"]]
        assert served["tool_scores"] == pytest.approx(local["tool_scores"])
