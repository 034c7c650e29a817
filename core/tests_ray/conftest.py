"""A real local Ray cluster for these tests: ``ray start --head`` on 127.0.0.1 with a temporary directory of its own,
two CPUs (so two worker processes), no dashboard; stopped afterwards by its own process ids, never by ``ray stop``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing import registry_of

# The cluster listens on 127.0.0.1 only: Ray otherwise rewrites a loopback address to the machine's own address
# (its single-machine setting, the default on macOS and Windows, keeps loopback as it is). Set before Ray is imported
# here and inherited by the cluster and every command the tests run.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# a loopback cluster of the tests' own: no token written to the home directory for it
os.environ["RAY_AUTH_MODE"] = "disabled"
os.environ.pop("RAY_ADDRESS", None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalCluster:
    def __init__(self, address: str, temp_dir: Path, head: psutil.Process, client_address: str = "") -> None:
        self.address, self.temp_dir, self.head = address, temp_dir, head
        #: ray://127.0.0.1:PORT, the head's Ray Client server
        self.client_address = client_address

    def processes(self) -> list[psutil.Process]:
        """The head process and everything it started (GCS, raylet, workers), by process id."""
        try:
            return [self.head, *self.head.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def session_logs(self) -> list[Path]:
        return [path for path in self.temp_dir.rglob("*") if path.is_file() and "logs" in path.parts]


def _stop(head: subprocess.Popen, cluster: LocalCluster) -> None:
    """The head first (it stops what it started), then whatever is left, by process id; then its directory."""
    processes = cluster.processes()
    head.terminate()
    _, alive = psutil.wait_procs(processes, timeout=5)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    head.wait(timeout=15)
    shutil.rmtree(cluster.temp_dir, ignore_errors=True)


def _start(env: dict[str, str]) -> tuple[subprocess.Popen, LocalCluster]:
    """A head node that runs a task, or an error saying why not."""
    # short: Ray's socket paths live under it and a Unix socket path has a length limit
    temp_dir = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp" if os.path.isdir("/tmp") else None))
    port = _free_port()
    ray_cli = Path(sys.executable).with_name("ray")
    # every port of its own: the defaults (agent, metrics, Ray Client) would clash with another cluster on the machine
    client_port = _free_port()
    ports = [argument for flag in ("--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
                                   "--metrics-export-port", "--runtime-env-agent-port")
             for argument in (flag, str(_free_port()))] + ["--ray-client-server-port", str(client_port)]
    # --block keeps the head process in the foreground: every process of the cluster descends from it
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
         "--temp-dir", str(temp_dir), "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats",
         *ports],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    cluster = LocalCluster(f"127.0.0.1:{port}", temp_dir, psutil.Process(head.pid), f"ray://127.0.0.1:{client_port}")
    deadline = time.monotonic() + 120  # a hang watchdog: the machine may be busy
    while True:
        if head.poll() is not None:
            _stop(head, cluster)
            raise RuntimeError(f"ray start exited with {head.returncode}")
        if any(path.name == "raylet.out" for path in temp_dir.rglob("raylet.out")):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
        if time.monotonic() > deadline:
            _stop(head, cluster)
            raise RuntimeError("the local Ray cluster did not come up")
        time.sleep(0.2)
    # the GCS answering is not the node being up: a task run through it is
    probe = (f"import ray; ray.init(address={cluster.address!r}, logging_level='ERROR', log_to_driver=False);"
             "assert ray.get(ray.remote(lambda: 1).remote(), timeout=120) == 1")
    try:
        ran = subprocess.run([sys.executable, "-c", probe], env=env, check=False, capture_output=True, text=True,
                             timeout=180)
    except subprocess.TimeoutExpired:
        ran = None
    if ran is None or ran.returncode != 0 or head.poll() is not None:
        _stop(head, cluster)
        why = "no answer" if ran is None else (ran.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"the local Ray cluster does not run tasks: {why}")
    return head, cluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalCluster]:
    env = {**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example", "BOOTCAMP_STRICT_PLUGINS": "1",
           "RAY_USAGE_STATS_ENABLED": "0",
           # how long the raylet waits for its agents' ports: on a busy machine they can take longer than Ray's default
           "RAY_agent_register_timeout_ms": "120000",
           # how long the Ray Client proxy waits for a client's own server process to answer (Ray's default 30 s):
           # on a busy machine its start alone took longer, and the test's driver was refused ("Initialization
           # failure from server"), which left this process's Ray half set up for the tests after it
           "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("RAY_ADDRESS", None)
    try:
        head, cluster = _start(env)
    except RuntimeError:  # a busy machine can fail one start (a timed-out agent); a second failure is reported
        head, cluster = _start(env)
    try:
        yield cluster
    finally:
        _stop(head, cluster)


@pytest.fixture(scope="session")
def example_registry() -> Registry:
    return registry_of("example")


@pytest.fixture
def only_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOTCAMP_LOAD_PLUGINS", "example")
    monkeypatch.setenv("BOOTCAMP_STRICT_PLUGINS", "1")
    monkeypatch.delenv("BOOTCAMP_BLOCK_PLUGINS", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
