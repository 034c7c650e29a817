"""The cell: design and operating variables, their ranges, and the geometry, mass and capacity formulas.

Everything here is plain arithmetic (no PyBaMM), shared by the simulator, the tool, the reward and the generator.

The base cell is PyBaMM's ``Chen2020`` parameter set (an LG M50 21700 cell: graphite-SiOx negative, NMC811 positive,
no binder, so each electrode's active-material volume fraction is ``1 - porosity``). A design sets four independent
variables: the positive electrode's thickness ``L_p`` and porosity ``eps_p``, the negative electrode's porosity
``eps_n``, and the N/P ratio ``r`` (the negative electrode's host capacity over the positive electrode's usable
capacity). The rest of the cell follows so that the design stays physical:

- **N/P ratio.** ``r = L_n (1 - eps_n) c_n,max / (L_p (1 - eps_p) c_p,max (y_0% - y_100%))``, with Chen2020's
  maximum concentrations and the positive electrode's stoichiometry window (0.9084 discharged, 0.2661 charged), so
  Chen2020's own cell has ``r = 1.039``. The negative electrode's thickness follows from ``r``:
  ``L_n = L_n0 (r / r_0) (L_p (1 - eps_p) / (L_p0 (1 - eps_p0))) (1 - eps_n0) / (1 - eps_n)``. The cell's lithium
  is that of the positive electrode's capacity whatever ``r`` is, so a larger negative electrode starts at a lower
  stoichiometry (``c_n,0 = c_n0,0 r_0 / r``): extra anode costs mass and volume, and buys a lower current density per
  anode area (less polarisation and heat at high rate) and a lower, flatter anode potential window.
- **Fixed can.** The cell keeps Chen2020's can (volume and cooling surface, which the lumped thermal model uses), so a
  thicker stack means a shorter wound electrode: ``width = width0 * stack0 / stack`` with
  ``stack = L_cc,n + L_n + L_s + L_p + L_cc,p``.
- **Capacity and current.** Nominal capacity scales with the positive loading and the electrode area,
  ``Q = Q0 * L_p (1 - eps_p) / (L_p0 (1 - eps_p0)) * width / width0``; the discharge current is ``c_rate * Q``.
- **Areal capacity** of the positive electrode (its rated capacity per face area of the wound electrode) depends on
  its loading alone: ``q = Q / (H width) = q0 * L_p (1 - eps_p) / (L_p0 (1 - eps_p0))`` with
  ``q0 = Q0 / (H width0)``, 4.8685 mAh/cm2 for Chen2020's cell.
- **Mass** (per electrode area, times the area): current collectors, both electrodes' solid phase and the electrolyte
  in their pores, and the separator's polymer and electrolyte:
  ``m/A = rho_Cu L_cc,n + rho_Al L_cc,p + L_n ((1 - eps_n) rho_gr + eps_n rho_e) + L_s ((1 - eps_s) rho_sep +
  eps_s rho_e) + L_p ((1 - eps_p) rho_NMC + eps_p rho_e)``. The can, tabs and headspace are not counted.
- **Specific energy** is the energy of a constant-current discharge from full to the 2.5 V cut-off,
  ``E = integral(V I dt)``, over that mass, in Wh/kg.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = [
    "AMBIENT_RANGE_K",
    "C_RATE_RANGE",
    "DESIGN_VARIABLES",
    "HEAT_TRANSFER_RANGE",
    "NEGATIVE_POROSITY_RANGE",
    "NP_RATIO_RANGE",
    "POROSITY_RANGE",
    "THICKNESS_RANGE_M",
    "CellDesign",
    "CellGeometry",
    "Conditions",
    "DesignError",
    "DesignVariable",
    "areal_capacity",
    "geometry",
    "thickness_for_areal_capacity",
]

# Chen2020's reference cell.
POSITIVE_THICKNESS_0 = 75.6e-6
POSITIVE_POROSITY_0 = 0.335
NEGATIVE_THICKNESS_0 = 85.2e-6
NEGATIVE_POROSITY = 0.25
SEPARATOR_THICKNESS = 12e-6
SEPARATOR_POROSITY = 0.47
NEGATIVE_COLLECTOR_THICKNESS = 12e-6
POSITIVE_COLLECTOR_THICKNESS = 16e-6
ELECTRODE_HEIGHT = 0.065
ELECTRODE_WIDTH_0 = 1.58
NOMINAL_CAPACITY_0 = 5.0
NEGATIVE_MAX_CONCENTRATION = 33133.0  # mol/m3
POSITIVE_MAX_CONCENTRATION = 63104.0
NEGATIVE_INITIAL_CONCENTRATION_0 = 29866.0
#: The positive electrode's stoichiometry window (discharged, charged) that defines its usable capacity.
POSITIVE_STOICHIOMETRY_WINDOW = (0.9084, 0.2661)
#: Chen2020's own N/P ratio under this definition (1.03902), kept to the ratio's resolution so that the default
#: design is exactly Chen2020's cell.
NP_RATIO_0 = round((NEGATIVE_THICKNESS_0 * (1 - NEGATIVE_POROSITY) * NEGATIVE_MAX_CONCENTRATION) / (
    POSITIVE_THICKNESS_0 * (1 - POSITIVE_POROSITY_0) * POSITIVE_MAX_CONCENTRATION
    * (POSITIVE_STOICHIOMETRY_WINDOW[0] - POSITIVE_STOICHIOMETRY_WINDOW[1])), 4)
STACK_0 = (
    NEGATIVE_COLLECTOR_THICKNESS + NEGATIVE_THICKNESS_0 + SEPARATOR_THICKNESS + POSITIVE_THICKNESS_0
    + POSITIVE_COLLECTOR_THICKNESS
)

# Bulk densities [kg/m3] of the solid phases and the electrolyte, for the mass. Chen2020's own "electrode density"
# values are thermal-model lumps, not material densities, so literature values are used here.
COPPER_DENSITY = 8960.0
ALUMINIUM_DENSITY = 2700.0
GRAPHITE_DENSITY = 2260.0
NMC811_DENSITY = 4750.0
SEPARATOR_POLYMER_DENSITY = 950.0  # polyethylene
ELECTROLYTE_DENSITY = 1280.0  # 1 M LiPF6 in EC:EMC

#: The search box of a design. Below 40 µm the cell is mostly current collector; above 140 µm (with the matched
#: negative electrode, a 330 µm stack) the cathode is far past the electrolyte-transport limit at every rate here.
THICKNESS_RANGE_M = (40e-6, 140e-6)
#: Porosity of the positive electrode; its active-material fraction is ``1 - porosity`` (no binder in Chen2020).
POROSITY_RANGE = (0.20, 0.50)
#: Porosity of the negative electrode (Chen2020: 0.25).
NEGATIVE_POROSITY_RANGE = (0.20, 0.45)
#: N/P ratio: below 1.0 the negative electrode cannot hold the cell's lithium (plating, which the model lacks).
NP_RATIO_RANGE = (1.0, 1.5)
#: Supported operating conditions. Up to 2C, from 15 to 35 °C and with at least 10 W/(m2 K) of cooling, every
#: design in the box stays below about 362 K with the lumped thermal model (measured over a grid of the box at the
#: hottest corner); with weaker cooling the lumped temperature runs far past where the model has any thermal limits.
#: SPM/SPMe are never used as a stand-in (badly wrong from 2C on).
C_RATE_RANGE = (0.5, 2.0)
AMBIENT_RANGE_K = (288.15, 308.15)
HEAT_TRANSFER_RANGE = (10.0, 40.0)

#: Resolution of the design variables: a design is rounded to these before it is simulated or cached, so the same
#: design written with different digits is the same simulation.
THICKNESS_RESOLUTION_M = 1e-8
POROSITY_RESOLUTION = 1e-4
RATIO_RESOLUTION = 1e-4


class DesignError(ValueError):
    """A design or operating condition that cannot be simulated; the message is meant for the model as is."""


def _resolve(value: float, resolution: float) -> float:
    """``value`` on the grid of ``resolution``, as the shortest float that prints that grid point."""
    return float(f"{round(float(value) / resolution) * resolution:.12g}")


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DesignError(f"{name} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except ValueError:
        raise DesignError(f"{name} must be a number, got {value!r}") from None
    except OverflowError:  # an integer of hundreds of digits
        raise DesignError(f"{name} must be a finite number, got an integer of {len(str(value))} digits") from None
    if not math.isfinite(number):
        raise DesignError(f"{name} must be a finite number, got {value!r}")
    return number


def _within(value: float, bounds: tuple[float, float], name: str, unit: str, hint: str = "") -> float:
    low, high = bounds
    if not low <= value <= high:
        raise DesignError(f"{name} = {value:g}{unit} is outside the allowed range [{low:g}, {high:g}]{unit}{hint}")
    return value


@attrs.frozen
class DesignVariable:
    """One design variable: its tool argument, its key in identities and tool results, box, resolution and unit."""

    argument: str
    key: str
    bounds: tuple[float, float]
    resolution: float
    unit: str
    description: str


#: The design variables, in the order of the answer ``\boxed{...}``.
DESIGN_VARIABLES = (
    DesignVariable("pos_thickness", "pos_thickness_m", THICKNESS_RANGE_M, THICKNESS_RESOLUTION_M, " m",
                   "Positive electrode thickness in metres (not micrometres), e.g. 8.5e-05 for 85 µm"),
    DesignVariable("pos_porosity", "pos_porosity", POROSITY_RANGE, POROSITY_RESOLUTION, "",
                   "Positive electrode porosity (electrolyte volume fraction); the rest is active material"),
    DesignVariable("neg_porosity", "neg_porosity", NEGATIVE_POROSITY_RANGE, POROSITY_RESOLUTION, "",
                   "Negative electrode porosity (electrolyte volume fraction); the rest is active material"),
    DesignVariable("np_ratio", "np_ratio", NP_RATIO_RANGE, RATIO_RESOLUTION, "",
                   "N/P ratio: negative electrode capacity over positive electrode capacity; sets the negative "
                   "electrode's thickness"),
)


@attrs.frozen
class CellDesign:
    """Positive thickness [m] and porosity, negative porosity and N/P ratio, rounded to the simulation's resolution."""

    thickness_m: float = attrs.field(converter=lambda value: _resolve(value, THICKNESS_RESOLUTION_M))
    porosity: float = attrs.field(converter=lambda value: _resolve(value, POROSITY_RESOLUTION))
    neg_porosity: float = attrs.field(default=NEGATIVE_POROSITY,
                                      converter=lambda value: _resolve(value, POROSITY_RESOLUTION))
    np_ratio: float = attrs.field(default=NP_RATIO_0,
                                  converter=lambda value: _resolve(value, RATIO_RESOLUTION))

    @property
    def values(self) -> tuple[float, float, float, float]:
        """The design variables in the order of :data:`DESIGN_VARIABLES`."""
        return self.thickness_m, self.porosity, self.neg_porosity, self.np_ratio

    @classmethod
    def parse(cls, *values: Any, bounds: Any = None) -> CellDesign:
        """A design from raw values (in the order of :data:`DESIGN_VARIABLES`), with a clear :class:`DesignError`
        for anything outside the box (``bounds``: one ``(low, high)`` per variable; the supported box by default)."""
        if len(values) != len(DESIGN_VARIABLES):
            raise DesignError(f"a design has {len(DESIGN_VARIABLES)} values "
                              f"({', '.join(variable.argument for variable in DESIGN_VARIABLES)}), got {len(values)}")
        bounds = bounds or [variable.bounds for variable in DESIGN_VARIABLES]
        checked = []
        for variable, value, box in zip(DESIGN_VARIABLES, values, bounds):
            number = _number(value, variable.argument)
            hint = ""
            if variable.unit == " m" and 1.0 <= number <= 1000.0:
                hint = f" (lengths are in metres: {number:g} µm is {number * 1e-6:.3g} m)"
            checked.append(_within(number, (float(box[0]), float(box[1])), variable.argument, variable.unit, hint))
        return cls(*checked)


