"""The generator: solvable targets from a simulated hidden oracle, clear config errors, no leaks."""

from __future__ import annotations

import json
import random

import pytest

from bootcamp_battery_design.agent import Task
from bootcamp_battery_design.answer import ANSWER_FORMAT
from bootcamp_battery_design.cell import DESIGN_VARIABLES, CellDesign, Conditions, areal_capacity
from bootcamp_battery_design.generator import DEFAULTS, WINDOW_GRID, CellDesignGenerator
from bootcamp_battery_design.simulator import CellSimulator
from bootcamp_core import ConfigError, GenerationError, Registry
from bootcamp_core.testing import generate_records

SEEDS = range(6)


def _oracle_design(identity: dict) -> CellDesign:
    return CellDesign(*(identity["oracle"][variable.key] for variable in DESIGN_VARIABLES))


@pytest.fixture(scope="module")
def generator(registry: Registry) -> CellDesignGenerator:
    return registry.component("generator", "battery_design/cell_design")


@pytest.fixture(scope="module")
def identities(generator: CellDesignGenerator) -> list[dict]:
    return [generator.case_generator(random.Random(seed)) for seed in SEEDS]


def test_the_oracle_meets_the_targets_it_set(identities: list[dict], simulator: CellSimulator) -> None:
    for identity in identities:
        oracle, targets = identity["oracle"], identity["targets"]
        result = simulator.simulate(_oracle_design(identity), Conditions.from_identity(identity))
        assert result.specific_energy_Wh_kg >= targets["min_specific_energy_Wh_kg"]
        assert result.peak_temperature_K <= targets["max_peak_temperature_K"]
        # a share of its energy (rounded down to 0.01 Wh/kg) and its peak plus a margin (rounded up to 0.001 K)
        fraction, margin = DEFAULTS["energy_fraction"], DEFAULTS["temperature_margin_K"]
        assert 0 <= fraction * result.specific_energy_Wh_kg - targets["min_specific_energy_Wh_kg"] < 0.01 + 1e-9
        assert 0 <= targets["max_peak_temperature_K"] - (result.peak_temperature_K + margin) < 0.001 + 1e-9
        assert oracle["specific_energy_Wh_kg"] == round(result.specific_energy_Wh_kg, 3)
        # a sensible design: not transport-limited, and where the lumped thermal model means something
        assert result.utilisation >= 0.8 and result.peak_temperature_K <= 345.0
        # the areal-capacity band: the drawn spec +-capacity_tolerance (outward to 0.001 mAh/cm2), the oracle in it
        low, high = targets["areal_capacity_mAh_cm2"]
        capacity = areal_capacity(oracle["pos_thickness_m"], oracle["pos_porosity"])
        assert low <= capacity <= high
        assert (high - low) / capacity == pytest.approx(2 * DEFAULTS["capacity_tolerance"], abs=2.5e-3 / capacity)


def test_everything_drawn_lies_in_its_ranges(identities: list[dict]) -> None:
    for identity in identities:
        oracle, conditions = identity["oracle"], identity["conditions"]
        assert 4e-05 <= oracle["pos_thickness_m"] <= 1.4e-04 and 0.2 <= oracle["pos_porosity"] <= 0.5
        assert 0.2 <= oracle["neg_porosity"] <= 0.45 and 1.0 <= oracle["np_ratio"] <= 1.5
        assert 0.5 <= conditions["c_rate"] <= 2.0
        assert 288.15 <= conditions["ambient_temperature_K"] <= 308.15
        assert 10 <= conditions["heat_transfer_coefficient_W_m2K"] <= 40
        # the manufacturing window: 30% of each variable's range, inside it, edges on round numbers
        for variable, grid in zip(DESIGN_VARIABLES, WINDOW_GRID):
            low, high = identity["bounds"][variable.key]
            full_low, full_high = variable.bounds
            assert full_low <= low < high <= full_high and low <= oracle[variable.key] <= high
            assert high - low == pytest.approx(DEFAULTS["window"] * (full_high - full_low), abs=grid)
            assert low / grid == pytest.approx(round(low / grid), abs=1e-6)
        assert identity["budget"] == DEFAULTS["budget"]
    assert len({json.dumps(identity, sort_keys=True) for identity in identities}) == len(identities)


