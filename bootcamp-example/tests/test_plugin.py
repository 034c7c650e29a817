"""The plugin's registrations: every component under its id, shared instances per config, dotted paths."""

from __future__ import annotations

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


def test_component_instances_are_shared_per_config(registry: Registry) -> None:
    assert registry.component("tool", "example/calculator") is registry.component("tool", "example/calculator")
    assert registry.component("generator", "example/arithmetic", {"max_operands": 3}).sampler.operand_span == 2


def test_dotted_paths_resolve_to_ids(registry: Registry) -> None:
    assert registry.resolve("tool", "bootcamp_example.tools.CalculatorTool") == "example/calculator"
    assert registry.resolve("interaction", "bootcamp_example.interaction.FeedbackInteraction") == "example/feedback"
