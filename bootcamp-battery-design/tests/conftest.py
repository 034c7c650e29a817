"""Shared fixtures: the plugin registry with only this bootcamp loaded, and the process's built simulator."""

from __future__ import annotations

import pytest

from bootcamp_battery_design.simulator import CellSimulator, get_simulator
from bootcamp_core import Registry
from bootcamp_core.testing import registry_of

#: This bootcamp's entry-point name.
namespace = "battery_design"


@pytest.fixture(scope="session")
def registry() -> Registry:
    """This bootcamp alone, through its real entry point; strict, so a broken plugin fails loudly."""
    return registry_of(namespace)


@pytest.fixture(scope="session")
def simulator() -> CellSimulator:
    """The process's simulator (the PyBaMM model is built once per process, on its first solve)."""
    return get_simulator()


def _make_identity(
    *,
    c_rate: float = 1.0,
    energy: float = 270.0,
    temperature: float = 315.0,
    budget: int = 8,
    oracle: tuple[float, ...] = (8.7654e-05, 0.3456, 0.2789, 1.1234),
) -> dict:
    """A hand-written task identity at cheap (1C) conditions; the oracle has digits that are easy to spot."""
    return {
        "conditions": {"c_rate": c_rate, "ambient_temperature_K": 298.15, "heat_transfer_coefficient_W_m2K": 10.0},
        "targets": {"min_specific_energy_Wh_kg": energy, "max_peak_temperature_K": temperature},
        "bounds": {"pos_thickness_m": [4e-05, 0.00014], "pos_porosity": [0.2, 0.5], "neg_porosity": [0.2, 0.45],
                   "np_ratio": [1.0, 1.5]},
        "budget": budget,
        "oracle": {"pos_thickness_m": oracle[0], "pos_porosity": oracle[1], "neg_porosity": oracle[2],
                   "np_ratio": oracle[3], "specific_energy_Wh_kg": 271.234,
                   "peak_temperature_K": 313.987},
    }


@pytest.fixture(scope="session")
def make_identity():
    """Builds hand-written task identities (see ``_make_identity``)."""
    return _make_identity
