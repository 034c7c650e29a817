"""pytest plugin of bootcamp-core (``pytest11`` entry point): fixtures for bootcamp authors.

Loading it imports only pytest: no bootcamp plugin is loaded and strict mode is left as the environment says, until a
test asks for a fixture. The conformance base classes live in :mod:`bootcamp_core.testing`.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bootcamp_registry():
    """The registry of installed bootcamps, loaded once per test session."""
    from bootcamp_core.plugin.loader import Registry

    return Registry.from_entry_points()


@pytest.fixture
def bootcamp_component(bootcamp_registry):
    """``bootcamp_component(kind, id, **config)``: the shared component instance for that id and config."""

    def build(kind: str, component_id: str, **config):
        return bootcamp_registry.component(kind, component_id, config)

    return build
