"""Shared fixtures of the core's tests: the installed test double's registry, and logger hygiene."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing import registry_of


@pytest.fixture(scope="session")
def example_registry() -> Registry:
    """bootcamp-example through its real entry point, strictly, and nothing else that may be installed."""
    return registry_of("example")


@pytest.fixture
def only_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """Subprocesses and ``get_registry()`` see bootcamp-example only, strictly, whatever else is installed, and no
    API key from the environment."""
    monkeypatch.setenv("BOOTCAMP_LOAD_PLUGINS", "example")
    monkeypatch.setenv("BOOTCAMP_STRICT_PLUGINS", "1")
    monkeypatch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _restore_bootcamp_logger() -> Iterator[None]:
    """`bootcamp_core.cli.main.main` configures the "bootcamp_core" logger (handler on the current stderr, no
    propagation); put it back after each test so caplog keeps working and no handler outlives a captured stream."""
    logger = logging.getLogger("bootcamp_core")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    yield
    logger.handlers[:] = saved[0]
    logger.propagate, logger.level = saved[1], saved[2]