def test_the_prompt_states_the_task_but_never_the_oracle(generator: CellDesignGenerator,
                                                         identities: list[dict]) -> None:
    for identity in identities:
        prompt = generator.prompt_func(identity, random.Random(0))
        conditions, targets = identity["conditions"], identity["targets"]
        for shown in (f"{conditions['c_rate']:g}C", f"{conditions['ambient_temperature_K']:g} K",
                      f"{targets['min_specific_energy_Wh_kg']:g} Wh/kg", f"{targets['max_peak_temperature_K']:g} K",
                      f"at most {identity['budget']} times", ANSWER_FORMAT, "metres", "`neg_porosity`",
                      "`np_ratio`", "4.8685 mAh/cm2 x L_p (1 - eps_p) / (75.6 µm x 0.665)",
                      "between {:g} and {:g} mAh/cm2".format(*targets["areal_capacity_mAh_cm2"])):
            assert shown in prompt
        oracle = identity["oracle"]
        thickness_um = oracle["pos_thickness_m"] * 1e6
        for hidden in (f"{oracle['specific_energy_Wh_kg']:.2f}", f"{oracle['peak_temperature_K']:.2f}", "oracle"):
            assert hidden not in prompt
        if oracle["pos_thickness_m"] not in identity["bounds"]["pos_thickness_m"]:
            for hidden in (repr(oracle["pos_thickness_m"]), f"{thickness_um:.1f}"):
                assert hidden not in prompt
        for variable in DESIGN_VARIABLES:  # unless the oracle sits on the window's edge, which the prompt states
            if oracle[variable.key] not in identity["bounds"][variable.key]:
                assert f"{oracle[variable.key]:g}" not in prompt


def test_records_keep_the_oracle_out_of_the_prompt(registry: Registry) -> None:
    for record in generate_records("battery_design", registry, overrides={"split_samples": "test:3"}):
        prompt = json.dumps(record["prompt"])
        oracle = record["reward_model"]["ground_truth"]["oracle"]
        bounds = record["reward_model"]["ground_truth"]["bounds"]
        # unless the oracle sits on the window's edge (its porosity does where the capacity's thickness would leave
        # the window), which the prompt states
        if oracle["pos_thickness_m"] not in bounds["pos_thickness_m"]:
            assert repr(oracle["pos_thickness_m"]) not in prompt
        if oracle["pos_porosity"] not in bounds["pos_porosity"]:
            assert f"{oracle['pos_porosity']:g}" not in prompt
        assert record["extra_info"]["tools_kwargs"]["run_battery_simulation"]["create_kwargs"]["identity"][
            "oracle"] == oracle  # server-side only, where the reward and tool live


def test_the_default_config_has_three_rate_levels(registry: Registry) -> None:
    records = generate_records("battery_design", registry, overrides={"split_samples": "test:3"})
    levels = {record["extra_info"]["generator_name"]: record["reward_model"]["ground_truth"]["conditions"]["c_rate"]
              for record in records}
    assert set(levels) == {"gentle", "moderate", "fast"}
    assert 0.5 <= levels["gentle"] <= 1.0 <= levels["moderate"] <= 1.5 <= levels["fast"] <= 2.0
    # the temperature margin follows how far the peak moves along the front: 0.01 K at gentle rates, the default
    # 0.03 K at moderate ones, 0.05 K at fast ones (the identity's oracle peak is rounded to 0.001 K)
    expected = {"gentle": 0.01, "moderate": DEFAULTS["temperature_margin_K"], "fast": 0.05}
    for record in records:
        identity, level = record["reward_model"]["ground_truth"], record["extra_info"]["generator_name"]
        margin = identity["targets"]["max_peak_temperature_K"] - identity["oracle"]["peak_temperature_K"]
        assert expected[level] - 5e-4 <= margin < expected[level] + 1.5e-3, (level, margin)


def test_settings_shape_the_task(simulator: CellSimulator) -> None:
    generator = CellDesignGenerator(c_rate=[1.0, 1.0], pos_porosity=[0.3, 0.4], budget=5, energy_fraction=0.95,
                                    temperature_margin_K=3.0, oracle_candidates=2, oracle_steps=6,
                                    window=1.0)
    identity = generator.case_generator(random.Random(7))
    assert identity["conditions"]["c_rate"] == 1.0 and identity["budget"] == 5
    assert identity["bounds"]["pos_porosity"] == [0.3, 0.4] and 0.3 <= identity["oracle"]["pos_porosity"] <= 0.4
    result = simulator.simulate(_oracle_design(identity), Conditions.from_identity(identity))
    assert identity["targets"]["min_specific_energy_Wh_kg"] == pytest.approx(0.95 * result.specific_energy_Wh_kg,
                                                                              abs=0.1)
    assert identity["targets"]["max_peak_temperature_K"] == pytest.approx(result.peak_temperature_K + 3.0, abs=0.01)


