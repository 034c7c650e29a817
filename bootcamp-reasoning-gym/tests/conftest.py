"""Shared fixtures: the plugin registry with only this bootcamp loaded, strictly."""

from __future__ import annotations

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import registry_of

#: This bootcamp's entry-point name.
namespace = "reasoning_gym"


@pytest.fixture(scope="session")
def registry() -> Registry:
    """This bootcamp alone, through its real entry point; strict, so a broken plugin fails loudly."""
    return registry_of(namespace)
