"""Packaging and the plugin's ids: every component under its namespace, the generator's wiring, package data."""

from __future__ import annotations

from importlib import resources

from bootcamp_core import Registry

namespace = "texas_holdem"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None and info.distribution == "bootcamp-texas-holdem"
    assert info.components == {
        "generator": ["texas_holdem/heads_up"],
        "tool": ["texas_holdem/table", "texas_holdem/act"],
        "interaction": ["texas_holdem/table_feedback"],
        "reward": ["texas_holdem/chips"],
        "reference_agent": ["texas_holdem/equity_player"],
    }
    assert registry.namespaces() == [namespace]


def test_the_generator_names_this_bootcamps_tools_interaction_and_reward(registry: Registry) -> None:
    cls = registry.get_class("generator", "texas_holdem/heads_up")
    assert [registry.resolve("tool", name, namespace) for name in cls.tools] == [
        "texas_holdem/table", "texas_holdem/act"]
    assert registry.resolve("interaction", cls.interaction, namespace) == "texas_holdem/table_feedback"
    assert registry.resolve("reward", cls.reward, namespace) == "texas_holdem/chips"


def test_ships_the_preflop_table_and_the_default_config() -> None:
    files = resources.files("bootcamp_texas_holdem")
    assert (files / "data" / "preflop_equity.json").is_file() and (files / "configs" / "default.yaml").is_file()
