"""Fixtures for tests of bootcamps: strict registries, tool servers, episode kwargs, installed distributions."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# the plain checks of `bootcamp check` use these two too, and cli/ is above testing/: they live there
from bootcamp_core.cli.check import episode_kwargs, example_arguments  # noqa: F401
from bootcamp_core.plugin.loader import Registry


def registry_of(*namespaces: str) -> Registry:
    """A strict registry of only these installed bootcamps, through their real entry points.

    Tests of one bootcamp must not depend on which other bootcamps are installed; the environment variables that
    select them are set while loading only, so they never leak into other tests' subprocesses.
    """
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BOOTCAMP_LOAD_PLUGINS", ",".join(namespaces))
        patch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
        return Registry.from_entry_points(strict=True)


def free_port() -> int:
    """A TCP port free on loopback right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningServer:
    """A ``bootcamp serve`` process started by :func:`serve_tools`."""

    def __init__(self, process: subprocess.Popen, url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log

    def health(self) -> dict:
        import httpx

        return httpx.get(self.url + "/health", timeout=5).json()

    def wait(self, predicate: Any, what: str, timeout_s: float = 120.0) -> dict:
        """Poll ``/health`` until ``predicate(status)``; fails with the server's log when it exits or time runs out."""
        import time

        import httpx

        deadline = time.monotonic() + timeout_s
        last: dict = {}
        while time.monotonic() < deadline:
            try:
                last = self.health()
                if predicate(last):
                    return last
            except (httpx.HTTPError, ValueError):
                pass
            if self.process.poll() is not None:
                raise AssertionError(f"bootcamp serve exited ({self.process.returncode}):\n{self.log.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: {last}\n{self.log.read_text()}")

    def stop(self, timeout_s: float = 60.0) -> None:
        import signal

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=timeout_s)


@contextlib.contextmanager
def serve_tools(*args: str, log_dir: str | Path, port: int | None = None, ready: bool = True,
                env: dict | None = None) -> Iterator[RunningServer]:
    """Run ``bootcamp serve ARGS --port P`` on loopback for a test: waits until ``/health`` says ready (unless
    ``ready=False``), stops it with SIGTERM at the end (unified mode then stops its workers)."""
    port = port or free_port()
    log = Path(log_dir) / f"serve-{port}-{os.getpid()}-{next(_LOGS)}.log"
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--port", str(port), *args],
                                   stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    server = RunningServer(process, f"http://127.0.0.1:{port}", log)
    try:
        if ready:
            server.wait(lambda status: status.get("ready"), "the server's workers", timeout_s=300)
        yield server
    finally:
        server.stop()


_LOGS = itertools.count()


#: The source of a smallest working hooks module — one generator (``g``) and its reward (``r``), no tools, no
#: reference agent — for discovery tests: ``write_distribution(folder, "bootcamp-x",
#: entry_points={"bootcamp": {"x": "x_hooks"}}, modules={"x_hooks.py": MINIMAL_HOOKS})``.
MINIMAL_HOOKS = """
from bootcamp_core import TaskGenerator, Reward, hookimpl

class Gen(TaskGenerator):
    name = "g"
    reward = "r"
    def case_generator(self, rng):
        return {"n": rng.randint(0, 9)}
    def prompt_func(self, identity, rng):
        return f"Say {identity['n']}"

class R(Reward):
    name = "r"
    def extract_output(self, output):
        return output.strip() or None
    def verify_correction(self, extracted, identity, **kwargs):
        return float(extracted == str(identity["n"]))

@hookimpl
def bootcamp_register_task_generators(register):
    register(Gen)

@hookimpl
def bootcamp_register_rewards(register):
    register(R)
"""


def write_distribution(
    folder: str | Path,
    name: str,
    version: str = "1.0",
    *,
    entry_points: dict[str, dict[str, str]] | None = None,
    modules: dict[str, str] | None = None,
) -> Path:
    """Write a minimal installed distribution (dist-info with a RECORD of its files, and the modules) into
    ``folder``, e.g. for discovery tests.

    Put ``folder`` on ``sys.path`` (or ``PYTHONPATH`` of a subprocess) and its entry points are found like those of
    any installed package: ``write_distribution(tmp, "bootcamp-x", entry_points={"bootcamp": {"x": "x_hooks"}},
    modules={"x_hooks.py": "..."})``.
    """
    folder = Path(folder)
    dist_info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = []
    for group, items in (entry_points or {}).items():
        lines.append(f"[{group}]")
        lines += [f"{key} = {value}" for key, value in items.items()]
        lines.append("")
    (dist_info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    for relative, source in (modules or {}).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    # as an installer writes it (without hashes): what the distribution installs, e.g. its top-level packages
    files = [f"{dist_info.name}/{name}" for name in ("METADATA", "entry_points.txt", "RECORD")]
    files += [Path(relative).as_posix() for relative in modules or {}]
    (dist_info / "RECORD").write_text("".join(f"{file},,\n" for file in files), encoding="utf-8")
    return dist_info
