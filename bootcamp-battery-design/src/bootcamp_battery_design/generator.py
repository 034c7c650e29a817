"""The task generator: operating conditions, a hidden oracle design, and targets set from its simulation."""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

from bootcamp_battery_design.answer import ANSWER_FORMAT
from bootcamp_battery_design.cell import (
    AMBIENT_RANGE_K,
    C_RATE_RANGE,
    HEAT_TRANSFER_RANGE,
    POROSITY_RANGE,
    THICKNESS_RANGE_M,
    CellDesign,
    Conditions,
)
from bootcamp_battery_design.simulator import SimulationError, get_simulator
from bootcamp_core import ConfigError, GenerationError, TaskGenerator

__all__ = ["DEFAULTS", "CellDesignGenerator"]

DEFAULTS: dict[str, Any] = {
    "c_rate": list(C_RATE_RANGE),
    "ambient_temperature_K": list(AMBIENT_RANGE_K),
    "heat_transfer_coefficient": list(HEAT_TRANSFER_RANGE),
    "pos_thickness_m": list(THICKNESS_RANGE_M),
    "pos_porosity": list(POROSITY_RANGE),
    "energy_fraction": 0.99,
    "temperature_margin_K": 1.0,
    "budget": 8,
    "min_utilisation": 0.8,
    "max_oracle_temperature_K": 345.0,
    "max_draws": 100,
}

#: Decimals kept of each drawn condition (C-rate, K, W/(m2 K)), so prompts and identities stay short and exact.
CONDITION_DECIMALS = (2, 1, 1)


def _range(settings: dict[str, Any], key: str, within: tuple[float, float]) -> tuple[float, float]:
    value = settings[key]
    if (
        not isinstance(value, (list, tuple)) or len(value) != 2
        or not all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value)
    ):
        raise ConfigError(f"{key} must be a [low, high] pair of numbers, got {value!r}", field=key)
    low, high = float(value[0]), float(value[1])
    if not (within[0] <= low <= high <= within[1]):
        raise ConfigError(f"{key} must satisfy {within[0]:g} <= low <= high <= {within[1]:g}, got {value!r}",
                          field=key)
    return low, high


