"""Curricula through reasoning-gym's own definitions, and the shipped instruction configs."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import bootcamp_reasoning_gym
import pytest
import yaml
from bootcamp_reasoning_gym import datasets

from bootcamp_core import ConfigError
from bootcamp_core.testing import generate_records

CONFIGS = Path(bootcamp_reasoning_gym.__file__).parent / "configs"


def groups(path):
    return yaml.safe_load(path.read_text())["instruction_generators"]


def shares_by_family(path):
    shares = defaultdict(float)
    for group in groups(path).values():
        shares[datasets.family(group["class_name"].split("/", 1)[1])] += group["generation_ratio"]
    return dict(shares)


def test_levels_come_from_the_datasets_curriculum_and_explicit_keys_win(registry):
    easy = registry.component("generator", "reasoning_gym/chain_sum", {"level": 0})
    hard = registry.component("generator", "reasoning_gym/chain_sum", {"level": 4, "allow_negation": True})
    assert easy.dataset_config["max_terms"] < hard.dataset_config["max_terms"]
    assert easy.dataset_config["max_digits"] < hard.dataset_config["max_digits"]
    assert hard.dataset_config["allow_negation"] is True and "level" not in hard.dataset_config
    one = registry.component("generator", "reasoning_gym/chain_sum", {"levels": {"num_terms": 1}})
    assert one.dataset_config["max_terms"] == easy.dataset_config["max_terms"] + 1
    assert one.dataset_config["max_digits"] == easy.dataset_config["max_digits"]
    identity = hard.case_generator(random.Random(0))
    assert identity["config"] == hard.dataset_config  # the reward rebuilds exactly this dataset
    terms = identity["entry"]["metadata"]["num_terms"]
    assert hard.dataset_config["min_terms"] <= terms <= hard.dataset_config["max_terms"]
    reward = registry.component("reward", "reasoning_gym")
    assert reward.verify_score(f"\\boxed{{{identity['entry']['answer']}}}", identity) == 1.0


@pytest.mark.parametrize(("name", "config", "field"), [
    ("gsm_symbolic", {"level": 1}, "level"),
    ("chain_sum", {"level": -1}, "level"),
    ("chain_sum", {"level": True}, "level"),
    ("chain_sum", {"levels": {"no_such_attribute": 1}}, "levels"),
    ("chain_sum", {"levels": {"num_terms": 99}}, "levels"),
    ("chain_sum", {"levels": [1]}, "levels"),
])
def test_a_bad_level_is_a_config_error_naming_the_field(registry, name, config, field):
    with pytest.raises(ConfigError) as error:
        registry.component("generator", f"reasoning_gym/{name}", config)
    assert error.value.field == field and f"reasoning_gym/{name}" in str(error.value)


def test_default_config_is_one_dataset_per_family_in_equal_shares():
    shares = shares_by_family(CONFIGS / "default.yaml")
    assert set(shares) == set(datasets.families())
    assert set(shares.values()) == {1}


def test_example_configs_cover_a_task_a_family_and_every_task():
    everything = {group["class_name"] for group in groups(CONFIGS / "examples" / "all_tasks.yaml").values()}
    assert everything == {f"reasoning_gym/{name}" for name in datasets.dataset_names()}
    shares = shares_by_family(CONFIGS / "examples" / "all_tasks.yaml")
    assert max(shares.values()) - min(shares.values()) < 1e-4
    family = {group["class_name"] for group in groups(CONFIGS / "examples" / "family.yaml").values()}
    assert family == {f"reasoning_gym/{name}" for name in datasets.families()["arithmetic"]}
    single = {group["class_name"] for group in groups(CONFIGS / "examples" / "single_task.yaml").values()}
    assert single == {"reasoning_gym/chain_sum"}


@pytest.mark.parametrize("example", ["single_task", "family"])
def test_example_configs_generate_records_the_reference_agent_solves(registry, example):
    records = generate_records("reasoning_gym", registry, instruction_config=CONFIGS / "examples" / f"{example}.yaml",
                               overrides={"split_samples": "test:12"})
    reward = registry.component("reward", "reasoning_gym")
    assert len(records) == 12
    for record in records:
        identity = record["reward_model"]["ground_truth"]
        assert reward.verify_score(f"\\boxed{{{identity['entry']['answer']}}}", identity) == 1.0
