"""The arithmetic generator: identity shape and exact values, levels of the default config, prompt, config errors."""

from __future__ import annotations

import math
import random
import re
from importlib import resources

import pytest
import yaml

from bootcamp_core import ConfigError, GenerationError, Registry
from bootcamp_core.testing import draws
from bootcamp_example.answer import ANSWER_FORMAT
from bootcamp_example.arithmetic import evaluate
from bootcamp_example.generator import ArithmeticGenerator

DEFAULT_CONFIG = yaml.safe_load((resources.files("bootcamp_example") / "configs" / "default.yaml").read_text())
LEVELS = DEFAULT_CONFIG["instruction_generators"]


def test_expressions_vary_from_draw_to_draw() -> None:
    assert len({identity["expression"] for identity, _ in draws(ArithmeticGenerator(), 1, 200)}) == 200


def test_identity_shape_and_exact_value() -> None:
    generator = ArithmeticGenerator(tolerance=1e-6)
    for identity, _ in draws(generator, 11, 200):
        assert set(identity) == {"expression", "expected_result", "tolerance"}
        assert isinstance(identity["expression"], str)
        assert isinstance(identity["expected_result"], float) and math.isfinite(identity["expected_result"])
        assert identity["tolerance"] == 1e-6
        # the exact rational value, rounded once to float
        assert identity["expected_result"] == float(evaluate(identity["expression"]))


def test_default_config_groups() -> None:
    ratios = {name: group["generation_ratio"] for name, group in LEVELS.items()}
    assert ratios == {"level_1": 0.5, "level_2": 0.5, "level_3": 1, "level_4": 2, "level_5": 6}
    assert DEFAULT_CONFIG["global_config"]["class_name"] == "example/arithmetic"
    assert all(group["config"]["tolerance"] == 1e-8 for group in LEVELS.values())


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_levels_draw_operands_in_range(level: str) -> None:
    config = LEVELS[level]["config"]
    generator = ArithmeticGenerator(**config)
    counts = set()
    for identity, _ in draws(generator, 5, 60):
        expression = identity["expression"]
        assert re.fullmatch(r"\d+( [-+*/] \d+)*", expression), expression
        operands = [int(token) for token in expression.split()[::2]]
        counts.add(len(operands))
        assert config["min_operands"] <= len(operands) <= config["max_operands"]
        assert all(config["min_value"] <= operand <= config["max_value"] for operand in operands)
        assert identity["expected_result"] == float(evaluate(expression))
    assert len(counts) > 1  # the operand count varies within the level


def test_all_operations_appear() -> None:
    text = " ".join(identity["expression"] for identity, _ in draws(ArithmeticGenerator(), 4, 100))
    assert {"+", "-", "*", "/"} <= set(text)


def test_operations_can_be_restricted() -> None:
    for identity, _ in draws(ArithmeticGenerator(operations="+-"), 4, 50):
        assert "*" not in identity["expression"] and "/" not in identity["expression"]
        assert identity["expected_result"] == int(identity["expected_result"])


def test_prompt_asks_for_the_value_names_the_tool_and_fixes_the_format() -> None:
    generator = ArithmeticGenerator()
    identity, prompt = draws(generator, 3, 1)[0]
    assert identity["expression"] in prompt
    assert "`calculator`" in prompt
    assert prompt.endswith(ANSWER_FORMAT)
    assert ANSWER_FORMAT == '```json\n{"result": <number>}\n```'
    assert str(identity["expected_result"]) not in prompt


def test_component_attributes_resolve_within_the_bootcamp(registry: Registry) -> None:
    cls = registry.get_class("generator", "example/arithmetic")
    assert [registry.resolve("tool", name, "example") for name in cls.tools] == ["example/calculator"]
    assert registry.resolve("interaction", cls.interaction, "example") == "example/feedback"
    assert registry.resolve("reward", cls.reward, "example") == "example/arithmetic"


@pytest.mark.parametrize(
    "config",
    [
        {"min_value": 10, "max_value": 1},
        {"min_operands": 0},
        {"max_operands": 1},
        {"operations": "+%"},
        {"operations": 5},
        {"tolerance": -1},
        {"tolerance": "tight"},
        {"min_value": 1.5},
        {"max_value": True},
    ],
)
def test_bad_config_is_a_config_error(config: dict) -> None:
    with pytest.raises(ConfigError):
        ArithmeticGenerator(**config)


def test_impossible_config_is_a_generation_error() -> None:
    huge = {"min_value": 10**200, "max_value": 10**201, "min_operands": 2, "max_operands": 2}
    generator = ArithmeticGenerator(**huge, operations="*")
    with pytest.raises(GenerationError, match="finite float"):
        generator.case_generator(random.Random(0))
