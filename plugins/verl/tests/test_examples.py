"""The GRPO recipe in examples/: its Hydra overrides, as it passes them, composed with verl's config on CPU."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

RECIPE = Path(__file__).resolve().parents[1] / "examples" / "grpo" / "run_grpo.sh"


def run_recipe(tmp_path: Path, *args: str, python: str | None = None) -> subprocess.CompletedProcess:
    """The recipe on a small dataset; ``python`` stands in for the interpreter that runs main_ppo."""
    environment = {
        **os.environ,
        "BOOTCAMPS": "example", "SPLITS": "train:4,test:2", "WORK": str(tmp_path / "work"),
        "MODEL_PATH": "/models/Qwen2.5-3B-Instruct", "PYTHON": python or sys.executable,
        # the `bootcamp` command of this environment
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    return subprocess.run(["bash", str(RECIPE), *args], check=False, capture_output=True, text=True, timeout=600,
                          env=environment)


@pytest.mark.filterwarnings("ignore:Disabled critic")  # verl's note that GRPO needs no critic
def test_the_grpo_recipe_composes_and_passes_verls_checks(tmp_path, main_ppo_config):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    shim = tmp_path / "print-args"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "
                    "'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\"\n")
    shim.chmod(0o755)
    result = run_recipe(tmp_path, "trainer.total_epochs=1", python=str(shim))
    assert result.returncode == 0, result.stderr
    arguments = json.loads(result.stdout.strip().splitlines()[-1])
    assert arguments[:2] == ["-m", "verl.trainer.main_ppo"]

    config = main_ppo_config(arguments[2:])
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    rollout = config.actor_rollout_ref.rollout
    assert config.algorithm.adv_estimator == "bootcamp_grpo" and rollout.n == 8 and config.data.train_batch_size == 64
    # the prompt length the export measured from the records, the reward manager it selects
    assert config.data.max_prompt_length == rollout.prompt_length
    assert config.reward.reward_manager.name == "BootcampRewardManager"
    assert config.actor_rollout_ref.actor.use_kl_loss is True and need_reference_policy(config)
    assert config.trainer.total_epochs == 1  # the caller's override wins
    assert config.actor_rollout_ref.model.path == "/models/Qwen2.5-3B-Instruct"
    work = tmp_path / "work" / "verl"
    assert list(config.data.train_files) == [str(work / "all_train.parquet")]
    assert rollout.multi_turn.enable is True and rollout.multi_turn.tool_config_path == str(work / "tool_config.yaml")
    assert rollout.agent.agent_loop_config_path == str(work / "agent_loop_config.yaml")
    assert config.reward.custom_reward_function.path == "pkg://bootcamp_verl.reward"


@pytest.mark.slow
def test_main_ppo_itself_parses_the_recipe(tmp_path):
    # Hydra's --cfg job: main_ppo composes and prints its config, then stops before starting anything
    result = run_recipe(tmp_path, "--cfg", "job")
    assert result.returncode == 0, result.stderr[-3000:]
    config = yaml.safe_load(result.stdout[result.stdout.index("actor_rollout_ref:"):])
    rollout = config["actor_rollout_ref"]["rollout"]
    assert rollout["multi_turn"]["enable"] is True and rollout["multi_turn"]["max_user_turns"] == 20
    assert rollout["agent"]["default_agent_loop"] == "bootcamp_agent"
    assert config["reward"]["custom_reward_function"]["path"] == "pkg://bootcamp_verl.reward"
    assert config["trainer"]["experiment_name"] == "grpo_example"
