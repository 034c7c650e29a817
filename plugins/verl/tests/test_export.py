"""`bootcamp verl export`: the files main_ppo reads, checked with verl's own loaders and Hydra config."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from bootcamp_core import ConfigError
from bootcamp_verl.export import AGENT_NAME, ExportOptions, export_datasets

EXPORT_WITHOUT_VERL = (
    "import sys\n"
    "from bootcamp_verl.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "assert not [name for name in sys.modules if name == 'verl' or name.startswith(('verl.', 'torch'))], 'imported verl'\n"
    "sys.exit(code)\n"
)


def bootcamp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *args], check=False, capture_output=True, text=True,
                          timeout=300)


def test_the_command_writes_every_file_through_the_entry_point(datasets, tmp_path):
    out = tmp_path / "out"
    result = bootcamp("verl", "export", "--dataset-path", str(datasets.mixed_train), "--output-dir", str(out))
    assert result.returncode == 0, result.stderr
    names = sorted(path.name for path in out.iterdir())
    assert names == ["agent_loop_config.yaml", "mixed_train.parquet", "run_main_ppo.sh", "tool_config.yaml"]
    assert f"wrote {out / 'mixed_train.parquet'} (7 records)" in result.stdout
    # the counter's array parameter becomes JSON text, and the user is told
    assert "warning: tool mini/counter:" in result.stderr and "steps is offered as JSON text" in result.stderr
    assert os.access(out / "run_main_ppo.sh", os.X_OK)


def test_export_imports_no_verl(datasets, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", EXPORT_WITHOUT_VERL, "export", "--dataset-path", str(datasets.example_train),
         "--output-dir", str(tmp_path)], check=False, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr


def test_rows_name_their_agent_loop_and_tools_and_carry_no_nulls_for_tools(exported):
    rows = pq.read_table(exported.parquet_files[0]).to_pylist()
    assert [row["data_source"] for row in rows] == ["bootcamp/example"] * 4 + ["bootcamp/mini"] * 3
    assert {row["agent_name"] for row in rows} == {AGENT_NAME}
    for row in rows:
        extra = row["extra_info"]
        identity = json.loads(row["reward_model"]["ground_truth"])
        assert isinstance(identity, dict)
        # every tool of the export has kwargs in every row, the record's own identity as JSON text
        assert set(extra["tools_kwargs"]) == {"calculator", "counter"}
        for kwargs in extra["tools_kwargs"].values():
            assert json.loads(kwargs["create_kwargs"]["identity"]) == identity
        mine = ["calculator"] if row["data_source"] == "bootcamp/example" else ["counter"]
        assert extra["tool_selection"] == mine
        assert extra["bootcamp"]["tools"] == (["example/calculator"] if mine == ["calculator"] else ["mini/counter"])
        interaction = extra["interaction_kwargs"]
        if row["data_source"] == "bootcamp/example":
            assert interaction["name"] == "example/feedback" and json.loads(interaction["identity"]) == identity
        else:
            assert interaction is None
        assert row["prompt"][0]["role"] == "user" and row["prompt"][0]["content"]


def test_the_exported_parquet_reads_back_as_the_records_it_came_from(exported, datasets):
    """What was trained on can be evaluated: core's readers take the export (structs, JSON text, tool_selection)."""
    from bootcamp_core import GeneratedSample, read_records

    exported_samples = [GeneratedSample.from_record(record) for record in read_records(exported.parquet_files[0])]
    original = [GeneratedSample.from_record(record) for record in read_records(datasets.mixed_train)]
    assert [(s.data_source, s.identity, s.tools, s.tool_names, s.interaction, s.reward) for s in exported_samples] == [
        (s.data_source, s.identity, s.tools, s.tool_names, s.interaction, s.reward) for s in original]
    assert all(sample.versions for sample in exported_samples)


def test_tool_config_holds_each_tool_once_with_a_schema_verl_keeps_whole(exported):
    from verl.tools.schemas import OpenAIFunctionToolSchema

    config = yaml.safe_load(exported.tool_config.read_text())
    by_id = {entry["config"]["tool_id"]: entry for entry in config["tools"]}
    assert set(by_id) == {"example/calculator", "mini/counter"}
    for entry in config["tools"]:
        assert entry["class_name"] == "bootcamp_verl.tool.BootcampTool"
        assert entry["config"]["type"] == "native"
        parsed = OpenAIFunctionToolSchema.model_validate(entry["tool_schema"])
        # what verl hands the chat template is exactly what was written: nothing silently dropped
        assert parsed.model_dump(exclude_unset=True, exclude_none=True) == entry["tool_schema"]
    counter = by_id["mini/counter"]
    assert counter["config"]["json_parameters"] == ["steps"]
    steps = counter["tool_schema"]["function"]["parameters"]["properties"]["steps"]
    assert steps["type"] == "string" and '"items": {"type": "integer"}' in steps["description"]
    assert "json_parameters" not in by_id["example/calculator"]["config"]


