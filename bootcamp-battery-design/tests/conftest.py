"""Shared fixtures: the plugin registry with only this bootcamp loaded, and the process's built simulator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bootcamp_core.plugins import Registry

from bootcamp_battery_design.simulator import CellSimulator, get_simulator

#: This bootcamp's entry-point name.
namespace = "battery_design"


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    """This bootcamp through the real entry point; strict, so a broken plugin fails loudly instead of vanishing."""
    with pytest.MonkeyPatch.context() as patch:
        # Only this package: tests of one bootcamp must not depend on which other bootcamps are installed.
        patch.setenv("BOOTCAMP_LOAD_PLUGINS", namespace)
        patch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
        loaded = Registry.from_entry_points(strict=True)
    yield loaded


@pytest.fixture(scope="session")
def simulator() -> CellSimulator:
    """The process's simulator (the PyBaMM model is built once per process, on its first solve)."""
    return get_simulator()
