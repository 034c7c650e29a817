"""Exit status that tells: `bootcamp eval`'s preflight, its exit codes, error kinds on every result line and in the
summary, and configs rejected at start-up; against a real server on loopback through the real `openai` client."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from bootcamp_core.cli.eval import infrastructure_verdict
from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.io import write_records
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.errors import ERROR_KINDS, ConfigError
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, first_user_text

SECRET = "sk-exit-codes-secret-0123456789"


#: subprocesses and get_registry() see bootcamp-example only, strictly, whatever else is installed
pytestmark = pytest.mark.usefixtures("only_example")


@pytest.fixture
def dataset(example_registry, tmp_path) -> Path:
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 4}, "gen_parquet": False},
                                 name="example")
    generate(config, tmp_path / "data", registry=example_registry)
    return tmp_path / "data" / "example_test.jsonl"


def solver(request: dict) -> Reply:
    tool = next((m for m in reversed(request["messages"]) if m.get("role") == "tool"), None)
    if tool is None:
        return Reply.calls(("calculator", {"expression": first_user_text(request).split("\n\n")[1]}))
    return Reply.text(f'```json\n{{"result": {tool["content"]}}}\n```')


def eval_args(dataset: Path, out: Path, url: str, *extra: str) -> list[str]:
    return ["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet", "--api-url", url,
            "--api-model", "stub", "--api-key", SECRET, "--retry-backoff", "0.01", *extra]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


# ------------------------------------------------------------------------------------------------ preflight
def test_nothing_listening_fails_the_preflight_at_once_with_one_line(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    port = free_port()
    assert main(eval_args(dataset, out, f"http://127.0.0.1:{port}/v1")) == 3
    err = capsys.readouterr().err
    [line] = error_lines(err)
    assert "nothing answers there" in line and f"127.0.0.1:{port}" in line and SECRET not in err
    assert not (out / "results.jsonl").exists()


def test_a_refused_key_fails_the_preflight(dataset, tmp_path, capsys):
    refuse = Reply.error(401, message="Incorrect API key provided")
    with ScriptedChatServer(solver, preflight_script=lambda request: refuse) as server:
        assert main(eval_args(dataset, tmp_path / "out", server.base_url)) == 3
        assert server.requests == []  # no episode ran
    [line] = error_lines(capsys.readouterr().err)
    assert "API key was refused" in line and "HTTP 401" in line and "Incorrect API key provided" in line


def test_a_model_the_endpoint_does_not_serve_fails_the_preflight(dataset, tmp_path, capsys):
    with ScriptedChatServer(solver, models=("Qwen/Qwen3-8B",)) as server:
        assert main(eval_args(dataset, tmp_path / "out", server.base_url)) == 3
        assert server.preflight_requests == [] and server.requests == []
    [line] = error_lines(capsys.readouterr().err)
    assert "'stub' is not served" in line and "Qwen/Qwen3-8B" in line


def test_an_https_endpoint_runs_with_its_ca_trusted_and_fails_the_preflight_at_once_without(dataset, tmp_path, capsys,
                                                                                                tls, monkeypatch):
    server_pem, ca_pem = tls
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with ScriptedChatServer(solver, tls_certfile=server_pem) as server:
        assert main(eval_args(dataset, tmp_path / "refused", server.base_url)) == 3
        assert server.requests == [] and server.preflight_requests == []
        [line] = error_lines(capsys.readouterr().err)
        assert "TLS certificate failed verification" in line and "SSL_CERT_FILE" in line and SECRET not in line

        monkeypatch.setenv("SSL_CERT_FILE", ca_pem)
        assert main(eval_args(dataset, tmp_path / "out", server.base_url)) == 0
        assert len(server.requests) == 8  # 4 episodes of a tool call and an answer, over TLS
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["overall"]["solved"] == 4


def test_dry_run_sends_the_tiny_request_and_no_preflight_skips_it(dataset, tmp_path, capsys):
    with ScriptedChatServer(solver) as server:
        assert main(eval_args(dataset, tmp_path / "dry", server.base_url, "--dry-run")) == 0
        assert len(server.preflight_requests) == 1 and server.requests == []
        assert server.preflight_requests[0]["max_tokens"] == 1
        assert main(eval_args(dataset, tmp_path / "out", server.base_url, "--no-preflight")) == 0
        assert len(server.preflight_requests) == 1 and len(server.requests) == 8
    assert not (tmp_path / "dry").exists()


# ------------------------------------------------------------------------------------- infrastructure rate
def test_too_many_infrastructure_errors_exit_4_after_writing_everything(dataset, tmp_path, capsys):
    records = list(load_dataset(dataset))
    broken = first_user_text({"messages": records[2]["prompt"]})

    def one_broken(request: dict) -> Reply:
        return Reply.error(500, message="shard down") if first_user_text(request) == broken else solver(request)

    out = tmp_path / "out"
    with ScriptedChatServer(one_broken) as server:
        code = main(eval_args(dataset, out, server.base_url, "--retry-budget", "0.05"))
    err = capsys.readouterr().err
    assert code == 4
    results = lines_of(out / "results.jsonl")
    assert len(results) == 4 and {path.name for path in out.iterdir()} >= {"summary.json", "report.html"}
    [failed] = [line for line in results if not line["success"]]
    assert failed["error_kind"] == "server_error" and "shard down" in failed["error"]
    assert all(line["error_kind"] is None or line["error_kind"] in ERROR_KINDS for line in results)
    [line] = error_lines(err)
    assert "1 of this run's 4 episodes" in line and "25.0%" in line and "--max-infra-error-rate 0.02" in line
    assert re.search(r"server_error: 1, e\.g\. HTTP 500 from .* shard down", err)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["this_run"]["reruns"] == 2  # the failing episode ran three times in all
    assert summary["overall"]["error_kinds"]["server_error"]["count"] == 1

    # the same share under a higher limit is a success
    with ScriptedChatServer(one_broken) as server:
        assert main(eval_args(dataset, tmp_path / "lenient", server.base_url, "--retry-budget", "0.05",
                              "--max-infra-error-rate", "0.5", "--rerun-failed", "0")) == 0


def test_every_episode_failing_without_preflight_exits_4_naming_the_cause(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(eval_args(dataset, out, f"http://127.0.0.1:{free_port()}/v1", "--no-preflight",
                          "--retry-budget", "0.05", "--rerun-failed", "1"))
    err = capsys.readouterr().err
    assert code == 4
    results = lines_of(out / "results.jsonl")
    assert len(results) == 4 and all(line["error_kind"] == "endpoint_unreachable" for line in results)
    assert "endpoint_unreachable: 4, e.g. APIConnectionError talking to" in err


def test_the_verdict_reads_the_run_not_the_whole_file():
    summary = {"overall": {"error_kinds": {}}, "this_run": {"episodes": 100, "infrastructure_errors": 2,
                                                            "infrastructure_error_rate": 0.02,
                                                            "max_infra_error_rate": 0.02,
                                                            "too_many_infrastructure_errors": False}}
    assert infrastructure_verdict(summary) == 0
    summary["this_run"].update(infrastructure_errors=3, infrastructure_error_rate=0.03,
                               too_many_infrastructure_errors=True)
    assert infrastructure_verdict(summary) == 4


# ---------------------------------------------------------------------------------------- usage and config
def test_usage_errors_exit_2_and_bad_values_exit_1_naming_the_flag(dataset, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(eval_args(dataset, tmp_path / "out", "http://127.0.0.1:9/v1", "--retry-budget", "soon"))
    assert caught.value.code == 2
    capsys.readouterr()
    for flag, value in (("--rerun-failed", "-1"), ("--max-infra-error-rate", "1.5"), ("--retry-budget", "-1")):
        assert main(eval_args(dataset, tmp_path / "out", "http://127.0.0.1:9/v1", flag, value)) == 1
        [line] = error_lines(capsys.readouterr().err)
        assert flag in line


def test_help_documents_the_exit_codes_and_the_new_flags(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for code, meaning in (("0", "done"), ("1", "a configuration or input error"), ("2", "usage"),
                          ("3", "preflight failed"), ("4", "too many infrastructure errors"), ("130", "interrupted")):
        assert f"{code} {meaning}" in text
    for flag, default in (("--retry-budget SECONDS", "600"), ("--retry-backoff SECONDS", "0.5"),
                          ("--rerun-failed N", "2"), ("--max-infra-error-rate RATE", "0.02")):
        entry = re.search(rf"{re.escape(flag)} .*?\(default: ([\d.]+)\)", text)
        assert entry and entry.group(1) == default, flag
    assert "--no-preflight" in text


def test_a_tool_config_its_class_rejects_fails_at_start_up(example_registry, dataset, tmp_path):
    from bootcamp_core import Tool, hookimpl
    from bootcamp_core.plugin.loader import Registry

    class StrictCalculator(Tool):
        name = "calculator"
        description = "checks its config"
        parameters = {"type": "object", "properties": {}}

        def __init__(self, **config):
            super().__init__(**config)
            if not isinstance(config.get("penalty", 0.0), float):
                raise TypeError(f"penalty must be a number, got {config['penalty']!r}")

    class Hooks:
        @hookimpl
        def bootcamp_register_tools(self, register):
            register(StrictCalculator)

    registry = Registry.from_entry_points(strict=True)
    registry.add_plugin(Hooks(), "strict")
    records = list(load_dataset(dataset))
    for record in records:
        record["extra_info"]["bootcamp"]["tools"] = ["strict/calculator"]
    write_records(tmp_path / "strict.jsonl", records)
    tool_config = tmp_path / "tools.yaml"
    tool_config.write_text("tools:\n  - class_name: strict/calculator\n    config:\n      penalty: lots\n")
    config = EvalConfig(dataset_path=tmp_path / "strict.jsonl", output_dir=tmp_path / "out",
                        tool_config=tool_config)
    with pytest.raises(ConfigError) as caught:
        run_evaluation(config, registry=registry, progress=False)
    message = str(caught.value)
    assert "\n" not in message and "strict/calculator" in message and "penalty must be a number" in message
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_error_kinds_are_one_documented_list():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for kind in ERROR_KINDS:
        assert f"`{kind}`" in readme, kind