def test_without_a_capacity_tolerance_there_is_no_band(simulator: CellSimulator) -> None:
    generator = CellDesignGenerator(c_rate=[1.0, 1.0], capacity_tolerance=0, oracle_candidates=2, oracle_steps=0)
    identity = generator.case_generator(random.Random(3))
    assert set(identity["targets"]) == {"min_specific_energy_Wh_kg", "max_peak_temperature_K"}
    assert "mAh/cm2" not in generator.prompt_func(identity, random.Random(0))


def test_the_oracle_lies_on_the_front_of_its_spec(identities: list[dict], simulator: CellSimulator) -> None:
    """Random designs of the task's spec inside its window almost never meet the targets: the oracle is on the
    energy/heat front of its conditions, so only a design near it on that front does."""
    rng = random.Random(99)
    met = 0
    for identity in identities:
        conditions, targets, task = Conditions.from_identity(identity), identity["targets"], Task.from_identity(identity)
        for _ in range(8):
            design = CellDesign(*task.design_at([rng.random() for _ in range(task.size)]))
            result = simulator.simulate(design, conditions)
            met += (result.specific_energy_Wh_kg >= targets["min_specific_energy_Wh_kg"]
                    and result.peak_temperature_K <= targets["max_peak_temperature_K"])
    assert met <= 1, met


@pytest.mark.parametrize("seed", [3, 11])
def test_the_search_only_improves_on_the_best_random_candidate(seed: int) -> None:
    """Under the same drawn cap, the oracle that COBYLA refines is never dominated by the best random candidate it
    starts from (oracle_steps 0), and it is more energetic or cooler."""
    drawn = {}
    for steps in (0, DEFAULTS["oracle_steps"]):
        generator = CellDesignGenerator(c_rate=[0.75, 0.75], oracle_steps=steps)
        rng = random.Random(seed)
        conditions, box = generator._draw_conditions(rng), generator._draw_window(rng)
        capacity = generator._draw_capacity(rng, box)
        oracle = generator._draw_oracle(rng, conditions, box, capacity)
        assert oracle is not None
        for value, (low, high) in zip(oracle[0].values, box):
            assert low - 1e-12 <= value <= high + 1e-12
        drawn[steps] = oracle[1]
    start, refined = drawn[0], drawn[DEFAULTS["oracle_steps"]]
    assert (refined.specific_energy_Wh_kg, -refined.peak_temperature_K) != (
        start.specific_energy_Wh_kg, -start.peak_temperature_K)
    assert (refined.specific_energy_Wh_kg > start.specific_energy_Wh_kg
            or refined.peak_temperature_K < start.peak_temperature_K)


def test_hidden_fields_name_the_oracle() -> None:
    assert CellDesignGenerator.hidden_fields == ("oracle",)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"c_rate": [2.0, 1.0]}, "c_rate must satisfy 0.5 <= low <= high <= 2"),
        ({"c_rate": [1.0, 3.0]}, "c_rate must satisfy"),
        ({"heat_transfer_coefficient": 5}, "heat_transfer_coefficient must be a [low, high] pair"),
        ({"pos_thickness_m": [40, 140]}, "pos_thickness_m must satisfy 4e-05 <= low"),
        ({"energy_fraction": 1.2}, "energy_fraction must be in (0, 1]"),
        ({"window": 1.5}, "window must be in (0, 1]"),
        ({"budget": 2.5}, "budget must be an integer"),
        ({"budget": 0}, "budget must be a positive number"),
        ({"np_ratio": [0.8, 1.2]}, "np_ratio must satisfy 1 <= low <= high <= 1.5"),
        ({"oracle_candidates": 0}, "oracle_candidates must be a positive number"),
        ({"temperature_margin": 1}, "unknown config keys ['temperature_margin']"),
        ({"capacity_tolerance": 0.6}, "capacity_tolerance must be in [0, 0.5)"),
        ({"capacity_tolerance": -0.01}, "capacity_tolerance must be a positive number"),
        ({"oracle_polish": True}, "unknown config keys ['oracle_polish']"),
        ({"oracle_steps": 2.5}, "oracle_steps must be an integer"),
    ],
)
def test_bad_settings_get_a_clear_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        CellDesignGenerator(**config)
    assert message in str(error.value)


def test_impossible_settings_stop_with_a_clear_error() -> None:
    generator = CellDesignGenerator(c_rate=[2.0, 2.0], max_oracle_temperature_K=290.0, max_draws=2,
                                    oracle_candidates=1)
    with pytest.raises(GenerationError, match="no usable oracle design in 2 draws"):
        generator.case_generator(random.Random(0))