@attrs.frozen
class Conditions:
    """Operating conditions: discharge C-rate, ambient (and initial) temperature [K], heat-transfer coefficient."""

    c_rate: float
    ambient_temperature_K: float
    heat_transfer_coefficient: float  # W/(m2 K)

    @classmethod
    def from_identity(cls, identity: dict) -> Conditions:
        """The conditions stored in a task identity."""
        conditions = identity["conditions"]
        return cls(
            _within(_number(conditions["c_rate"], "c_rate"), C_RATE_RANGE, "c_rate", ""),
            _within(_number(conditions["ambient_temperature_K"], "ambient_temperature_K"), AMBIENT_RANGE_K,
                    "ambient_temperature_K", " K"),
            _within(_number(conditions["heat_transfer_coefficient_W_m2K"], "heat_transfer_coefficient_W_m2K"),
                    HEAT_TRANSFER_RANGE, "heat_transfer_coefficient_W_m2K", " W/(m2 K)"),
        )


@attrs.frozen
class CellGeometry:
    """What a design implies for the rest of the cell (see the module docstring for the formulas)."""

    negative_thickness_m: float
    negative_initial_concentration: float  # mol/m3: the cell's lithium is the positive electrode's capacity
    electrode_width_m: float
    nominal_capacity_Ah: float
    mass_per_area_kg_m2: float
    mass_kg: float