def _positive(settings: dict[str, Any], key: str, integer: bool = False) -> Any:
    value = settings[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{key} must be a positive number, got {value!r}", field=key)
    if integer:
        if value != int(value):
            raise ConfigError(f"{key} must be an integer, got {value!r}", field=key)
        return int(value)
    return float(value)


class CellDesignGenerator(TaskGenerator):
    """Draws conditions and a hidden design, simulates it, and asks for a design at least as good.

    Targets: specific energy >= ``energy_fraction`` of the oracle's (rounded down to 0.1 Wh/kg) and peak temperature
    <= the oracle's plus ``temperature_margin_K`` (rounded up to 0.01 K), so the oracle itself always meets both.
    Oracles are drawn again (from the same ``rng``) while they are transport-limited (delivered capacity below
    ``min_utilisation`` of nominal), hotter than ``max_oracle_temperature_K``, or fail to simulate: nobody asks to
    match a design that wastes a fifth of its cathode, and the lumped thermal model means little far above 345 K.
    """

    name: ClassVar[str] = "cell_design"
    tools: ClassVar[tuple[str, ...]] = ("run_battery_simulation",)
    reward: ClassVar[str] = "cell_design"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        unknown = sorted(set(config) - set(DEFAULTS))
        if unknown:
            raise ConfigError(f"{type(self).__name__}: unknown config keys {unknown}; known: {sorted(DEFAULTS)}")
        settings = {**DEFAULTS, **config}
        self.c_rate = _range(settings, "c_rate", C_RATE_RANGE)
        self.ambient = _range(settings, "ambient_temperature_K", AMBIENT_RANGE_K)
        self.cooling = _range(settings, "heat_transfer_coefficient", HEAT_TRANSFER_RANGE)
        self.thickness = _range(settings, "pos_thickness_m", THICKNESS_RANGE_M)
        self.porosity = _range(settings, "pos_porosity", POROSITY_RANGE)
        self.energy_fraction = _positive(settings, "energy_fraction")
        if self.energy_fraction > 1:
            raise ConfigError(f"energy_fraction must be in (0, 1], got {self.energy_fraction!r}",
                              field="energy_fraction")
        self.temperature_margin = _positive(settings, "temperature_margin_K")
        self.budget = _positive(settings, "budget", integer=True)
        self.min_utilisation = _positive(settings, "min_utilisation")
        self.max_temperature = _positive(settings, "max_oracle_temperature_K")
        self.max_draws = _positive(settings, "max_draws", integer=True)

    def _draw_conditions(self, rng: random.Random) -> Conditions:
        values = [round(rng.uniform(*bounds), decimals)
                  for bounds, decimals in zip((self.c_rate, self.ambient, self.cooling), CONDITION_DECIMALS)]
        return Conditions(*values)

    def case_generator(self, rng: random.Random) -> dict:
        """Conditions, targets, the search box, the budget and the hidden ``oracle``, drawn only from ``rng``."""
        simulator = get_simulator()
        for _ in range(self.max_draws):
            conditions = self._draw_conditions(rng)
            oracle = CellDesign(rng.uniform(*self.thickness), rng.uniform(*self.porosity))
            try:
                result = simulator.simulate(oracle, conditions)
            except SimulationError:
                continue
            if result.utilisation < self.min_utilisation or result.peak_temperature_K > self.max_temperature:
                continue
            energy_target = math.floor(self.energy_fraction * result.specific_energy_Wh_kg * 10) / 10
            temperature_target = math.ceil((result.peak_temperature_K + self.temperature_margin) * 100) / 100
            return {
                "conditions": {
                    "c_rate": conditions.c_rate,
                    "ambient_temperature_K": conditions.ambient_temperature_K,
                    "heat_transfer_coefficient_W_m2K": conditions.heat_transfer_coefficient,
                },
                "targets": {
                    "min_specific_energy_Wh_kg": energy_target,
                    "max_peak_temperature_K": temperature_target,
                },
                "bounds": {"pos_thickness_m": list(self.thickness), "pos_porosity": list(self.porosity)},
                "budget": self.budget,
                "oracle": {
                    "pos_thickness_m": oracle.thickness_m,
                    "pos_porosity": oracle.porosity,
                    "specific_energy_Wh_kg": round(result.specific_energy_Wh_kg, 3),
                    "peak_temperature_K": round(result.peak_temperature_K, 3),
                },
            }
        raise GenerationError(
            f"{type(self).__name__}: no usable oracle design in {self.max_draws} draws; widen the design box or "
            "lower min_utilisation"
        )

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """The conditions, the targets, the box, the budget and the answer format; never the oracle."""
        conditions, targets, bounds = identity["conditions"], identity["targets"], identity["bounds"]
        thickness, porosity = bounds["pos_thickness_m"], bounds["pos_porosity"]
        return (
            "Design the positive electrode of a lithium-ion cell (NMC811 cathode, graphite anode, PyBaMM's Chen2020 "
            "21700 cell simulated with the Doyle-Fuller-Newman model and a lumped thermal model).\n\n"
            "Operating conditions of the constant-current discharge from full charge to 2.5 V:\n"
            f"- discharge rate: {conditions['c_rate']:g}C\n"
            f"- ambient and initial temperature: {conditions['ambient_temperature_K']:g} K\n"
            f"- total heat-transfer coefficient: {conditions['heat_transfer_coefficient_W_m2K']:g} W/(m2 K)\n\n"
            "Targets, both to be met:\n"
            f"- specific energy at least {targets['min_specific_energy_Wh_kg']:g} Wh/kg\n"
            f"- peak cell temperature at most {targets['max_peak_temperature_K']:g} K\n\n"
            "Choose the positive electrode thickness (in metres, between "
            f"{thickness[0]:g} and {thickness[1]:g}) and porosity (between {porosity[0]:g} and {porosity[1]:g}). "
            "The negative electrode is scaled with the positive one to keep the cell's N/P balance, and the "
            "electrode length adapts so the jelly roll fills the same can.\n\n"
            f"You can call `run_battery_simulation` at most {identity['budget']} times; each call simulates one "
            "design under these conditions and reports its specific energy, peak temperature, discharge time and "
            "mass, and whether each target is met. "
            f"Give your final design in exactly this form, thickness in metres first:\n\n{ANSWER_FORMAT}\n\n"
            "for example \\boxed{8.5e-05, 0.32}."
        )
