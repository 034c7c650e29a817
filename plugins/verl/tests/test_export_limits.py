"""The export's turn limits: the user's when given, else the largest the exported generators recommend
(``TaskGenerator.limits``), else ``bootcamp eval``'s defaults."""

from __future__ import annotations

from typing import ClassVar

import pytest

from bootcamp_core import TaskGenerator, hookimpl, write_records
from bootcamp_core.testing import generate_records, registry_of
from bootcamp_verl.export import ExportOptions, export_datasets


class LongGenerator(TaskGenerator):
    """The example's arithmetic with a recommendation of its own."""

    name = "long"
    tools = ("example/calculator",)
    reward = "example/arithmetic"
    limits: ClassVar[dict[str, int]] = {"max_assistant_turns": 40, "max_user_turns": 80}

    def case_generator(self, rng):
        return {"expression": f"{rng.randint(1, 9)} + {rng.randint(1, 9)}"}

    def prompt_func(self, identity, rng):
        return f"Compute {identity['expression']}."


class Hooks:
    @hookimpl
    def bootcamp_register_task_generators(self, register):
        register(LongGenerator)


@pytest.fixture
def data(tmp_path):
    registry = registry_of("example")
    registry.add_plugin(Hooks(), "long")
    example = tmp_path / "example.jsonl"
    write_records(example, generate_records("example", registry, overrides={"split_samples": {"test": 2}}))
    mixed = tmp_path / "mixed.jsonl"
    write_records(mixed, generate_records("example", registry, overrides={"split_samples": {"test": 2}})
                  + generate_records("long", registry, overrides={"split_samples": {"test": 2}}))
    return registry, example, mixed


def overrides(script) -> dict[str, str]:
    text = script.read_text(encoding="utf-8")
    return {name: text.split(f"multi_turn.{name}=", 1)[1].split('"', 1)[0]
            for name in ("max_assistant_turns", "max_user_turns", "max_parallel_calls")}


def test_the_generators_limits_unless_the_user_gives_them(data, tmp_path):
    registry, example, mixed = data
    result = export_datasets([mixed], tmp_path / "mixed", registry=registry)
    assert overrides(result.script) == {"max_assistant_turns": "40", "max_user_turns": "80",
                                        "max_parallel_calls": "80"}
    result = export_datasets([mixed], tmp_path / "given", registry=registry,
                             options=ExportOptions(max_assistant_turns=7))
    assert overrides(result.script) == {"max_assistant_turns": "7", "max_user_turns": "80",
                                        "max_parallel_calls": "80"}
    # no generator recommends any: bootcamp eval's defaults
    result = export_datasets([example], tmp_path / "example", registry=registry)
    assert overrides(result.script) == {"max_assistant_turns": "10", "max_user_turns": "20",
                                        "max_parallel_calls": "20"}
