"""A run that starts as exported: prompt lengths measured from the records with their tool schemas, batches the
records fill, overlong prompts dropped, the estimator that keeps failures out, and the imports main_ppo needs (the
extras that bring them, and the export's one-line note when they are missing)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bootcamp_verl.export import BYTES_PER_TOKEN, ExportOptions, export_datasets, missing_imports

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def script_overrides(script: Path) -> list[str]:
    """The Hydra overrides run_main_ppo.sh passes, as bash expands them (HERE, MODEL_PATH, ROLLOUT_NAME)."""
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    shim = script.parent / "print-args"
    shim.write_text(f"#!/bin/sh\nexec '{sys.executable}' -c '{code}' \"$@\"\n")
    shim.chmod(0o755)
    result = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "PYTHON": str(shim)})
    return json.loads(result.stdout)[2:]


@pytest.fixture(scope="module")
def measured(datasets, model_dir, tmp_path_factory):
    """The mixed dataset exported with the test model's tokenizer on disk, and once without one."""
    with_tokenizer = export_datasets([datasets.mixed_train], tmp_path_factory.mktemp("tokenizer"),
                                     options=ExportOptions(model_path=str(model_dir)))
    without = export_datasets([datasets.mixed_train], tmp_path_factory.mktemp("bytes"))
    return with_tokenizer, without


def verl_prompt_lengths(dataset, tokenizer) -> list[int]:
    """Every prompt's length as verl's RLHFDataset counts it for its filter: chat template, every tool schema."""
    from verl.utils.tokenizer import normalize_token_ids

    return [len(normalize_token_ids(tokenizer.apply_chat_template(row["prompt"], tools=dataset.tool_schemas,
                                                                  add_generation_prompt=True, tokenize=True)))
            for row in dataset.dataframe]


@pytest.mark.filterwarnings("ignore:Disabled critic")
def test_the_exported_overrides_compose_with_verls_config_and_every_prompt_fits(measured, tokenizer,
                                                                                 main_ppo_config):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    with_tokenizer, without = measured
    assert (with_tokenizer.measured_with, without.measured_with) == ("tokenizer", "bytes")
    lengths = []
    for result in measured:
        config = main_ppo_config(script_overrides(result.script))
        data = config.data
        assert data.filter_overlong_prompts is True and config.algorithm.adv_estimator == "bootcamp_grpo"
        # verl's own filter, on: it drops nothing, and the records fill at least one batch (its dataloader drops
        # an incomplete last batch)
        dataset = RLHFDataset([str(path) for path in result.parquet_files], tokenizer, data)
        assert len(dataset) == 7
        lengths = verl_prompt_lengths(dataset, tokenizer)
        assert data.max_prompt_length == result.sizes["data.max_prompt_length"] >= max(lengths)
        assert config.actor_rollout_ref.rollout.prompt_length == data.max_prompt_length
        assert (data.max_response_length, data.train_batch_size) == (4096, 4)
        assert config.actor_rollout_ref.actor.ppo_mini_batch_size == 4
        assert len(dataset) // data.train_batch_size >= 1
        validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    # the tokenizer's measure is tight (the next multiple of 64); the bound is larger but never smaller
    assert with_tokenizer.sizes["data.max_prompt_length"] - max(lengths) < 64
    assert without.sizes["data.max_prompt_length"] >= with_tokenizer.sizes["data.max_prompt_length"]
    assert BYTES_PER_TOKEN == 1


def test_the_prompt_length_grows_with_the_tool_schemas(datasets, tmp_path, model_dir):
    """A longer system prompt moves the measured length: it is measured, not a constant."""
    base = export_datasets([datasets.example_train], tmp_path / "a", options=ExportOptions(model_path=str(model_dir)))
    longer = export_datasets([datasets.example_train], tmp_path / "b",
                             options=ExportOptions(model_path=str(model_dir), system_prompt="x" * 300))
    grown = longer.sizes["data.max_prompt_length"] - base.sizes["data.max_prompt_length"]
    assert 256 <= grown <= 384


def test_given_batch_and_response_sizes_win(datasets, tmp_path):
    result = export_datasets([datasets.example_train], tmp_path,
                             options=ExportOptions(train_batch_size=3, max_response_length=512))
    assert result.sizes["data.train_batch_size"] == 3 and result.sizes["data.max_response_length"] == 512
    assert result.sizes["actor_rollout_ref.actor.ppo_mini_batch_size"] == 3
    assert '"data.train_batch_size=3"' in result.script.read_text()


def test_the_export_says_in_one_line_what_to_install(datasets, tmp_path):
    missing = missing_imports("vllm")
    # what this test environment has and lacks: verl, torch and ray are installed, verl's extras are not
    assert {"verl", "torch", "ray"}.isdisjoint(missing) and "vllm" in missing
    result = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "verl", "export", "--dataset-path",
                             str(datasets.example_train), "--output-dir", str(tmp_path), "--rollout-name", "vllm"],
                            check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if "main_ppo cannot start" in line]
    assert len(notes) == 1 and notes[0].startswith("warning: ")
    assert 'pip install "bootcamp-verl[vllm]"' in notes[0] and ", ".join(missing) in notes[0]


def test_the_backend_extras_pull_verls_own_extras_with_what_main_ppo_imports():
    """The metadata only: bootcamp-verl[vllm] and [sglang] are verl's extras, which bring the engine and
    TransferQueue (what ``trainer.use_v1``, verl's default, imports)."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    verl_requires = importlib.metadata.requires("verl") or []

    def requirements(extra: str) -> list[str]:
        return [line.split(";")[0].strip() for line in verl_requires if f'extra == "{extra}"' in line]

    for backend, engine in (("vllm", "vllm=="), ("sglang", "sglang==")):
        assert extras[backend] == [f"verl[{backend}]>=0.9,<0.10"]
        pulled = requirements(backend)
        assert any(requirement.startswith(engine) for requirement in pulled)
        assert "verl[verl-core]" in pulled
        assert any(requirement.startswith("TransferQueue") for requirement in requirements("verl-core"))
