"""Packaging and the plugin contract: entry point, ids, a light import, version."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import bootcamp_battery_design
from bootcamp_core import Registry

namespace = "battery_design"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None
    assert info.distribution == "bootcamp-battery-design" and info.version == bootcamp_battery_design.__version__
    assert info.components == {
        "generator": ["battery_design/cell_design"],
        "tool": ["battery_design/run_battery_simulation"],
        "interaction": [],
        "reward": ["battery_design/cell_design"],
        "reference_agent": ["battery_design/design_search"],
    }
    assert registry.namespaces() == [namespace]


def test_reference_agent_plays_the_generator(registry: Registry) -> None:
    agent = registry.get_class("reference_agent", "battery_design/design_search")
    assert [registry.resolve("generator", name, namespace) for name in agent.generators] == [
        "battery_design/cell_design"]


def test_loading_the_plugin_does_not_import_pybamm() -> None:
    # PyBaMM takes seconds to import: listing plugins or generating other bootcamps must not pay for it
    code = ("import sys, bootcamp_battery_design, bootcamp_battery_design.hooks; "
            "print('pybamm' in sys.modules, 'casadi' in sys.modules)")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False False"


def test_importing_the_package_registers_nothing() -> None:
    code = "import sys, bootcamp_battery_design; print(sorted(m for m in sys.modules if m.startswith('bootcamp')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['bootcamp_battery_design', 'bootcamp_battery_design.__about__']"


def test_version_matches_the_distribution() -> None:
    assert metadata.version("bootcamp-battery-design") == bootcamp_battery_design.__version__
    entry_points = metadata.entry_points(group="bootcamp", name=namespace)
    assert [entry_point.value for entry_point in entry_points] == ["bootcamp_battery_design.hooks"]
