"""Packaging and the plugin contract: entry point, ids, a light import, version, package data."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata, resources

import bootcamp_texas_holdem
from bootcamp_core import Registry

namespace = "texas_holdem"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None
    assert info.distribution == "bootcamp-texas-holdem" and info.version == bootcamp_texas_holdem.__version__
    assert info.components == {
        "generator": ["texas_holdem/heads_up"],
        "tool": ["texas_holdem/table", "texas_holdem/act"],
        "interaction": ["texas_holdem/table_feedback"],
        "reward": ["texas_holdem/chips"],
        "reference_agent": ["texas_holdem/equity_player"],
    }
    assert registry.namespaces() == [namespace]


def test_reference_agent_plays_the_generator(registry: Registry) -> None:
    agent = registry.get_class("reference_agent", "texas_holdem/equity_player")
    assert [registry.resolve("generator", name, namespace) for name in agent.generators] == ["texas_holdem/heads_up"]


def test_dotted_paths_resolve_to_ids(registry: Registry) -> None:
    assert registry.resolve("tool", "bootcamp_texas_holdem.tools.ActTool") == "texas_holdem/act"


def test_importing_the_package_registers_nothing_and_stays_light() -> None:
    code = ("import sys, bootcamp_texas_holdem; "
            "print(sorted(m for m in sys.modules if m.startswith(('bootcamp', 'pluggy', 'pokerkit'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['bootcamp_texas_holdem', 'bootcamp_texas_holdem.__about__']"


def test_version_entry_point_and_package_data() -> None:
    assert metadata.version("bootcamp-texas-holdem") == bootcamp_texas_holdem.__version__
    entry_points = metadata.entry_points(group="bootcamp", name=namespace)
    assert [entry_point.value for entry_point in entry_points] == ["bootcamp_texas_holdem.hooks"]
    assert "pokerkit" in " ".join(metadata.requires("bootcamp-texas-holdem"))
    files = resources.files("bootcamp_texas_holdem")
    assert (files / "data" / "preflop_equity.json").is_file() and (files / "configs" / "default.yaml").is_file()
