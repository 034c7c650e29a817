"""Instruction configs, split specs, tool / interaction config files and batch registries, in their original formats."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bootcamp_example
from bootcamp_core import ConfigError
from bootcamp_core.data import config as config_module
from bootcamp_core.data.config import (
    DEFAULT_SEED,
    DEFAULT_SPLIT_SAMPLES,
    allocate,
    config_stem,
    load_component_config,
    load_instruction_config,
    load_registry_file,
    parse_instruction_config,
    parse_split_samples,
)

EXAMPLE_DEFAULT = Path(bootcamp_example.__file__).parent / "configs" / "default.yaml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "bootcamp_core" and record.levelno == logging.WARNING]


# -------------------------------------------------------------------------------------------- split samples
@pytest.mark.parametrize(
    "spec, expected",
    [
        ("train:1000,test:100", {"train": 1000, "test": 100}),
        ("test:3,train:4", {"test": 3, "train": 4}),
        (" train : 5 , valid-2:0 , test_b:7 ,", {"train": 5, "valid-2": 0, "test_b": 7}),
        ({"valid": 2, "train": 7}, {"valid": 2, "train": 7}),
        ({"train": "12", "test": 3.0}, {"train": 12, "test": 3}),
    ],
)
def test_split_samples_parse_in_the_order_given(spec, expected):
    parsed = parse_split_samples(spec)
    assert parsed == expected
    assert list(parsed) == list(expected)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("train", '"train" has no count. Write split:count pairs'),
        ("train:x", "count 'x' of split \"train\" is not an integer"),
        ("train:1.5", "count '1.5' of split \"train\" is not an integer"),
        ("train:-1", 'count of split "train" is negative'),
        ("", 'no splits. Write e.g. "train:1000,test:100"'),
        (" , ", "no splits"),
        ("train:1,train:2", 'split "train" is given twice'),
        (":5", "bad split name ''"),
        ("tr ain:5", "bad split name 'tr ain'"),
        ({"train": 2.5}, 'count 2.5 of split "train" is not an integer'),
        ({"train": True}, 'count True of split "train" is not an integer'),
        ({}, "no splits"),
        (1000, 'split samples must be a string like "train:1000,test:100", got 1000'),
    ],
)
def test_bad_split_samples_are_config_errors_that_say_what_is_wrong(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_split_samples(spec)


# ------------------------------------------------------------------------------------------------- allocate
@settings(deadline=None, max_examples=300)
@given(
    total=st.integers(min_value=0, max_value=10**7),
    weights=st.lists(st.floats(min_value=1e-3, max_value=1e3, allow_nan=False), min_size=1, max_size=12),
)
def test_allocate_sums_exactly_and_stays_within_one_of_the_exact_share(total, weights):
    counts = allocate(total, weights)
    assert sum(counts) == total
    assert len(counts) == len(weights)
    for count, weight in zip(counts, weights):
        assert count >= 0
        assert abs(count - total * weight / sum(weights)) < 1 + 1e-6


@pytest.mark.parametrize(
    "total, weights, expected",
    [
        (100, [0.05, 0.05, 0.1, 0.2, 0.6], [5, 5, 10, 20, 60]),
        (5, [0.05, 0.05, 0.1, 0.2, 0.6], [0, 0, 1, 1, 3]),
        (5, [1, 1, 1], [2, 2, 1]),  # ties go to the earlier group
        (10, [1, 3], [3, 7]),  # 2.5 and 7.5: the tie goes to the earlier group
        (10, [1, 4], [2, 8]),
        (0, [1, 2], [0, 0]),
        (7, [4], [7]),
    ],
)
def test_allocate_is_proportional_with_largest_remainders(total, weights, expected):
    assert allocate(total, weights) == expected


# ---------------------------------------------------------------------------------------- instruction configs
def test_the_example_default_config_loads_with_normalised_ratios():
    config = load_instruction_config(EXAMPLE_DEFAULT)
    assert [group.name for group in config.groups] == ["level_1", "level_2", "level_3", "level_4", "level_5"]
    assert [group.ratio for group in config.groups] == pytest.approx([0.05, 0.05, 0.1, 0.2, 0.6])
    assert config.groups[0].config == {
        "min_value": 100, "max_value": 10000, "min_operands": 2, "max_operands": 8, "tolerance": 1e-8,
    }
    assert config.class_name == "example/arithmetic"
    assert config.seed == 42
    assert config.split_samples == {"train": 1000, "test": 100}
    assert (config.shuffle, config.gen_parquet) == (False, False)
    assert config.name == "default"
    assert config.path == EXAMPLE_DEFAULT


def test_generation_ratios_are_normalised(tmp_path: Path):
    path = write(tmp_path / "mix.yaml", """
