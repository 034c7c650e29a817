"""The task generator: operating conditions, a hidden oracle design, and targets set from its simulation."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, ClassVar

from bootcamp_battery_design.answer import ANSWER_FORMAT
from bootcamp_battery_design.cell import (
    AMBIENT_RANGE_K,
    AREAL_CAPACITY_0,
    C_RATE_RANGE,
    DESIGN_VARIABLES,
    HEAT_TRANSFER_RANGE,
    POSITIVE_POROSITY_0,
    POSITIVE_THICKNESS_0,
    CellDesign,
    Conditions,
    areal_capacity,
    thickness_for_areal_capacity,
)
from bootcamp_battery_design.simulator import SimulationError, get_simulator
from bootcamp_core import ConfigError, GenerationError, TaskGenerator

__all__ = ["DEFAULTS", "CellDesignGenerator"]

DEFAULTS: dict[str, Any] = {
    "c_rate": list(C_RATE_RANGE),
    "ambient_temperature_K": list(AMBIENT_RANGE_K),
    "heat_transfer_coefficient": list(HEAT_TRANSFER_RANGE),
    **{variable.key: list(variable.bounds) for variable in DESIGN_VARIABLES},
    "window": 0.3,
    "oracle_candidates": 4,
    "oracle_steps": 30,
    "energy_fraction": 0.999,
    "temperature_margin_K": 0.03,
    "capacity_tolerance": 0.005,
    "budget": 12,
    "min_utilisation": 0.8,
    "max_oracle_temperature_K": 345.0,
    "max_draws": 100,
}

#: The oracle's peak-temperature cap is drawn uniformly at this share of the way from the coolest to the hottest of
#: the random candidates: anywhere along the energy/heat front, never pinned to one of its ends (a window corner).
CAP_SHARE = (0.0, 1.0)
#: Merit lost per cap-overshoot of the candidates' temperature spread (a design over the cap is worth little).
CAP_PENALTY = 10.0
#: What the oracle search's objective and constraint say of a design that cannot be simulated or used.
UNUSABLE = 1e3
#: The oracle search's trust region (COBYLA, normalised window units): first and last radius.
ORACLE_RADIUS = (0.25, 0.005)
#: Grid of each design variable's manufacturing window edges (thickness in metres, porosities, N/P ratio).
WINDOW_GRID = (1e-6, 0.01, 0.01, 0.01)
#: Where the areal-capacity spec is drawn (uniformly), as a share of the range the window's loadings span (its thin,
#: porous corner to its thick, dense one): away from the ends, so the spec's designs are not one corner of the window.
CAPACITY_SPREAD = (0.1, 0.9)
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

    Targets: the positive electrode's areal capacity within ``capacity_tolerance`` of a drawn spec (a product's
    capacity, rounded outward to 0.001 mAh/cm2; none when the tolerance is 0), specific energy >= ``energy_fraction``
    of the oracle's (rounded down to 0.01 Wh/kg) and peak temperature <= the oracle's plus ``temperature_margin_K``
    (rounded up to 0.001 K). The oracle is searched among the designs of that capacity, so it meets all three.
    Oracles are drawn again (from the same ``rng``) while they are transport-limited (delivered capacity below
    ``min_utilisation`` of nominal), hotter than ``max_oracle_temperature_K``, or fail to simulate: nobody asks to
    match a design that wastes a fifth of its cathode, and the lumped thermal model means little far above 345 K.
    """

    name: ClassVar[str] = "cell_design"
    hidden_fields: ClassVar[tuple[str, ...]] = ("oracle",)
    #: Room for the whole default budget of simulator calls and the answer.
    limits: ClassVar[dict[str, int]] = {"max_assistant_turns": 16, "max_user_turns": 32}
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
        self.box = tuple(_range(settings, variable.key, variable.bounds) for variable in DESIGN_VARIABLES)
        self.window = _positive(settings, "window")
        if self.window > 1:
            raise ConfigError(f"window must be in (0, 1], got {self.window!r}", field="window")
        self.candidates = _positive(settings, "oracle_candidates", integer=True)
        self.steps = int(settings["oracle_steps"]) if settings["oracle_steps"] == 0 else _positive(
            settings, "oracle_steps", integer=True)

        self.energy_fraction = _positive(settings, "energy_fraction")
        if self.energy_fraction > 1:
            raise ConfigError(f"energy_fraction must be in (0, 1], got {self.energy_fraction!r}",
                              field="energy_fraction")
        self.temperature_margin = _positive(settings, "temperature_margin_K")
        tolerance = settings["capacity_tolerance"]
        self.capacity_tolerance = 0.0 if tolerance == 0 else _positive(settings, "capacity_tolerance")
        if self.capacity_tolerance >= 0.5:
            raise ConfigError(f"capacity_tolerance must be in [0, 0.5), got {tolerance!r}", field="capacity_tolerance")
        self.budget = _positive(settings, "budget", integer=True)
        self.min_utilisation = _positive(settings, "min_utilisation")
        self.max_temperature = _positive(settings, "max_oracle_temperature_K")
        self.max_draws = _positive(settings, "max_draws", integer=True)

    def _draw_conditions(self, rng: random.Random) -> Conditions:
        values = [round(rng.uniform(*bounds), decimals)
                  for bounds, decimals in zip((self.c_rate, self.ambient, self.cooling), CONDITION_DECIMALS)]
        return Conditions(*values)

    def _draw_window(self, rng: random.Random) -> tuple[tuple[float, float], ...]:
        """The task's manufacturing window: per variable, ``window`` of the configured range at a uniform place,
        its edges on :data:`WINDOW_GRID` (the whole range when ``window`` is 1)."""
        window = []
        for (low, high), grid in zip(self.box, WINDOW_GRID):
            width = self.window * (high - low)
            if self.window >= 1 or width < grid:
                window.append((low, high))
                continue
            start = low + rng.random() * (high - low - width)
            edge_low = max(low, math.floor(start / grid + 1e-9) * grid)
            edge_high = min(high, edge_low + round(width / grid) * grid)
            window.append((float(f"{edge_low:.12g}"), float(f"{edge_high:.12g}")))
        return tuple(window)

    def _draw_capacity(self, rng: random.Random, box: tuple[tuple[float, float], ...]) -> float | None:
        """The areal capacity [mAh/cm2] the task's product asks for: uniform in :data:`CAPACITY_SPREAD` of the
        range the window's loadings span (3 decimals); ``None`` without a capacity target."""
        if not self.capacity_tolerance:
            return None
        (thickness_low, thickness_high), (porosity_low, porosity_high) = box[0], box[1]
        low, high = areal_capacity(thickness_low, porosity_high), areal_capacity(thickness_high, porosity_low)
        return round(low + rng.uniform(*CAPACITY_SPREAD) * (high - low), 3)

    def _draw_oracle(self, rng: random.Random, conditions: Conditions, box: tuple[tuple[float, float], ...],
                     capacity: float | None = None) -> tuple[CellDesign, Any] | None:
        """The most energetic design under a drawn peak-temperature cap: a point on the energy/heat front of the
        conditions at a random place along it, or ``None``.

        With an areal ``capacity`` the search runs on the designs that have it: the positive electrode's thickness
        follows from its porosity (:meth:`_design`), so the search moves the other three variables.

        ``oracle_candidates`` random usable designs set the scales: the cap is drawn uniformly between their coolest
        and hottest peak temperature (:data:`CAP_SHARE`), so it lies inside the front's span and the oracle sits
        anywhere along the front, not at one of its ends, which are corners of the window that a fixed menu of
        window points would hold. From the best of them, COBYLA (``scipy.optimize``, a derivative-free trust-region
        method with linear models) maximises the specific energy subject to the cap within the normalised window,
        in at most ``oracle_steps`` solves. The merit that picks the oracle among every design it simulated is
        ``E / E_scale - CAP_PENALTY * max(0, T_peak - cap) / T_scale``, each scale the spread (max - min) of that
        quantity over the random candidates (at least 1% of the energy, 0.1 K). A design that meets the targets set
        from the oracle must therefore be a design on the front of these conditions, spec and window, near the
        place the cap picked, not one of the many mediocre ones. An oracle at a corner of the window (every free
        coordinate on an edge: where one corner is both the most energetic and the coolest design, as at high rates
        when the porous corner is the only one free of transport limits) is drawn again, like an unusable one.
        """
        simulator = get_simulator()
        share = rng.uniform(*CAP_SHARE)
        scale = {"energy": 1.0, "rise": 1.0, "cap": math.inf}
        size = len(box) - (capacity is not None)
        simulated: dict[tuple[float, ...], Any] = {}

        def usable(point: Sequence[float]) -> Any:
            key = tuple(min(max(float(value), 0.0), 1.0) for value in point)
            if key not in simulated:
                try:
                    result = simulator.simulate(self._design(list(key), box, capacity), conditions)
                except SimulationError:
                    result = None
                if result is not None and (result.utilisation < self.min_utilisation
                                           or result.peak_temperature_K > self.max_temperature):
                    result = None
                simulated[key] = result
            return simulated[key]

        def merit(result: Any) -> float:
            over = max(0.0, result.peak_temperature_K - scale["cap"])
            return result.specific_energy_Wh_kg / scale["energy"] - CAP_PENALTY * over / scale["rise"]

        found = []
        for _ in range(self.candidates):
            point = [rng.random() for _ in range(size)]
            result = usable(point)
            if result is not None:
                found.append((point, result))
        if not found:
            return None
        energies = [result.specific_energy_Wh_kg for _, result in found]
        peaks = [result.peak_temperature_K for _, result in found]
        scale["energy"] = max(max(energies) - min(energies), 0.01 * max(energies))
        scale["rise"] = max(max(peaks) - min(peaks), 0.1)
        scale["cap"] = min(peaks) + share * (max(peaks) - min(peaks))
        start = max(found, key=lambda item: merit(item[1]))[0]
        if self.steps:
            from scipy.optimize import minimize

            def energy(point: Sequence[float]) -> float:
                result = usable(point)
                return UNUSABLE if result is None else -result.specific_energy_Wh_kg / scale["energy"]

            def headroom(point: Sequence[float]) -> float:
                result = usable(point)
                return -UNUSABLE if result is None else (scale["cap"] - result.peak_temperature_K) / scale["rise"]

            minimize(energy, start, method="COBYLA", constraints=[{"type": "ineq", "fun": headroom}],
                     bounds=[(0.0, 1.0)] * size,
                     options={"maxiter": self.steps, "rhobeg": ORACLE_RADIUS[0], "tol": ORACLE_RADIUS[1]})
        point, best = max(((key, result) for key, result in simulated.items() if result is not None),
                          key=lambda item: merit(item[1]))
        if all(value in (0.0, 1.0) for value in point):
            return None  # a corner of the window, where the front degenerates: a menu of corners would hold it
        return self._design(list(point), box, capacity), best

    @staticmethod
    def _design(point: list[float], box: tuple[tuple[float, float], ...], capacity: float | None = None) -> CellDesign:
        """The design at normalised window coordinates ``point``; with an areal ``capacity``, ``point`` leaves out
        the thickness, which follows from the porosity (kept in the window by moving the porosity where it must)."""
        if capacity is None:
            return CellDesign(*(low + value * (high - low) for value, (low, high) in zip(point, box)))
        (thickness_low, thickness_high), (porosity_low, porosity_high) = box[0], box[1]
        porosity = porosity_low + point[0] * (porosity_high - porosity_low)
        thickness = thickness_for_areal_capacity(capacity, porosity)
        if not thickness_low <= thickness <= thickness_high:
            thickness = min(max(thickness, thickness_low), thickness_high)
            porosity = 1 - capacity / areal_capacity(thickness, 0.0)
        rest = (low + value * (high - low) for value, (low, high) in zip(point[1:], box[2:]))
        return CellDesign(thickness, porosity, *rest)

    def case_generator(self, rng: random.Random) -> dict:
        """Conditions, targets, the search box, the budget and the hidden ``oracle``, drawn only from ``rng``."""
        for _ in range(self.max_draws):
            conditions = self._draw_conditions(rng)
            box = self._draw_window(rng)
            capacity = self._draw_capacity(rng, box)
            drawn = self._draw_oracle(rng, conditions, box, capacity)
            if drawn is None:
                continue
            oracle, result = drawn
            energy_target = math.floor(self.energy_fraction * result.specific_energy_Wh_kg * 100) / 100
            temperature_target = math.ceil((result.peak_temperature_K + self.temperature_margin) * 1000) / 1000
            targets = {"min_specific_energy_Wh_kg": energy_target, "max_peak_temperature_K": temperature_target}
            if capacity is not None:
                targets["areal_capacity_mAh_cm2"] = [
                    math.floor(capacity * (1 - self.capacity_tolerance) * 1000) / 1000,
                    math.ceil(capacity * (1 + self.capacity_tolerance) * 1000) / 1000,
                ]
            return {
                "conditions": {
                    "c_rate": conditions.c_rate,
                    "ambient_temperature_K": conditions.ambient_temperature_K,
                    "heat_transfer_coefficient_W_m2K": conditions.heat_transfer_coefficient,
                },
                "targets": targets,
                "bounds": {variable.key: list(bounds) for variable, bounds in zip(DESIGN_VARIABLES, box)},
                "budget": self.budget,
                "oracle": {
                    **{variable.key: value for variable, value in zip(DESIGN_VARIABLES, oracle.values)},
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
        band = targets.get("areal_capacity_mAh_cm2")
        capacity = "" if band is None else (
            f"- areal capacity of the positive electrode between {band[0]:g} and {band[1]:g} mAh/cm2 (the product's "
            f"capacity spec; it is {AREAL_CAPACITY_0:.4f} mAh/cm2 x L_p (1 - eps_p) / ({POSITIVE_THICKNESS_0 * 1e6:g} "
            f"µm x {1 - POSITIVE_POROSITY_0:g}), L_p the positive thickness and eps_p its porosity)\n"
        )
        box = "\n".join(f"- `{variable.argument}`: {variable.description}, between {bounds[variable.key][0]:g} and "
                        f"{bounds[variable.key][1]:g}" for variable in DESIGN_VARIABLES)
        return (
            "Design the electrodes of a lithium-ion cell (NMC811 cathode, graphite anode, PyBaMM's Chen2020 21700 "
            "cell simulated with the Doyle-Fuller-Newman model and a lumped thermal model).\n\n"
            "Operating conditions of the constant-current discharge from full charge to 2.5 V:\n"
            f"- discharge rate: {conditions['c_rate']:g}C\n"
            f"- ambient and initial temperature: {conditions['ambient_temperature_K']:g} K\n"
            f"- total heat-transfer coefficient: {conditions['heat_transfer_coefficient_W_m2K']:g} W/(m2 K)\n\n"
            f"Targets, {'all' if band else 'both'} to be met:\n"
            f"- specific energy at least {targets['min_specific_energy_Wh_kg']:g} Wh/kg\n"
            f"- peak cell temperature at most {targets['max_peak_temperature_K']:g} K\n"
            f"{capacity}\n"
            "Choose the four design variables within this task's manufacturing window (a design outside it is "
            f"invalid, and the simulator refuses it):\n{box}\n\n"
            "The negative electrode's thickness follows from the N/P ratio (the cell's lithium is the positive "
            "electrode's capacity), and the electrode length adapts so the jelly roll fills the same can.\n\n"
            f"You can call `run_battery_simulation` at most {identity['budget']} times; each call simulates one "
            "design under these conditions and reports its specific energy, peak temperature, discharge time and "
            "mass, nominal and areal capacity, and whether each target is met. "
            f"Give your final design in exactly this form, in this order:\n\n{ANSWER_FORMAT}\n\n"
            "for example \\boxed{8.5e-05, 0.32, 0.25, 1.1}."
        )
