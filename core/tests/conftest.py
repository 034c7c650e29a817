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


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the server's PEM: its key and certificate chain, the CA's PEM): a certificate authority of the tests' own, and
    a certificate from it for 127.0.0.1 (``ScriptedChatServer(tls_certfile=...)``)."""
    import trustme

    authority = trustme.CA()
    folder = tmp_path_factory.mktemp("tls")
    server_pem, ca_pem = folder / "server.pem", folder / "ca.pem"
    authority.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(server_pem))
    authority.cert_pem.write_to_path(str(ca_pem))
    return str(server_pem), str(ca_pem)


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