instruction_generators:
  easy: {generation_ratio: 1}
  hard: {generation_ratio: 3}
  unweighted: {}
global_config: {class_name: example/arithmetic}
""")
    config = load_instruction_config(path)
    assert [(group.name, group.ratio) for group in config.groups] == [("easy", 0.2), ("hard", 0.6), ("unweighted", 0.2)]


@pytest.mark.parametrize("ratio", ["0", "-1", "-0.5", "lots", "true", "[1]", ".inf", ".nan", "null"])
def test_a_bad_generation_ratio_is_an_error_naming_the_group(tmp_path: Path, ratio: str):
    path = write(tmp_path / "bad.yaml", f"""
instruction_generators:
  fine: {{generation_ratio: 1}}
  heavy_group: {{generation_ratio: {ratio}}}
global_config: {{class_name: example/arithmetic}}
""")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: group 'heavy_group': generation_ratio must be"):
        load_instruction_config(path)


def test_broken_yaml_is_an_error_naming_file_and_line(tmp_path: Path):
    path = write(tmp_path / "broken.yaml", "instruction_generators:\n  level_1:\n    config: {min_value: 1\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:\d+:\d+: broken YAML") as raised:
        load_instruction_config(path)
    line = int(str(raised.value).split(":")[1])
    assert 3 <= line <= 4
    tabbed = write(tmp_path / "tabbed.yaml", "global_config:\n\tdefault_seed: 1\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(tabbed))}:2:1: broken YAML"):
        load_instruction_config(tabbed)
    with pytest.raises(ConfigError, match=r"missing\.yaml: no such file"):
        load_instruction_config(tmp_path / "missing.yaml")


def test_unknown_keys_warn_and_are_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="bootcamp_core")
    path = write(tmp_path / "old.yaml", """
instruction_generators:
  level_1:
    config: {max_operands: 3}
    generation_ratio: 1
    bootcamp_cls: something
global_config:
  class_name: example/arithmetic
  enable_random_seed: true
  default_seed: 5
description: from the old framework
""")
    config = load_instruction_config(path)
    assert config.seed == 5 and config.groups[0].config == {"max_operands": 3}
    warnings = warnings_of(caplog)
    assert any("global_config: unknown key 'enable_random_seed' ignored" in message for message in warnings)
    assert any("group 'level_1': unknown key 'bootcamp_cls' ignored" in message for message in warnings)
    assert any("unknown key 'description' ignored" in message for message in warnings)
    assert all(message.startswith(str(path)) for message in warnings)
    assert len(warnings) == 3


def test_relative_paths_resolve_against_the_config_folder_then_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    configs, cwd = tmp_path / "configs", tmp_path / "cwd"
    path = write(configs / "paths_instruction_config.yaml", """
instruction_generators:
  near:
    config: near.yaml
    tool_config_path: tools.yaml
    interaction_config_path: interaction.yaml
  far:
    config: only_in_cwd.json
    tool_config_path: cwd_tools.yaml
global_config: {class_name: example/arithmetic}
""")
    write(configs / "near.yaml", "max_operands: 3\n")
    write(configs / "tools.yaml", "tools: []\n")
    write(configs / "interaction.yaml", "interaction: []\n")
    write(cwd / "near.yaml", "max_operands: 99\n")  # loses to the one beside the config
    write(cwd / "tools.yaml", "tools: []\n")
    write(cwd / "only_in_cwd.json", json.dumps({"max_operands": 4}))
    write(cwd / "cwd_tools.yaml", "tools: []\n")
    monkeypatch.chdir(cwd)

    config = load_instruction_config(Path("..") / "configs" / path.name)
    near, far = config.groups
    assert near.config == {"max_operands": 3}
    assert near.tool_config_path.resolve() == (configs / "tools.yaml").resolve()
    assert near.interaction_config_path.resolve() == (configs / "interaction.yaml").resolve()
    assert far.config == {"max_operands": 4}
    assert far.tool_config_path.resolve() == (cwd / "cwd_tools.yaml").resolve()
    assert config.name == "paths"

    write(configs / "missing_instruction_config.yaml", "instruction_generators:\n  a: {config: nowhere.yaml}\n")
    with pytest.raises(ConfigError, match=r"configs/nowhere\.yaml: no such file"):
        load_instruction_config(configs / "missing_instruction_config.yaml")


def test_overrides_win_over_the_file(tmp_path: Path):
    path = write(tmp_path / "file.yaml", """
instruction_generators:
  a: {}
global_config:
  class_name: example/arithmetic
  default_seed: 5
  default_split_samples: "train:3,test:1"
  shuffle: false
  gen_parquet: false
