"""The reward: the boxed design is simulated again under the task's conditions; exact and soft scores."""

from __future__ import annotations

import anyio
import pytest

from bootcamp_battery_design.answer import extract_design, format_answer
from bootcamp_battery_design.cell import CellDesign, Conditions
from bootcamp_battery_design.reward import CellDesignReward, soft_score
from bootcamp_battery_design.simulator import CellSimulator
from bootcamp_core import Registry
from bootcamp_core.testing import episode_kwargs

REFERENCE = "\\boxed{7.56e-05, 0.335, 0.25, 1.039}"  # 279.4 Wh/kg, 312.0 K at 1C, 298.15 K, h=10
D = (8.5e-05, 0.32, 0.3, 1.1)


@pytest.fixture()
def reward(registry: Registry) -> CellDesignReward:
    return registry.component("reward", "battery_design/cell_design")


@pytest.mark.parametrize(
    ("text", "design"),
    [
        ("\\boxed{8.5e-05, 0.32, 0.3, 1.1}", D),
        ("so \\boxed{ (8.5e-05 , 0.32,0.3 ,  1.1) } it is", D),
        ("\\boxed{8.5e-05 m, 0.32, 0.3, 1.1}", D),
        ("\\boxed{0.000085; .32; .3; 1.1}", D),
        ("first \\boxed{1e-4, 0.4, 0.3, 1.2} then \\boxed{8.5e-05, 0.32, 0.3, 1.1}", D),
        ("\\boxed {85E-6,0.32,0.3,1.1}", D),
        ("\\boxed{(8.5e-05 m; 0.32; 0.3; 1.1)}", D),
        # a box holding braces is no design, and not the last box either
        ("\\boxed{8.5e-05, 0.32, 0.3, 1.1} so \\boxed{\\text{done}}", D),
        ("{ \\boxed{8.5e-05, 0.32, 0.3, 1.1} }", D),
    ],
)
def test_reads_the_last_boxed_design(text: str, design: tuple[float, ...]) -> None:
    assert extract_design(text) == design


@pytest.mark.parametrize(
    "text", ["", "8.5e-05, 0.32, 0.3, 1.1", "\\boxed{8.5e-05}", "\\boxed{8.5e-05, 0.32}", "\\boxed{1, 2, 3}",
             "\\boxed{1, 2, 3, 4, 5}", "\\boxed{a, b, c, d}", "\\boxed{1e999, 0.3, 0.3, 1.1}",
             "\\boxed{{8e-5, 0.3, 0.3, 1.1}}", "\\boxed{8e-5 mm, 0.3, 0.3, 1.1}", "\\boxed{1_0, 0.3, 0.3, 1.1}",
             "\\boxed{inf, 0.3, 0.3, 1.1}", "\\boxed{8e-5, 0.3; 0.3, 1.1}", "\\boxed{8e-5, 0.3, 0.3, 1.1", None, 42,
             # a box of spaces: read in one pass (a pattern of optional spaces took quadratic time on this)
             "\\boxed{" + " " * 20_000 + "x}", "\\boxed{1" + " " * 20_000 + ", x}"],
)
def test_no_design_means_no_answer(text: object) -> None:
    assert extract_design(text) is None


def test_the_answer_format_round_trips() -> None:
    assert extract_design(format_answer(8.123e-05, 0.3123, 0.2718, 1.1414)) == (8.123e-05, 0.3123, 0.2718, 1.1414)


def test_a_design_meeting_both_targets_scores_one(reward: CellDesignReward, make_identity) -> None:
    identity = make_identity(energy=270.0, temperature=315.0)
    assert reward.verify_score(f"My design: {REFERENCE}", identity, **episode_kwargs()) == 1.0


@pytest.mark.parametrize(("energy", "temperature"), [(290.0, 315.0), (270.0, 310.0), (290.0, 310.0)])
def test_missing_either_target_scores_zero(reward: CellDesignReward, make_identity, energy: float,
                                           temperature: float) -> None:
    identity = make_identity(energy=energy, temperature=temperature)
    assert reward.verify_score(REFERENCE, identity, **episode_kwargs()) == 0.0


def test_designs_outside_the_box_score_zero(reward: CellDesignReward, make_identity) -> None:
    identity = make_identity(energy=1.0, temperature=400.0)  # anything inside the box would do
    for text in ("\\boxed{75.6, 0.335, 0.25, 1.039}", "\\boxed{7.56e-05, 0.9, 0.25, 1.039}",
                 "\\boxed{-7.56e-05, 0.335, 0.25, 1.039}", "\\boxed{7.56e-05, 0.335, 0.25, 0.9}"):
        assert reward.verify_score(text, identity, **episode_kwargs()) == 0.0
    identity["bounds"]["pos_thickness_m"] = [8e-05, 0.00014]
    assert reward.verify_score(REFERENCE, identity, **episode_kwargs()) == 0.0