#: Chen2020's areal capacity [mAh/cm2]: its nominal capacity over one face of its electrode (0.065 m by 1.58 m).
AREAL_CAPACITY_0 = NOMINAL_CAPACITY_0 / (ELECTRODE_HEIGHT * ELECTRODE_WIDTH_0) / 10.0


def areal_capacity(thickness_m: float, porosity: float) -> float:
    """The positive electrode's areal capacity [mAh/cm2] at this thickness [m] and porosity: proportional to its
    active loading, whatever the rest of the design."""
    return AREAL_CAPACITY_0 * thickness_m * (1 - porosity) / (POSITIVE_THICKNESS_0 * (1 - POSITIVE_POROSITY_0))


def thickness_for_areal_capacity(capacity: float, porosity: float) -> float:
    """The positive electrode thickness [m] that gives ``capacity`` [mAh/cm2] at ``porosity``."""
    return capacity * POSITIVE_THICKNESS_0 * (1 - POSITIVE_POROSITY_0) / (AREAL_CAPACITY_0 * (1 - porosity))


def geometry(design: CellDesign) -> CellGeometry:
    """The negative electrode the N/P ratio asks for, the electrode width that fills the can, the capacity and the
    mass."""
    loading = design.thickness_m * (1 - design.porosity) / (POSITIVE_THICKNESS_0 * (1 - POSITIVE_POROSITY_0))
    negative = (NEGATIVE_THICKNESS_0 * (design.np_ratio / NP_RATIO_0) * loading
                * (1 - NEGATIVE_POROSITY) / (1 - design.neg_porosity))
    stack = (NEGATIVE_COLLECTOR_THICKNESS + negative + SEPARATOR_THICKNESS + design.thickness_m
             + POSITIVE_COLLECTOR_THICKNESS)
    width = ELECTRODE_WIDTH_0 * STACK_0 / stack
    eps_n = design.neg_porosity
    mass_per_area = (
        COPPER_DENSITY * NEGATIVE_COLLECTOR_THICKNESS
        + ALUMINIUM_DENSITY * POSITIVE_COLLECTOR_THICKNESS
        + negative * ((1 - eps_n) * GRAPHITE_DENSITY + eps_n * ELECTROLYTE_DENSITY)
        + SEPARATOR_THICKNESS * ((1 - SEPARATOR_POROSITY) * SEPARATOR_POLYMER_DENSITY
                                 + SEPARATOR_POROSITY * ELECTROLYTE_DENSITY)
        + design.thickness_m * ((1 - design.porosity) * NMC811_DENSITY + design.porosity * ELECTROLYTE_DENSITY)
    )
    return CellGeometry(
        negative_thickness_m=negative,
        negative_initial_concentration=NEGATIVE_INITIAL_CONCENTRATION_0 * NP_RATIO_0 / design.np_ratio,
        electrode_width_m=width,
        nominal_capacity_Ah=NOMINAL_CAPACITY_0 * loading * width / ELECTRODE_WIDTH_0,
        mass_per_area_kg_m2=mass_per_area,
        mass_kg=mass_per_area * ELECTRODE_HEIGHT * width,
    )
