"""The instance cache: one object per (kind, id, config) per process, shared by every episode."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any


def config_key(config: dict) -> str:
    """The config as a stable string (keys sorted), so equal configs share one instance."""
    try:
        return json.dumps(config, sort_keys=True, default=repr)
    except TypeError:  # non-string keys
        return repr(sorted(config.items(), key=repr))


class InstanceCache:
    """Builds each component once per (kind, id, config) and hands out the same object afterwards."""

    def __init__(self) -> None:
        self._instances: dict[tuple[str, str, str], Any] = {}
        # re-entrant: a component's __init__ may itself ask the registry for another component
        self._lock = threading.RLock()

    def get(self, kind: str, component_id: str, config: dict, build: Callable[..., Any]) -> Any:
        """The shared instance for (kind, id, config), made with ``build(**config)`` the first time."""
        key = (kind, component_id, config_key(config) if config else "")
        with self._lock:
            instance = self._instances.get(key)
            if instance is None:
                instance = self._instances[key] = build(**config)
        return instance