def test_a_broken_identity_scores_zero_without_raising(reward: CellDesignReward, make_identity) -> None:
    identity = make_identity()
    del identity["targets"]
    assert reward.verify_score(REFERENCE, identity, **episode_kwargs()) == 0.0
    assert reward.verify_score(REFERENCE, {}, **episode_kwargs()) == 0.0
    assert not reward.errors


def test_the_soft_reward_gives_partial_credit_by_distance(reward: CellDesignReward, make_identity) -> None:
    scores = []
    for energy, temperature in ((270.0, 315.0), (285.0, 315.0), (285.0, 311.0), (300.0, 305.0), (400.0, 290.0)):
        identity = make_identity(energy=energy, temperature=temperature)
        scores.append(reward.verify_score(REFERENCE, identity, soft=True, **episode_kwargs()))
    assert scores[0] == 1.0
    assert 1.0 > scores[1] > scores[2] > scores[3] > scores[4] == 0.0
    assert scores[1] > 0.5  # temperature met, energy 2% short of a 10% scale: (0.8 + 1) / 2
    # the scales come from the verify kwargs or the reward's config
    identity = make_identity(energy=285.0, temperature=315.0)
    strict = reward.verify_score(REFERENCE, identity, soft=True, soft_energy_scale=0.02, **episode_kwargs())
    assert strict == pytest.approx(0.5, abs=0.02)
    configured = CellDesignReward(soft=True, soft_energy_scale=0.02)
    assert configured.verify_score(REFERENCE, identity, **episode_kwargs()) == strict


def test_soft_score_formula(simulator: CellSimulator) -> None:
    result = simulator.simulate(CellDesign(7.56e-05, 0.335), Conditions(1.0, 298.15, 10.0))
    targets = {"min_specific_energy_Wh_kg": result.specific_energy_Wh_kg / 0.95,
               "max_peak_temperature_K": result.peak_temperature_K - 2.5}
    assert soft_score(result, targets) == pytest.approx(((1 - 0.05 / 0.1) + (1 - 2.5 / 10)) / 2)


def test_a_design_outside_the_capacity_band_scores_0(reward: CellDesignReward, make_identity,
                                                    simulator: CellSimulator) -> None:
    identity = make_identity(energy=270.0, temperature=315.0)  # the reference design meets both
    identity["targets"]["areal_capacity_mAh_cm2"] = [4.85, 4.89]  # it has 4.8685 mAh/cm2
    assert reward.verify_score(REFERENCE, identity, **episode_kwargs()) == 1.0
    identity["targets"]["areal_capacity_mAh_cm2"] = [4.5, 4.6]
    assert reward.verify_score(REFERENCE, identity, **episode_kwargs()) == 0.0
    # soft: the mean of three closenesses, the capacity's 1 - (5.8% from the band) / 10%
    soft = reward.verify_score(REFERENCE, identity, soft=True, **episode_kwargs())
    assert soft == pytest.approx((1 + 1 + (1 - (4.8685 - 4.6) / 4.55 / 0.1)) / 3, abs=1e-3)
    result = simulator.simulate(CellDesign(7.56e-05, 0.335), Conditions(1.0, 298.15, 10.0))
    assert soft_score(result, identity["targets"]) == 1.0  # without the design the band cannot be judged


def test_the_reward_reuses_the_tools_simulation(registry: Registry, reward: CellDesignReward,
                                                simulator: CellSimulator, make_identity) -> None:
    tool = registry.component("tool", "battery_design/run_battery_simulation")
    identity = make_identity(energy=200.0, temperature=330.0)

    async def simulate() -> None:
        instance = await tool.create(None, identity=identity)
        await tool.execute(instance, {"pos_thickness": 6.543e-05, "pos_porosity": 0.4321,
                                                "neg_porosity": 0.2765, "np_ratio": 1.0987})
        await tool.release(instance)

    anyio.run(simulate)
    solves, hits = simulator.stats.solves, simulator.stats.cache_hits
    assert reward.verify_score("\\boxed{6.543e-05, 0.4321, 0.2765, 1.0987}", identity, **episode_kwargs()) == 1.0
    assert (simulator.stats.solves, simulator.stats.cache_hits) == (solves, hits + 1)
