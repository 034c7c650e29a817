"""The simulator tool: one PyBaMM discharge of a design under the episode's conditions, within a call budget."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from bootcamp_battery_design.cell import DESIGN_VARIABLES, CellDesign, Conditions, DesignError, areal_capacity
from bootcamp_battery_design.simulator import CellPerformance, get_simulator
from bootcamp_core import CallBudget, Tool, config_whole_number

__all__ = ["DEFAULT_BUDGET", "BatterySimulationTool", "design_bounds", "report", "targets_met"]

#: Calls per episode when neither the identity nor the tool config sets a budget.
DEFAULT_BUDGET = 8
_PARAMETERS = tuple(variable.argument for variable in DESIGN_VARIABLES)


def design_bounds(identity: dict) -> tuple[tuple[float, float], ...]:
    """The task's search box, one ``(low, high)`` per design variable; the supported range where the identity has
    none."""
    bounds = identity.get("bounds") or {}
    return tuple((float(box[0]), float(box[1]))
                 for box in (bounds.get(variable.key, variable.bounds) for variable in DESIGN_VARIABLES))


def targets_met(design: CellDesign, result: CellPerformance, targets: dict) -> tuple[bool, bool, bool]:
    """(energy, temperature, areal capacity) target met, on unrounded values; a task without an areal-capacity
    band (``targets["areal_capacity_mAh_cm2"]``, ``[low, high]``) meets that one always."""
    energy = result.specific_energy_Wh_kg >= float(targets["min_specific_energy_Wh_kg"])
    temperature = result.peak_temperature_K <= float(targets["max_peak_temperature_K"])
    band = targets.get("areal_capacity_mAh_cm2")
    capacity = True
    if band is not None:
        capacity = float(band[0]) <= areal_capacity(design.thickness_m, design.porosity) <= float(band[1])
    return energy, temperature, capacity


def report(design: CellDesign, result: CellPerformance, targets: dict) -> dict[str, Any]:
    """What the tool shows for one simulated design."""
    energy_met, temperature_met, capacity_met = targets_met(design, result, targets)
    return {
        **{variable.key: value for variable, value in zip(DESIGN_VARIABLES, design.values)},
        "specific_energy_Wh_kg": round(result.specific_energy_Wh_kg, 2),
        "peak_temperature_K": round(result.peak_temperature_K, 2),
        "discharge_time_s": round(result.discharge_time_s, 1),
        "energy_Wh": round(result.energy_Wh, 3),
        "mass_kg": round(result.mass_kg, 5),
        "nominal_capacity_Ah": round(result.nominal_capacity_Ah, 4),
        "areal_capacity_mAh_cm2": round(areal_capacity(design.thickness_m, design.porosity), 4),
        "energy_target_met": energy_met,
        "temperature_target_met": temperature_met,
        "capacity_target_met": capacity_met,
        "all_targets_met": energy_met and temperature_met and capacity_met,
    }


class BatterySimulationTool(Tool):
    """Simulates one design per call; every call counts against the episode's budget, and past it none runs.

    The conditions and targets come from the episode's identity, never from the model. The result is a JSON object
    (see :func:`report`) plus ``calls_left``; a bad call gets a message starting with ``Error:`` and still counts.
    """

    name: ClassVar[str] = "run_battery_simulation"
    description: ClassVar[str] = (
        "Simulate a constant-current discharge (DFN model with lumped thermal, PyBaMM) of the cell with the given "
        "electrode design under this task's operating conditions. Returns specific energy [Wh/kg], peak "
        "temperature [K], discharge time [s], mass [kg], nominal and areal capacity and whether each target is met. Limited number of calls."
    )
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {
            variable.argument: {
                "type": "number",
                "description": (f"{variable.description}; allowed {variable.bounds[0]:g} to {variable.bounds[1]:g} "
                                "unless the task says otherwise."),
            }
            for variable in DESIGN_VARIABLES
        },
        "required": list(_PARAMETERS),
        "additionalProperties": False,
    }
    # One simulator per process does the work anyway; in order keeps the budget's count exactly as the model reads it.
    parallel_safe: ClassVar[bool] = False

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        config_whole_number(self, config, "budget", DEFAULT_BUDGET, low=0)  # an identity's own budget still wins
        self.budget = CallBudget()

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode with its whole budget left (creating it again does not refill the budget)."""
        instance_id = await super().create(instance_id, identity, **kwargs)
        identity = self.state(instance_id)["identity"]
        self.budget.open(instance_id, identity.get("budget", self.config.get("budget", DEFAULT_BUDGET)))
        self.state(instance_id)["solved"] = False
        return instance_id

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """Simulate one design: (JSON result or ``Error:`` message, 0.0, ``{"calls", "calls_left", ...}``)."""
        state = self.state(instance_id)
        if not self.budget.take(instance_id):
            text = (f"Error: the simulation budget of {self.budget.limit(instance_id)} calls is used up; nothing was "
                    "simulated. Give your final answer.")
            return text, 0.0, self._metrics(instance_id, simulated=False)
        left = self.budget.left(instance_id)
        identity = state["identity"]
        try:
            design = self._design(parameters, identity)
            result = await get_simulator().simulate_async(design, Conditions.from_identity(identity))
        except DesignError as error:
            text = f"Error: {error}. Nothing was simulated; {left} call{'s' if left != 1 else ''} left."
            return text, 0.0, self._metrics(instance_id, simulated=False)
        shown = report(design, result, identity["targets"])
        state["solved"] = state["solved"] or shown["all_targets_met"]
        shown["calls_left"] = left
        return json.dumps(shown), 0.0, self._metrics(instance_id, simulated=True)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode: drop its state and its budget."""
        self.budget.close(instance_id)
        await super().release(instance_id, **kwargs)

    @staticmethod
    def _design(parameters: Any, identity: dict) -> CellDesign:
        if not isinstance(parameters, dict):
            raise DesignError(f"arguments must be an object with {', '.join(_PARAMETERS)}")
        unknown = sorted(set(parameters) - set(_PARAMETERS))
        if unknown:
            raise DesignError(f"unknown argument {unknown[0]!r}; expected {', '.join(_PARAMETERS)}")
        missing = [name for name in _PARAMETERS if name not in parameters]
        if missing:
            raise DesignError(f"missing argument {missing[0]!r}; expected {', '.join(_PARAMETERS)}")
        return CellDesign.parse(*(parameters[name] for name in _PARAMETERS), bounds=design_bounds(identity))

    def _metrics(self, instance_id: str, simulated: bool) -> dict:
        return {**self.budget.metrics(instance_id), "simulated": simulated}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """1.0 when some design simulated in the episode met every target, else 0.0."""
        return 1.0 if self.state(instance_id)["solved"] else 0.0
