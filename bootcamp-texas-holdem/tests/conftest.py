"""Shared fixtures: the plugin registry with only this bootcamp loaded, strictly."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bootcamp_core.plugins import Registry

#: This bootcamp's entry-point name.
namespace = "texas_holdem"


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    """This bootcamp through the real entry point; strict, so a broken plugin fails loudly instead of vanishing."""
    with pytest.MonkeyPatch.context() as patch:
        # Only this package: tests of one bootcamp must not depend on which other bootcamps are installed.
        patch.setenv("BOOTCAMP_LOAD_PLUGINS", namespace)
        patch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
        loaded = Registry.from_entry_points(strict=True)
    yield loaded