def test_agent_loop_config_names_our_loop(exported):
    assert yaml.safe_load(exported.agent_loop_config.read_text()) == [
        {"name": AGENT_NAME, "_target_": "bootcamp_verl.agent_loop.BootcampAgentLoop"}
    ]


def exported_overrides(script: Path, tmp_path: Path, *extra: str, env: dict | None = None) -> list[str]:
    """The arguments run_main_ppo.sh gives python, caught by a stand-in interpreter that prints them."""
    shim = tmp_path / "print-args"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "
                    "'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\"\n")
    shim.chmod(0o755)
    result = subprocess.run(["bash", str(script), *extra], check=False, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHON": str(shim), **(env or {})})
    assert result.returncode == 0, result.stderr
    arguments = json.loads(result.stdout)
    assert arguments[:2] == ["-m", "verl.trainer.main_ppo"]
    return arguments[2:]


@pytest.mark.filterwarnings("ignore:Disabled critic")  # verl's note that GRPO needs no critic
def test_the_script_composes_with_verls_config(exported, tmp_path, main_ppo_config):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    overrides = exported_overrides(exported.script, tmp_path, "trainer.n_gpus_per_node=4",
                                   env={"MODEL_PATH": "/models/qwen", "ROLLOUT_NAME": "vllm"})
    config = main_ppo_config(overrides)
    here = exported.script.parent
    rollout = config.actor_rollout_ref.rollout
    assert list(config.data.train_files) == [str(exported.parquet_files[0])]
    assert list(config.data.val_files) == [str(here / "example_test.parquet")]
    assert config.actor_rollout_ref.model.path == "/models/qwen" and rollout.name == "vllm"
    assert rollout.multi_turn.enable is True and rollout.multi_turn.format == "hermes"
    assert rollout.multi_turn.tool_config_path == str(exported.tool_config)
    assert config.data.tool_config_path == str(exported.tool_config)  # verl's length filter sees our schemas
    assert rollout.agent.agent_loop_config_path == str(exported.agent_loop_config)
    assert rollout.agent.default_agent_loop == AGENT_NAME
    # the turn limits bootcamp eval uses by default, every call of a turn answered, tool output not cut at 256
    assert (rollout.multi_turn.max_assistant_turns, rollout.multi_turn.max_user_turns) == (10, 20)
    assert rollout.multi_turn.max_parallel_calls == 20 and rollout.multi_turn.max_tool_response_length == 16384
    assert config.reward.custom_reward_function.path == "pkg://bootcamp_verl.reward"
    assert config.reward.custom_reward_function.name == "compute_score"
    # the reward manager verl's reward worker loads: ours, by module path (no registry needed in any process)
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    from bootcamp_verl.reward_manager import MANAGER_NAME, MANAGER_PATH, BootcampRewardManager

    assert (config.reward.reward_manager.module.path, config.reward.reward_manager.name) == (MANAGER_PATH, MANAGER_NAME)
    assert resolve_reward_manager_cls(config) is BootcampRewardManager
    assert config.algorithm.adv_estimator == "bootcamp_grpo" and rollout.n == 8 and config.trainer.n_gpus_per_node == 4
    assert config.data.filter_overlong_prompts is True
    # 7 training records: a batch of 4 prompts, the mini-batch no larger
    assert (config.data.train_batch_size, config.actor_rollout_ref.actor.ppo_mini_batch_size) == (4, 4)
    assert (rollout.prompt_length, rollout.response_length) == (exported.sizes["data.max_prompt_length"], 4096)
    for path in (rollout.multi_turn.tool_config_path, rollout.agent.agent_loop_config_path, *config.data.train_files):
        assert Path(path).is_file()
    # verl's own checks, as main_ppo runs them before starting anything
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    assert omega_conf_to_dataclass(rollout).multi_turn.max_user_turns == 20


def test_limits_and_format_reach_the_script(datasets, tmp_path, main_ppo_config):
    options = ExportOptions(max_assistant_turns=3, max_user_turns=5, max_parallel_calls=2,
                            max_tool_response_length=999, tool_call_format="qwen3_coder")
    result = export_datasets([datasets.example_train], tmp_path / "out", options=options)
    multi_turn = main_ppo_config(exported_overrides(result.script, tmp_path)).actor_rollout_ref.rollout.multi_turn
    assert (multi_turn.max_assistant_turns, multi_turn.max_user_turns, multi_turn.max_parallel_calls) == (3, 5, 2)
    assert multi_turn.max_tool_response_length == 999 and multi_turn.format == "qwen3_coder"


def test_two_tools_with_one_name_are_an_error_naming_both(datasets, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as caught:
        export_datasets([datasets.example_train, datasets.clash_train], out)
    assert "clash/calculator" in str(caught.value) and "example/calculator" in str(caught.value)
    assert "'calculator'" in str(caught.value)
    assert not out.exists()
    result = bootcamp("verl", "export", "--dataset-path", str(datasets.example_train), "--dataset-path",
                      str(datasets.clash_train), "--output-dir", str(out))
    assert result.returncode == 1 and result.stderr.startswith("error: tools ") and "Traceback" not in result.stderr
    assert not out.exists()


def test_strict_schemas_refuse_a_parameter_with_structure(datasets, tmp_path):
    out = tmp_path / "out"
    result = bootcamp("verl", "export", "--dataset-path", str(datasets.mini_train), "--output-dir", str(out),
                      "--strict-schemas")
    assert result.returncode == 1, result.stdout
    assert "error: tool mini/counter:" in result.stderr and "steps" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("content, expected", [
    ('{"data_source": "openai/gsm8k", "prompt": [], "reward_model": {"ground_truth": "1"}}\n',
     "bad.jsonl: record 4: record has no extra_info.bootcamp"),
    ("not json\n", "not valid JSON"),
])
def test_records_that_are_not_a_bootcamps_are_refused_before_anything_is_written(datasets, tmp_path, content,
                                                                                   expected):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(datasets.example_train.read_text() + content)
    out = tmp_path / "out"
    result = bootcamp("verl", "export", "--dataset-path", str(bad), "--output-dir", str(out))
    assert result.returncode == 1 and expected in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_flags_are_checked(datasets, tmp_path):
    missing = bootcamp("verl", "export", "--output-dir", str(tmp_path))
    assert missing.returncode == 1 and "--dataset-path is required" in missing.stderr
    nothing = bootcamp("verl", "export", "--dataset-path", str(tmp_path / "nope.jsonl"), "--output-dir", str(tmp_path))
    assert nothing.returncode == 1 and "no such file" in nothing.stderr
    zero = bootcamp("verl", "export", "--dataset-path", str(datasets.example_train), "--output-dir", str(tmp_path),
                    "--max-user-turns", "0")
    assert zero.returncode == 1 and "--max-user-turns must be at least 1" in zero.stderr


def test_component_configs_reach_the_tool_and_agent_loop_configs(datasets, tmp_path):
    tool_config = tmp_path / "tools.yaml"
    tool_config.write_text("tools:\n  - class_name: example/calculator\n    config: {wasted_call_penalty: 0.5}\n")
    interaction_config = tmp_path / "interactions.yaml"
    interaction_config.write_text("interaction:\n  - class_name: example/feedback\n    config: {max_attempts: 1}\n")
    out = tmp_path / "out"
    result = bootcamp("verl", "export", "--dataset-path", str(datasets.example_train), "--output-dir", str(out),
                      "--tool-config", str(tool_config), "--interaction-config", str(interaction_config),
                      "--system-prompt", "Be exact.")
    assert result.returncode == 0, result.stderr
    tools = yaml.safe_load((out / "tool_config.yaml").read_text())["tools"]
    assert tools[0]["config"]["tool_config"] == {"wasted_call_penalty": 0.5}
    loop = yaml.safe_load((out / "agent_loop_config.yaml").read_text())[0]
    assert loop["interaction_config"] == {"example/feedback": {"max_attempts": 1}}
    prompt = pq.read_table(out / "example_train.parquet").to_pylist()[0]["prompt"]
    assert prompt[0] == {"role": "system", "content": "Be exact."} and prompt[1]["role"] == "user"


def test_an_extended_record_schema_reaches_the_export_and_reads_back(datasets, tmp_path):
    """One field added to the schema value goes through JSONL, Parquet and the verl export; no other code changes."""
    from bootcamp_core import RECORD_SCHEMA, RecordField, read_records, write_records
    from bootcamp_verl.export import verl_record_schema

    schema = RECORD_SCHEMA.extend("extra_info", RecordField("difficulty", "integer"))
    records = []
    for number, record in enumerate(read_records(datasets.mixed_train)):
        record["extra_info"]["difficulty"] = number
        records.append(record)
    for name in ("extended.jsonl", "extended.parquet"):
        write_records(tmp_path / name, records, schema=schema)
        assert list(read_records(tmp_path / name, schema=schema)) == records

    result = export_datasets([tmp_path / "extended.parquet"], tmp_path / "out",
                             options=ExportOptions(record_schema=schema))
    rows = pq.read_table(result.parquet_files[0]).to_pylist()
    assert [row["extra_info"]["difficulty"] for row in rows] == list(range(len(records)))
    exported = list(read_records(result.parquet_files[0], schema=verl_record_schema(schema)))
    assert [record["extra_info"]["difficulty"] for record in exported] == list(range(len(records)))
    for original, back in zip(records, exported, strict=True):
        assert back["reward_model"] == original["reward_model"]
        assert back["extra_info"]["bootcamp"] == original["extra_info"]["bootcamp"]
        assert back["extra_info"]["tool_selection"] == list(original["extra_info"]["tools_kwargs"])
        assert back["agent_name"] == AGENT_NAME
    # without the extension, the export refuses the field instead of dropping it
    with pytest.raises(ConfigError, match="difficulty"):
        export_datasets([tmp_path / "extended.jsonl"], tmp_path / "lossy")
    assert not (tmp_path / "lossy").exists()