""")
    plain = load_instruction_config(path)
    assert (plain.seed, plain.split_samples) == (5, {"train": 3, "test": 1})
    assert (plain.shuffle, plain.gen_parquet) == (False, False)
    overridden = load_instruction_config(
        path,
        name="renamed",
        namespace="example",
        overrides={"seed": 9, "split_samples": {"valid": 2}, "shuffle": True, "gen_parquet": True,
                   "class_name": "example/other", "tool_config_path": None, "no_tool": True},
    )
    assert overridden.seed == 9
    assert overridden.split_samples == {"valid": 2}
    assert (overridden.shuffle, overridden.gen_parquet, overridden.no_tool) == (True, True, True)
    assert overridden.class_name == "example/other"
    assert overridden.tool_config_path is None
    assert (overridden.name, overridden.namespace) == ("renamed", "example")
    merged = load_instruction_config(path, overrides={"global_config": {"default_seed": 7, "shuffle": "yes"}})
    assert (merged.seed, merged.shuffle) == (7, True)
    both = load_instruction_config(path, overrides={"global_config": {"default_seed": 7}, "seed": 8})
    assert both.seed == 8


def test_without_any_seed_or_splits_the_defaults_apply(tmp_path: Path):
    path = write(tmp_path / "bare.yaml", "global_config: {class_name: example/arithmetic}\n")
    config = load_instruction_config(path)
    assert config.seed == DEFAULT_SEED == config_module.DEFAULT_SEED
    assert config.split_samples == parse_split_samples(DEFAULT_SPLIT_SAMPLES)
    assert [(group.name, group.ratio, group.config) for group in config.groups] == [("default", 1.0, {})]


@pytest.mark.parametrize(
    "text, message",
    [
        ("- just\n- a list\n", "expected a mapping with instruction_generators and global_config"),
        ("global_config: [1, 2]\n", "global_config must be a mapping"),
        ("global_config: just text\n", "global_config must be a mapping"),
        ("instruction_generators: [a, b]\n", "instruction_generators must be a mapping"),
        ("instruction_generators:\n  a: 3\n", "group 'a': expected a mapping"),
        ("instruction_generators:\n  a: {config: [1]}\n", "group 'a': config must be a mapping or a path"),
        ("instruction_generators: {}\n", "no instruction_generators groups and no global_config.class_name"),
        ("global_config: {class_name: x, default_seed: '42'}\n", "seed must be an integer, got '42'"),
        ("global_config: {class_name: x, shuffle: maybe}\n", "shuffle: expected true or false, got 'maybe'"),
        ("global_config: {class_name: x, default_split_samples: train}\n", '"train" has no count'),
    ],
)
def test_malformed_configs_are_config_errors(tmp_path: Path, text: str, message: str):
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_instruction_config(path)


def test_global_config_overrides_must_be_a_mapping():
    with pytest.raises(ConfigError, match="global_config must be a mapping"):
        parse_instruction_config({"global_config": {"class_name": "x"}}, overrides={"global_config": [1]})


@pytest.mark.parametrize(
    "name, stem",
    [
        ("foo_instruction_config.yaml", "foo"),
        ("foo-instruction-config.yml", "foo"),
        ("foo_instruction.yaml", "foo"),
        ("foo_config.yaml", "foo"),
        ("foo.yaml", "foo"),
        ("foo.bar.yaml", "foo"),
        ("_config.yaml", "_config"),
    ],
)
def test_config_stem(name: str, stem: str):
    assert config_stem(Path("some/dir") / name) == stem


# --------------------------------------------------------------------------------- tool / interaction configs
VERL_TOOL_CONFIG = """
tools:
  - class_name: example/calculator
    config:
      type: native
      wasted_call_penalty: 0.2
    tool_schema:
      type: function
      function:
        name: calculator
        description: Exact arithmetic.
        parameters:
          type: object
          properties:
            expression: {type: string, description: "e.g. 1 + 2"}
          required: [expression]
  - class_name: bootcamp_example.tools.CalculatorTool
    config: {type: native}
"""

VERL_INTERACTION_CONFIG = """
interaction:
  - name: feedback
    class_name: bootcamp_example.interaction.FeedbackInteraction
    config: {max_attempts: 2}
  - class_name: example/feedback
