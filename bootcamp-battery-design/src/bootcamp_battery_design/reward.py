"""The reward: re-simulates the boxed design under the task's conditions and checks every target."""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_battery_design.answer import extract_design
from bootcamp_battery_design.cell import CellDesign, Conditions, DesignError, areal_capacity
from bootcamp_battery_design.simulator import CellPerformance, get_simulator
from bootcamp_battery_design.tools import design_bounds, targets_met
from bootcamp_core import Reward, config_flag, config_number

__all__ = ["CellDesignReward", "soft_score"]

#: Relative energy shortfall at which the soft reward's energy half reaches 0.
SOFT_ENERGY_SCALE = 0.10
#: Temperature excess [K] at which the soft reward's temperature half reaches 0.
SOFT_TEMPERATURE_SCALE_K = 10.0


def soft_score(
    result: CellPerformance,
    targets: dict,
    energy_scale: float = SOFT_ENERGY_SCALE,
    temperature_scale_K: float = SOFT_TEMPERATURE_SCALE_K,
    design: CellDesign | None = None,
) -> float:
    """Mean of the targets' closenesses, each 1 when its target is met and falling linearly to 0 at its scale; with
    an areal-capacity band (and the ``design``) a third, falling to 0 at ``energy_scale`` relative distance from the
    band."""
    energy_target = float(targets["min_specific_energy_Wh_kg"])
    shortfall = max(0.0, 1.0 - result.specific_energy_Wh_kg / energy_target)
    excess = max(0.0, result.peak_temperature_K - float(targets["max_peak_temperature_K"]))
    energy = max(0.0, 1.0 - shortfall / energy_scale) if energy_scale > 0 else float(shortfall == 0)
    temperature = max(0.0, 1.0 - excess / temperature_scale_K) if temperature_scale_K > 0 else float(excess == 0)
    band = targets.get("areal_capacity_mAh_cm2")
    if band is None or design is None:
        return (energy + temperature) / 2
    capacity = areal_capacity(design.thickness_m, design.porosity)
    low, high = float(band[0]), float(band[1])
    distance = max(0.0, low - capacity, capacity - high) / ((low + high) / 2)
    closeness = max(0.0, 1.0 - distance / energy_scale) if energy_scale > 0 else float(distance == 0)
    return (energy + temperature + closeness) / 3


class CellDesignReward(Reward):
    """1.0 when the last ``\\boxed{...}`` design meets every target when simulated again, else 0.0.

    The design must lie in the task's box. With the verify kwarg (or config) ``soft=True`` a design that misses gets
    partial credit: the mean of ``1 - shortfall / soft_energy_scale`` (relative specific-energy shortfall, default
    scale 10%), ``1 - excess / soft_temperature_scale_K`` (peak temperature above target, default 10 K) and, with an
    areal-capacity band, ``1 - distance / soft_energy_scale`` (relative distance from the band), each clamped to
    [0, 1]; only a design meeting every target scores 1. Tool use never enters the score.
    """

    name: ClassVar[str] = "cell_design"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        config_flag(self, config, "soft", False)
        config_number(self, config, "soft_energy_scale", SOFT_ENERGY_SCALE, low=0.0)
        config_number(self, config, "soft_temperature_scale_K", SOFT_TEMPERATURE_SCALE_K, low=0.0)

    def extract_output(self, output: str) -> tuple[float, float] | None:
        """The design's four values from the last ``\\boxed{...}``, or ``None``."""
        return extract_design(output)

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """Simulate the design under the identity's conditions (the process's shared simulator and cache)."""
        try:
            design = CellDesign.parse(*extracted, bounds=design_bounds(identity))
            result = get_simulator().simulate(design, Conditions.from_identity(identity))
            targets = identity["targets"]
        except (DesignError, KeyError, TypeError, IndexError):
            return 0.0
        if all(targets_met(design, result, targets)):
            return 1.0
        if not kwargs.get("soft", self.config.get("soft", False)):
            return 0.0
        return soft_score(
            result,
            targets,
            float(kwargs.get("soft_energy_scale", self.config.get("soft_energy_scale", SOFT_ENERGY_SCALE))),
            float(kwargs.get("soft_temperature_scale_K",
                             self.config.get("soft_temperature_scale_K", SOFT_TEMPERATURE_SCALE_K))),
            design,
        )
