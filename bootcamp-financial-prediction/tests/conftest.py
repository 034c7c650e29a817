"""Shared fixtures: the plugin registry with only this bootcamp loaded, strictly, and a few generated tasks."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from bootcamp_core.plugins import Registry

from bootcamp_financial_prediction.generator import ForecastGenerator

#: This bootcamp's entry-point name.
namespace = "financial_prediction"


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    """This bootcamp through the real entry point; strict, so a broken plugin fails loudly instead of vanishing."""
    with pytest.MonkeyPatch.context() as patch:
        # Only this package: tests of one bootcamp must not depend on which other bootcamps are installed.
        patch.setenv("BOOTCAMP_LOAD_PLUGINS", namespace)
        patch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
        loaded = Registry.from_entry_points(strict=True)
    yield loaded


def _make_identity(seed: int, **config: object) -> dict:
    return ForecastGenerator(**config).case_generator(random.Random(seed))


@pytest.fixture(scope="session")
def make_identity() -> Callable[..., dict]:
    """``make_identity(seed, **config)``: one task of the generator with ``config``, from ``random.Random(seed)``."""
    return _make_identity


@pytest.fixture(scope="session")
def identity() -> dict:
    """One default task."""
    return _make_identity(7)
