"""Joining a Ray cluster the way Ray itself does: ``--ray`` with no value, ``auto``, ``HOST:PORT`` or ``ray://``.

Ray is imported here only: nothing in the base install, nor any command run without ``--ray``, imports this module.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from bootcamp_core.plugin.errors import ConfigError

#: What ``--ray`` with no value stands for: Ray's own default (``RAY_ADDRESS`` if set, else a local instance).
LOCAL = ""


def import_ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError:
        raise ConfigError('--ray needs Ray: pip install "bootcamp-core[ray]"') from None
    return ray


#: Tries of a connection the server side refused while starting up ("Initialization failure from server": a Ray
#: Client whose own server on the head did not answer in time).
CLIENT_INIT_ATTEMPTS = 3


@contextlib.contextmanager
def connected(address: str | None = LOCAL) -> Iterator[Any]:
    """Ray, connected for the block: to ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``), or with no
    address to ``RAY_ADDRESS`` when it is set and otherwise to a local instance started for the block and stopped
    after it. A connection the caller already holds is used as it is and left open."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
    if address:
        kwargs["address"] = address
    elif not os.environ.get("RAY_ADDRESS"):
        # a local instance for this command: loopback only, no dashboard
        kwargs.update(include_dashboard=False, _node_ip_address="127.0.0.1")
    for attempt in range(CLIENT_INIT_ATTEMPTS):
        try:
            ray.init(**kwargs)
            break
        except (ConnectionError, ValueError, RuntimeError) as error:
            ray.shutdown()  # a refused connection leaves no half-made Ray behind for a later ray.init
            # a Ray Client's server that did not come up in time (a busy head) is tried again, after a pause
            if isinstance(error, ConnectionAbortedError) and attempt + 1 < CLIENT_INIT_ATTEMPTS:
                time.sleep(2.0 * (attempt + 1))
                continue
            shown = address or os.environ.get("RAY_ADDRESS") or "a local instance"
            raise ConfigError(f"cannot connect to Ray at {shown}: "
                              f"{str(error).splitlines()[0] if str(error) else error}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cluster_cpus(ray: Any) -> int:
    """The cluster's CPUs (at least 1): the default number of actors and of tasks in flight."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
