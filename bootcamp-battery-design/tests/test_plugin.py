"""The plugin's components: every id this bootcamp registers, under its namespace."""

from __future__ import annotations

from bootcamp_core import Registry

namespace = "battery_design"


def test_registers_every_component_under_its_namespace(registry: Registry) -> None:
    info = registry.namespace_plugin(namespace)
    assert info.error is None and info.distribution == "bootcamp-battery-design"
    assert info.components == {
        "generator": ["battery_design/cell_design"],
        "tool": ["battery_design/run_battery_simulation"],
        "interaction": [],
        "reward": ["battery_design/cell_design"],
        "reference_agent": ["battery_design/design_search"],
    }
    assert registry.namespaces() == [namespace]
