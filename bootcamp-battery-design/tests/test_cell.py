"""Geometry, mass and capacity formulas, and the design box with its messages (no simulation)."""

from __future__ import annotations

import math
import re

import pytest

from bootcamp_battery_design import cell
from bootcamp_battery_design.cell import CellDesign, Conditions, DesignError, geometry

REFERENCE = CellDesign(75.6e-6, 0.335)


def _stack(design: CellDesign) -> float:
    return (cell.NEGATIVE_COLLECTOR_THICKNESS + geometry(design).negative_thickness_m + cell.SEPARATOR_THICKNESS
            + design.thickness_m + cell.POSITIVE_COLLECTOR_THICKNESS)


def test_the_reference_design_is_chen2020s_cell() -> None:
    reference = geometry(REFERENCE)
    assert reference.negative_thickness_m == pytest.approx(85.2e-6)
    assert reference.electrode_width_m == pytest.approx(1.58)
    assert reference.nominal_capacity_Ah == pytest.approx(5.0)
    # Cu 12 µm + Al 16 µm + graphite/electrolyte + separator + NMC811/electrolyte over 0.065 m x 1.58 m
    assert reference.mass_kg == pytest.approx(0.06233, abs=1e-5)


@pytest.mark.parametrize(("thickness", "porosity"), [(40e-6, 0.2), (60e-6, 0.45), (120e-6, 0.3), (140e-6, 0.5)])
def test_every_design_keeps_the_n_p_balance_and_fills_the_same_can(thickness: float, porosity: float) -> None:
    design = CellDesign(thickness, porosity)
    shape = geometry(design)
    negative_loading = shape.negative_thickness_m * (1 - cell.NEGATIVE_POROSITY)
    positive_loading = design.thickness_m * (1 - design.porosity)
    reference_ratio = cell.NEGATIVE_THICKNESS_0 * (1 - cell.NEGATIVE_POROSITY) / (
        cell.POSITIVE_THICKNESS_0 * (1 - cell.POSITIVE_POROSITY_0))
    assert negative_loading / positive_loading == pytest.approx(reference_ratio, rel=1e-4)
    assert _stack(design) * shape.electrode_width_m == pytest.approx(_stack(REFERENCE) * 1.58)
    # capacity follows the cathode's active material in the can
    active = positive_loading * shape.electrode_width_m
    assert shape.nominal_capacity_Ah / active == pytest.approx(5.0 / ((75.6e-6 * 0.665) * 1.58))


def _np_ratio(design: CellDesign) -> float:
    shape = geometry(design)
    negative = shape.negative_thickness_m * (1 - design.neg_porosity) * cell.NEGATIVE_MAX_CONCENTRATION
    low, high = cell.POSITIVE_STOICHIOMETRY_WINDOW
    return negative / (design.thickness_m * (1 - design.porosity) * cell.POSITIVE_MAX_CONCENTRATION * (low - high))


def test_chen2020s_own_cell_has_an_n_p_ratio_of_1_039() -> None:
    assert cell.NP_RATIO_0 == pytest.approx(1.039, abs=5e-4) and REFERENCE.np_ratio == 1.039


@pytest.mark.parametrize("values", [(40e-6, 0.2, 0.2, 1.0), (90e-6, 0.35, 0.45, 1.5), (140e-6, 0.5, 0.3, 1.2)])
def test_the_negative_electrode_follows_the_n_p_ratio_and_keeps_the_lithium(values: tuple) -> None:
    design = CellDesign(*values)
    assert _np_ratio(design) == pytest.approx(design.np_ratio, rel=1e-4)
    # the cell's lithium is the positive electrode's capacity whatever the N/P ratio: a larger anode starts leaner
    shape = geometry(design)
    lithium = shape.negative_thickness_m * (1 - design.neg_porosity) * shape.negative_initial_concentration
    loading = design.thickness_m * (1 - design.porosity) / (cell.POSITIVE_THICKNESS_0 * (1 - cell.POSITIVE_POROSITY_0))
    assert lithium == pytest.approx(cell.NEGATIVE_THICKNESS_0 * 0.75 * 29866.0 * loading)


