"""The CLI under bad input and interruption: one clear line, nothing finished lost, nothing half-written left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bootcamp_core import Reward
from bootcamp_core.data.config import load_registry_file
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.data.records import normalize_record
from bootcamp_core.testing import write_distribution


def bootcamp(*args: str, env: dict | None = None, path: Path | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    if path is not None:
        environment["PYTHONPATH"] = str(path)
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], capture_output=True, text=True,
                          env=environment, timeout=300)


def assert_one_clear_line(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_sigterm_removes_unfinished_files_and_keeps_finished_ones(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    finished = out / "example_train.jsonl"
    finished.write_text("an earlier, complete file\n")
    for workers in ("1", "2"):
        process = subprocess.Popen(
            [sys.executable, "-m", "bootcamp_core.cli.main", "generate", "--bootcamp", "example", "--split-samples",
             "train:2000000", "--gen-parquet", "--max-workers", workers, "--output-dir", str(out), "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 60
        while not any(".tmp-" in path.name or path.name.startswith(".parts-") for path in out.iterdir()):
            assert time.monotonic() < deadline and process.poll() is None, "generation never started writing"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        # 130, or death by SIGINT when the interrupt is re-raised at interpreter exit: both say "interrupted"
        assert process.returncode in (130, -signal.SIGINT), stderr
        assert "interrupted" in stderr and "Traceback" not in stderr
        assert sorted(path.name for path in out.iterdir()) == ["example_train.jsonl"]
        assert finished.read_text() == "an earlier, complete file\n"


def test_an_output_dir_that_is_a_file_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    assert_one_clear_line(bootcamp("generate", "--bootcamp", "example", "--output-dir", str(blocker)), str(blocker))
    assert_one_clear_line(bootcamp("generate", "--bootcamp", "example", "--output-dir", str(blocker / "sub")))


def test_an_empty_split_string_is_refused_not_replaced_by_defaults(tmp_path: Path):
    result = bootcamp("generate", "--bootcamp", "example", "--split-samples", "", "--output-dir", str(tmp_path))
    assert_one_clear_line(result, "no splits")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_allow_list_says_so():
    result = bootcamp("generate", "--all", env={"BOOTCAMP_LOAD_PLUGINS": ""})
    assert_one_clear_line(result, "BOOTCAMP_LOAD_PLUGINS")


def test_a_plugin_command_that_cannot_import_is_one_line(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-extra", "0.2", entry_points={"bootcamp.commands": {"extra": "missing_mod:main"}})
    result = bootcamp("extra", "--flag", path=site)
    assert_one_clear_line(result, 'Plugin command "extra" (bootcamp-extra 0.2)', "missing_mod")


def test_broken_yaml_names_file_line_and_where_the_broken_part_starts(tmp_path: Path):
    config = tmp_path / "broken_instruction_config.yaml"
    config.write_text("instruction_generators:\n  level_1:\n    config: {min_value: 100,\n\nglobal_config: {}\n")
    result = bootcamp("generate", "--instruction-config", str(config), "--output-dir", str(tmp_path / "o"))
    assert_one_clear_line(result, f"{config}:", "broken YAML", "line 3")


def test_registry_lines_in_the_original_form_with_one_count_per_line(tmp_path: Path):
    registry = tmp_path / "registry.jsonl"
    registry.write_text(
        json.dumps({"bootcamp_name": "example", "sample_number": 4}) + "\n"
        + json.dumps({"bootcamp_name": "example", "sample_number": 3, "split": "test"}) + "\n"
        + json.dumps({"bootcamp_name": "example", "sample_number": "train:x"}) + "\n"
    )
    try:
        load_registry_file(registry)
    except ConfigError as error:
        assert f"{registry}:3:" in str(error)
    else:
        raise AssertionError("a bad sample_number was accepted")
    registry.write_text("\n".join(registry.read_text().splitlines()[:2]) + "\n")
    entries = load_registry_file(registry)
    assert [entry.overrides["split_samples"] for entry in entries] == [{"train": 4}, {"test": 3}]


def test_identities_given_as_text_are_decoded_only_when_they_are_json_objects():
    def record(identity):
        return {"reward_model": {"ground_truth": identity}, "extra_info": {}}

    assert normalize_record(record('{"a": 1}'))["reward_model"]["ground_truth"] == {"a": 1}
    for text in ("42", "42 apples", "[1, 2]", ""):
        assert normalize_record(record(text))["reward_model"]["ground_truth"] == text


def test_verify_score_never_raises_even_when_a_subclass_skips_base_init():
    class Careless(Reward):
        name = "careless"

        def __init__(self, **config):  # no super().__init__()
            self.config = config

        def extract_output(self, output):
            raise RuntimeError("bug")

    reward = Careless()
    assert reward.verify_score("anything", {}) == 0.0
    assert "RuntimeError: bug" in reward.errors[-1]