"""


def test_tool_config_in_verl_format(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="bootcamp_core")
    entries = load_component_config(write(tmp_path / "tools.yaml", VERL_TOOL_CONFIG), "tool")
    assert [(entry.class_name, entry.config, entry.name) for entry in entries] == [
        ("example/calculator", {"wasted_call_penalty": 0.2}, None),  # verl's `type: native` is not the tool's
        ("bootcamp_example.tools.CalculatorTool", {}, None),
    ]
    assert warnings_of(caplog) == []  # tool_schema is part of the format: accepted silently
    as_json = write(tmp_path / "tools.json", json.dumps({"tools": ["example/calculator"]}))
    assert [entry.class_name for entry in load_component_config(as_json, "tool")] == ["example/calculator"]


def test_interaction_config_in_verl_format(tmp_path: Path):
    entries = load_component_config(write(tmp_path / "interaction.yaml", VERL_INTERACTION_CONFIG), "interaction")
    assert [(entry.class_name, entry.config, entry.name) for entry in entries] == [
        ("bootcamp_example.interaction.FeedbackInteraction", {"max_attempts": 2}, "feedback"),
        ("example/feedback", {}, None),
    ]


@pytest.mark.parametrize(
    "kind, text, message",
    [
        ("tool", "tools:\n  - class_name: example/calculator\n  - config: {type: native}\n",
         "tools[1] needs a class_name (an id or a dotted import path)"),
        ("tool", "tools:\n  - {class_name: ''}\n", "tools[0] needs a class_name"),
        ("interaction", "interaction:\n  - {name: feedback, config: {}}\n", "interaction[0] needs a class_name"),
        ("tool", "tools:\n  - {class_name: example/calculator, config: [1]}\n", "tools[0].config must be a mapping"),
        ("tool", "something_else: []\n", "no 'tools' list"),
        ("interaction", "tools: []\n", "no 'interaction' list"),
        ("tool", "tools: {class_name: example/calculator}\n", "'tools' must be a list"),
        ("tool", "- example/calculator\n", "expected a mapping with a 'tools' list"),
    ],
)
def test_bad_component_configs_are_config_errors(tmp_path: Path, kind: str, text: str, message: str):
    path = write(tmp_path / f"{kind}.yaml", text)
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        load_component_config(path, kind)
    assert str(raised.value).startswith(str(path))


def test_broken_json_component_config_names_file_and_line(tmp_path: Path):
    path = write(tmp_path / "tools.json", '{\n  "tools": [\n    {"class_name": "example/calculator",}\n  ]\n}\n')
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:3:\d+: broken JSON"):
        load_component_config(path, "tool")


# --------------------------------------------------------------------------------------------- batch registries
def test_registry_file_in_the_original_format(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="bootcamp_core")
    small = write(tmp_path / "configs" / "small_instruction_config.yaml",
                  "global_config: {class_name: example/arithmetic}\n")
    path = write(tmp_path / "registry.jsonl", "\n".join([
        "# bootcamps of the nightly batch",
        json.dumps({"bootcamp_name": "arith", "namespace": "example", "sample_number": {"train": 5, "test": 2},
                    "seed": 3}),
        "",
        "   ",
        json.dumps({"config_file": "configs/small_instruction_config.yaml", "bootcamp_cls_name": "example/arithmetic",
                    "shuffle": True, "gen_parquet": True}),
        "  # an indented comment",
        json.dumps({"bootcamp_name": "example", "split_samples": "train:1", "priority": 1}),
    ]) + "\n")
    first, second, third = load_registry_file(path)

    assert (first.line, first.name, first.namespace, first.config_path) == (2, "arith", "example", None)
    assert first.overrides == {"seed": 3, "split_samples": {"train": 5, "test": 2}}

    assert (second.line, second.name, second.namespace) == (5, None, None)
    assert second.config_path.resolve() == small.resolve()
    assert second.overrides == {"class_name": "example/arithmetic", "shuffle": True, "gen_parquet": True}

    assert (third.line, third.name, third.namespace) == (7, "example", "example")  # a bare name is the namespace
    assert third.overrides == {"split_samples": {"train": 1}}
    assert [message for message in warnings_of(caplog) if "unknown key 'priority'" in message] == [
        f"{path}:7: unknown key 'priority' ignored (known: " + ", ".join(sorted(config_module.REGISTRY_KEYS)) + ")"
    ]


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"namespace": "example"}', "", '{"namespace": "example",'], ":3: not valid JSON"),
        (['{"namespace": "example"}', '["example"]'], ":2: expected a JSON object"),
        (['{"seed": 1}'], ":1: give config_file or namespace"),
        (["# only a comment", ""], ": the registry has no entries"),
    ],
)
def test_bad_registry_lines_are_errors_with_their_line_number(tmp_path: Path, lines: list[str], message: str):
    path = write(tmp_path / "registry.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path) + message)}"):
        load_registry_file(path)


def test_missing_registry_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="nope.jsonl: no such file"):
        load_registry_file(tmp_path / "nope.jsonl")