def test_more_spare_anode_or_anode_porosity_costs_mass() -> None:
    base = geometry(CellDesign(80e-6, 0.3, 0.25, 1.05))
    assert geometry(CellDesign(80e-6, 0.3, 0.25, 1.4)).mass_kg / geometry(CellDesign(80e-6, 0.3, 0.25, 1.4)).\
        nominal_capacity_Ah > base.mass_kg / base.nominal_capacity_Ah
    assert geometry(CellDesign(80e-6, 0.3, 0.4, 1.05)).negative_thickness_m > base.negative_thickness_m


def test_thicker_cathodes_hold_more_capacity_and_a_larger_share_of_active_mass() -> None:
    thin, thick = geometry(CellDesign(50e-6, 0.3)), geometry(CellDesign(120e-6, 0.3))
    assert thick.nominal_capacity_Ah > thin.nominal_capacity_Ah
    assert thick.nominal_capacity_Ah / thick.mass_kg > thin.nominal_capacity_Ah / thin.mass_kg


def test_denser_cathodes_are_heavier_per_area() -> None:
    assert geometry(CellDesign(80e-6, 0.2)).mass_per_area_kg_m2 > geometry(CellDesign(80e-6, 0.5)).mass_per_area_kg_m2


def test_designs_are_rounded_to_the_simulation_resolution() -> None:
    assert CellDesign(8.123456e-5, 0.312345) == CellDesign(8.1234e-5, 0.31234)
    design = CellDesign(8.123456e-5, 0.312345)
    assert (design.thickness_m, design.porosity) == (8.123e-05, 0.3123)
    assert repr(design.thickness_m) == "8.123e-05"


@pytest.mark.parametrize(
    ("thickness", "porosity", "message"),
    [
        (85, 0.3, r"outside the allowed range .*lengths are in metres: 85 µm is 8.5e-05 m"),
        (1e-3, 0.3, "pos_thickness = 0.001 m is outside the allowed range"),
        (3e-5, 0.3, "outside the allowed range"),
        (8e-5, 0.6, "pos_porosity = 0.6 is outside the allowed range"),
        (8e-5, -0.1, "pos_porosity"),
        ("abc", 0.3, "pos_thickness must be a number"),
        (8e-5, None, "pos_porosity must be a number, got NoneType"),
        (True, 0.3, "pos_thickness must be a number, got bool"),
        (math.nan, 0.3, "finite"),
        (8e-5, math.inf, "finite"),
        ([8e-5], 0.3, "got list"),
        (10**400, 0.3, "pos_thickness must be a finite number"),  # a 401-digit JSON integer
    ],
)
def test_bad_designs_get_a_clear_message(thickness: object, porosity: object, message: str) -> None:
    with pytest.raises(DesignError, match=message):
        CellDesign.parse(thickness, porosity, 0.25, 1.039)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((8e-5, 0.3, 0.5, 1.1), "neg_porosity = 0.5 is outside the allowed range [0.2, 0.45]"),
        ((8e-5, 0.3, 0.3, 0.9), "np_ratio = 0.9 is outside the allowed range [1, 1.5]"),
        ((8e-5, 0.3, 0.3, "x"), "np_ratio must be a number"),
        ((8e-5, 0.3), "a design has 4 values (pos_thickness, pos_porosity, neg_porosity, np_ratio), got 2"),
    ],
)
def test_the_anode_variables_are_checked_too(values: tuple, message: str) -> None:
    with pytest.raises(DesignError, match=re.escape(message)):
        CellDesign.parse(*values)


def test_numbers_as_text_are_accepted() -> None:
    assert CellDesign.parse("8.5e-05", "0.3", "0.25", "1.1") == CellDesign(8.5e-5, 0.3, 0.25, 1.1)


def test_a_narrower_box_is_enforced() -> None:
    bounds = [(6e-5, 1e-4), (0.2, 0.5), (0.2, 0.45), (1.0, 1.5)]
    with pytest.raises(DesignError, match=r"\[6e-05, 0.0001\]"):
        CellDesign.parse(5e-5, 0.3, 0.25, 1.1, bounds=bounds)


def test_conditions_come_from_the_identity_and_are_checked() -> None:
    identity = {"conditions": {"c_rate": 1.5, "ambient_temperature_K": 298.2, "heat_transfer_coefficient_W_m2K": 20}}
    assert Conditions.from_identity(identity) == Conditions(1.5, 298.2, 20.0)
    identity["conditions"]["c_rate"] = 5
    with pytest.raises(DesignError, match="c_rate = 5 is outside"):
        Conditions.from_identity(identity)
