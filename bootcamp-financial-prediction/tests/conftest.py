"""Shared fixtures: the plugin registry with only this bootcamp loaded, strictly, and a few generated tasks."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import registry_of
from bootcamp_financial_prediction.generator import ForecastGenerator

#: This bootcamp's entry-point name.
namespace = "financial_prediction"


@pytest.fixture(scope="session")
def registry() -> Registry:
    """This bootcamp alone, through its real entry point; strict, so a broken plugin fails loudly."""
    return registry_of(namespace)


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
