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
from bootcamp_core.data.records import normalize_record
from bootcamp_core.plugin.errors import ConfigError
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


def test_a_pool_worker_killed_mid_run_is_one_line_and_leaves_no_files(tmp_path: Path):
    # the other worker may be waiting for the dead one's chunk to be written: the run must still end
    out = tmp_path / "out"
    out.mkdir()
    finished = out / "example_train.jsonl"
    finished.write_text("an earlier, complete file\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "bootcamp_core.cli.main", "generate", "--bootcamp", "example", "--split-samples",
         "train:2000000", "--max-workers", "2", "--output-dir", str(out), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    deadline = time.monotonic() + 60
    while len(workers := children.read_text().split()) < 2 or not any(".tmp-" in p.name for p in out.iterdir()):
        assert time.monotonic() < deadline and process.poll() is None, "the pool never started"
        time.sleep(0.05)
    time.sleep(0.5)  # both busy with their first chunks
    os.kill(int(workers[-1]), signal.SIGKILL)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "worker process died" in errors[0] and "Traceback" not in stderr, stderr
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


# ----------------------------------------------------------------------------------- one way to add a command
GREET_COMMAND = """
import argparse

from bootcamp_core import ConfigError, add_flag

open(MARKER, "w").close()

HELP = "greet someone"
DESCRIPTION = "Greet someone, loudly if asked."


def add_arguments(parser):
    add_flag(parser, "--target-name", default="world", help="who to greet")
    add_flag(parser, "--times-to-repeat", type=int, default=1, field="repeats", help="how often")


def run(args):
    if args.times_to_repeat < 1:
        raise ConfigError(f"repeats must be at least 1, got {args.times_to_repeat}", field="repeats")
    if args.target_name == "nobody":
        raise ConfigError("nobody has no target_name", field="target_name")
    print(" ".join([f"hello {args.target_name}"] * args.times_to_repeat))
    return 0
"""


def greeting_site(tmp_path: Path) -> tuple[Path, Path]:
    site, marker = tmp_path / "site", tmp_path / "imported"
    write_distribution(site, "bootcamp-greet", "0.3", entry_points={"bootcamp.commands": {"greet": "greet_cmd"}},
                       modules={"greet_cmd.py": f"MARKER = {str(marker)!r}\n" + GREET_COMMAND})
    return site, marker


def test_a_plugin_command_module_is_listed_unimported_and_runs_like_ours(tmp_path: Path):
    site, marker = greeting_site(tmp_path)
    listing = bootcamp("--help", path=site)
    assert listing.returncode == 0 and "greet" in listing.stdout and "bootcamp-greet 0.3" in listing.stdout
    assert not marker.exists()
    own_help = bootcamp("greet", "--help", path=site)
    assert "Greet someone, loudly if asked." in own_help.stdout and "--target-name" in own_help.stdout
    assert "--target_name" not in own_help.stdout  # the underscore alias works, unlisted
    greeted = bootcamp("greet", "--target_name", "you", "--times-to-repeat", "2", path=site)
    assert (greeted.returncode, greeted.stdout.strip()) == (0, "hello you hello you")
    assert marker.exists()


def test_an_error_about_a_field_names_the_commands_flag_for_it(tmp_path: Path):
    site, _ = greeting_site(tmp_path)
    assert_one_clear_line(bootcamp("greet", "--times-to-repeat", "0", path=site),
                          "error: --times-to-repeat must be at least 1, got 0")
    # by the flag's dest when the field has the dest's name; a path or a word inside another name is left alone
    result = bootcamp("greet", "--target-name", "nobody", path=site)
    assert_one_clear_line(result, "error: nobody has no --target-name")


def test_library_errors_about_fields_name_the_flags_of_bootcamp_serve():
    result = bootcamp("serve", "--worker-timeout", "1", "--heartbeat-interval", "2")
    assert_one_clear_line(result, "error: --worker-timeout must be longer than --heartbeat-interval")
    result = bootcamp("serve", "--mode", "master", "--bootcamps", "example")
    assert_one_clear_line(result,
                          "--tool-config, --bootcamps and --bootcamp-registry are for workers (or --mode unified)")
    assert_one_clear_line(bootcamp("serve", "--idle-timeout", "0"), "error: --idle-timeout must be positive")


def test_the_same_error_from_the_library_names_the_field():
    from bootcamp_core.serve import ServeConfig

    try:
        ServeConfig(worker_timeout_s=1, heartbeat_interval_s=2)
    except ConfigError as error:
        assert error.field == "worker_timeout_s" and "--" not in str(error)
    else:
        raise AssertionError("a worker timeout below the heartbeat interval was accepted")


def test_flags_are_never_abbreviated():
    # --dataset matched both --dataset-path and its --dataset_path alias: ambiguous, now simply unknown
    result = bootcamp("eval", "--dataset", "x.jsonl")
    assert result.returncode == 2 and "unrecognized arguments: --dataset" in result.stderr
    result = bootcamp("generate", "--bootcamp", "example", "--split", "train:2")
    assert result.returncode == 2 and "unrecognized arguments: --split" in result.stderr


def test_every_command_is_an_entry_point_module_with_plain_text_help():
    import argparse
    from importlib import metadata

    from bootcamp_core.cli.main import build_parser

    modules = {path.stem for path in (Path(__file__).parents[1] / "src" / "bootcamp_core" / "cli").glob("*.py")}
    registered = {entry.name: entry.value for entry in metadata.entry_points(group="bootcamp.commands")
                  if entry.value.startswith("bootcamp_core.")}
    assert registered == {name: f"bootcamp_core.cli.{name}" for name in modules - {"__init__", "__main__", "main",
                                                                                     "helpers"}}
    parsers = build_parser().get_default("builtin_commands")
    assert sorted(parsers) == sorted(registered)
    for name, parser in parsers.items():
        assert parser.allow_abbrev is False, name
        text = " ".join(parser.format_help().split())  # help is wrapped to the terminal: compare words
        for markup in ("``", ":func:", ":mod:", ":class:", ":data:"):
            assert markup not in text, f"bootcamp {name} --help shows {markup}"
        if "original framework" in text:
            assert "InternBootcamp" in text, f"bootcamp {name} --help cites the original framework without its name"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert all(sub.allow_abbrev is False for sub in action.choices.values()), name
