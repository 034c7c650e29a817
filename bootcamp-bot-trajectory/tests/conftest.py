"""Shared fixtures: the plugin registry with only this bootcamp loaded (strictly), and hand-made task identities."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import registry_of

#: This bootcamp's entry-point name.
namespace = "bot_trajectory"

#: The arm stretched out horizontally along +x (joint 2 at 90°): its end effector is at (0.901, 0, 0.36).
REACHING_X = [0.0, 1.5708, 0.0, 0.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="session")
def registry() -> Registry:
    """This bootcamp alone, through its real entry point; strict, so a broken plugin fails loudly."""
    return registry_of(namespace)


def make_identity(
    obstacles: list[tuple[list[float], list[float]]] = (),  # type: ignore[assignment]
    *,
    start: list[float] | None = None,
    target: list[float] = (0.901, 0.0, 0.36),  # type: ignore[assignment]
    tolerance: float = 0.02,
    resolution: float = 0.02,
    floor: bool = True,
    hidden_obstacles: bool = False,
    budget: dict[str, int] | None = None,
    witness: list[list[float]] | None = None,
) -> dict:
    """A task identity placed by hand: boxes as (centre, half-extents)."""
    identity = {
        "start": list(start if start is not None else [0.0] * 7),
        "target": list(target),
        "tolerance": tolerance,
        "obstacles": [{"center": list(center), "half_extents": list(half)} for center, half in obstacles],
        "floor": floor,
        "hidden_obstacles": hidden_obstacles,
        "resolution": resolution,
        "budget": budget if budget is not None else {"forward_kinematics": 5, "check_path": 3},
    }
    if witness is not None:
        identity["witness"] = witness
    return identity


@pytest.fixture
def identity_for() -> Callable[..., dict]:
    """:func:`make_identity`, as a fixture (test modules are not importable from each other)."""
    return make_identity
