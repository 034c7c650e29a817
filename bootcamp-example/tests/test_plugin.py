"""Packaging and the plugin contract: entry point, ids, a light import, version."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import bootcamp_example
from bootcamp_core import Registry

namespace = "example"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None
    assert info.distribution == "bootcamp-example" and info.version == bootcamp_example.__version__
    assert info.components == {
        "generator": ["example/arithmetic"],
        "tool": ["example/calculator"],
        "interaction": ["example/feedback"],
        "reward": ["example/arithmetic"],
        "reference_agent": ["example/calculator_agent"],
    }
    assert registry.namespaces() == [namespace]


def test_reference_agent_plays_the_generator(registry: Registry) -> None:
    agent = registry.get_class("reference_agent", "example/calculator_agent")
    assert [registry.resolve("generator", name, "example") for name in agent.generators] == ["example/arithmetic"]


def test_component_instances_are_shared_per_config(registry: Registry) -> None:
    assert registry.component("tool", "example/calculator") is registry.component("tool", "example/calculator")
    assert registry.component("generator", "example/arithmetic", {"max_operands": 3}).sampler.operand_span == 2


def test_dotted_paths_resolve_to_ids(registry: Registry) -> None:
    assert registry.resolve("tool", "bootcamp_example.tools.CalculatorTool") == "example/calculator"


def test_importing_the_package_registers_nothing_and_stays_light() -> None:
    code = "import sys, bootcamp_example; print(sorted(m for m in sys.modules if m.startswith(('bootcamp', 'pluggy'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['bootcamp_example', 'bootcamp_example.__about__']"


def test_version_matches_the_distribution() -> None:
    assert metadata.version("bootcamp-example") == bootcamp_example.__version__
    entry_points = metadata.entry_points(group="bootcamp", name=namespace)
    assert [entry_point.value for entry_point in entry_points] == ["bootcamp_example.hooks"]
