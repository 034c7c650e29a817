"""The simulator tool: results, the budget, clear errors, per-episode state, and no oracle in what it says."""

from __future__ import annotations

import json

import anyio
import pytest

from bootcamp_battery_design.cell import CellDesign, Conditions
from bootcamp_battery_design.simulator import CellSimulator
from bootcamp_battery_design.tools import BatterySimulationTool
from bootcamp_core import Registry
from bootcamp_core.testing import run_tool_calls

#: Chen2020's own negative electrode porosity and N/P ratio.
CHEN2020_ANODE = {"neg_porosity": 0.25, "np_ratio": 1.039}
GOOD = {"pos_thickness": 7.56e-05, "pos_porosity": 0.335, **CHEN2020_ANODE}  # 279.4 Wh/kg, 312.0 K at 1C, 298.15 K, h=10


@pytest.fixture()
def tool(registry: Registry) -> BatterySimulationTool:
    return registry.component("tool", "battery_design/run_battery_simulation")


def _calls(tool: BatterySimulationTool, identity: dict, calls: list[dict]) -> list[tuple[str, float, dict]]:
    """The calls of one episode, in order (then calc_reward and release)."""
    results, _ = run_tool_calls(tool, identity, calls)
    return results


def test_reports_a_simulated_design_against_the_targets(make_identity, tool: BatterySimulationTool,
                                                        simulator: CellSimulator) -> None:
    [(text, step_reward, metrics)] = _calls(tool, make_identity(energy=270.0, temperature=315.0), [GOOD])
    shown = json.loads(text)
    expected = simulator.simulate(CellDesign(7.56e-05, 0.335), Conditions(1.0, 298.15, 10.0))
    assert shown["specific_energy_Wh_kg"] == round(expected.specific_energy_Wh_kg, 2)
    assert shown["peak_temperature_K"] == round(expected.peak_temperature_K, 2)
    assert shown["discharge_time_s"] == round(expected.discharge_time_s, 1)
    assert shown["mass_kg"] == round(expected.mass_kg, 5)
    assert (shown["pos_thickness_m"], shown["pos_porosity"]) == (7.56e-05, 0.335)
    assert shown["energy_target_met"] and shown["temperature_target_met"] and shown["all_targets_met"]
    assert shown["calls_left"] == 7
    assert step_reward == 0.0 and metrics == {"calls": 1, "calls_left": 7, "simulated": True, "refused": 0}


def test_each_target_is_judged_on_its_own(make_identity, tool: BatterySimulationTool) -> None:
    [(text, _, _)] = _calls(tool, make_identity(energy=300.0, temperature=315.0), [GOOD])
    assert (json.loads(text)["energy_target_met"], json.loads(text)["temperature_target_met"]) == (False, True)
    [(text, _, _)] = _calls(tool, make_identity(energy=270.0, temperature=310.0), [GOOD])
    shown = json.loads(text)
    assert (shown["energy_target_met"], shown["temperature_target_met"], shown["all_targets_met"]) == (
        True, False, False)


def test_the_areal_capacity_band_is_a_target_of_its_own(make_identity, tool: BatterySimulationTool) -> None:
    # Chen2020's positive electrode: 4.8685 mAh/cm2, the formula of the prompt
    identity = make_identity(energy=270.0, temperature=315.0)
    shown = json.loads(_calls(tool, identity, [GOOD])[0][0])
    assert shown["areal_capacity_mAh_cm2"] == 4.8685 and shown["nominal_capacity_Ah"] == 5.0
    assert shown["capacity_target_met"]  # no band: always met
    for band, met in (([4.85, 4.89], True), ([4.9, 5.0], False), ([4.7, 4.8], False)):
        identity["targets"]["areal_capacity_mAh_cm2"] = band
        shown = json.loads(_calls(tool, identity, [GOOD])[0][0])
        assert (shown["energy_target_met"], shown["temperature_target_met"]) == (True, True)
        assert (shown["capacity_target_met"], shown["all_targets_met"]) == (met, met)


def test_the_budget_is_enforced_and_nothing_runs_past_it(make_identity, tool: BatterySimulationTool,
                                                         simulator: CellSimulator) -> None:
    designs = [{"pos_thickness": 6e-05 + index * 1e-06, "pos_porosity": 0.3, **CHEN2020_ANODE} for index in range(3)]
    results = _calls(tool, make_identity(budget=3), designs + [GOOD, GOOD])
    assert [json.loads(text)["calls_left"] for text, _, _ in results[:3]] == [2, 1, 0]
    solves, hits = simulator.stats.solves, simulator.stats.cache_hits
    for text, _, metrics in results[3:]:
        assert text.startswith("Error: the simulation budget of 3 calls is used up")
        assert metrics["simulated"] is False and metrics["calls_left"] == 0
    assert results[-1][2]["refused"] == 2
    # the refused calls asked the simulator nothing (the counters only moved for the three that ran)
    assert (simulator.stats.solves, simulator.stats.cache_hits) == (solves, hits)


def test_every_call_counts_even_a_bad_one(make_identity, tool: BatterySimulationTool) -> None:
    results = _calls(tool, make_identity(budget=2), [{"pos_thickness": 85, "pos_porosity": 0.3, **CHEN2020_ANODE}, GOOD, GOOD])
    assert results[0][0] == (
        "Error: pos_thickness = 85 m is outside the allowed range [4e-05, 0.00014] m (lengths are in metres: "
        "85 µm is 8.5e-05 m). Nothing was simulated; 1 call left."
    )
    assert json.loads(results[1][0])["calls_left"] == 0
    assert results[2][0].startswith("Error: the simulation budget of 2 calls is used up")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"pos_thickness": 8e-05}, "missing argument 'pos_porosity'"),
        ({"pos_thickness": 8e-05, "pos_porosity": 0.3, "c_rate": 0.1}, "unknown argument 'c_rate'"),
        ({"pos_thickness": "thick", "pos_porosity": 0.3, **CHEN2020_ANODE}, "pos_thickness must be a number"),
        ({"pos_thickness": 8e-05, "pos_porosity": 0.9, **CHEN2020_ANODE}, "pos_porosity = 0.9 is outside the allowed range"),
    ],
)
def test_bad_arguments_get_a_clear_message(make_identity, tool: BatterySimulationTool, arguments: dict, message: str) -> None:
    [(text, step_reward, metrics)] = _calls(tool, make_identity(), [arguments])
    assert text.startswith("Error: ") and message in text and "7 calls left" in text
    assert step_reward == 0.0 and metrics["simulated"] is False


def test_the_conditions_come_from_the_identity(make_identity, tool: BatterySimulationTool) -> None:
    gentle, fast = (json.loads(_calls(tool, make_identity(c_rate=rate), [GOOD])[0][0]) for rate in (0.5, 2.0))
    assert fast["peak_temperature_K"] > gentle["peak_temperature_K"] + 10
    assert fast["discharge_time_s"] < gentle["discharge_time_s"] / 3


def test_episodes_have_their_own_budgets_and_scores(make_identity, tool: BatterySimulationTool) -> None:
    async def run() -> tuple:
        first = await tool.create("a", identity=make_identity(budget=1))
        second = await tool.create("b", identity=make_identity(budget=1))
        await tool.execute(first, dict(GOOD))
        refused = await tool.execute(first, dict(GOOD))
        allowed = await tool.execute(second, {"pos_thickness": 4e-05, "pos_porosity": 0.5, **CHEN2020_ANODE})
        scores = await tool.calc_reward(first), await tool.calc_reward(second)
        await tool.release(first)
        await tool.release(second)
        return refused, allowed, scores

    refused, allowed, scores = anyio.run(run)
    assert refused[0].startswith("Error:") and json.loads(allowed[0])["calls_left"] == 0
    # calc_reward: whether a design meeting both targets was found in the episode
    assert scores == (1.0, 0.0)


def test_creating_an_episode_again_does_not_refill_its_budget(make_identity, tool: BatterySimulationTool) -> None:
    # verl creates each tool per trajectory and a tool server answers a repeated create: neither hands out new calls
    identity = make_identity(budget=2)

    async def run() -> list[str]:
        instance = await tool.create("episode-1", identity=identity)
        texts = [(await tool.execute(instance, dict(GOOD)))[0]]
        assert await tool.create("episode-1", identity=identity) == instance
        texts += [(await tool.execute(instance, dict(GOOD)))[0], (await tool.execute(instance, dict(GOOD)))[0]]
        await tool.release(instance)
        return texts

    first, second, third = anyio.run(run)
    assert [json.loads(text)["calls_left"] for text in (first, second)] == [1, 0]
    assert third.startswith("Error: the simulation budget of 2 calls is used up")
    # a released episode is over: the same id starts afresh
    [(text, _, _)], _ = run_tool_calls(tool, identity, [GOOD], instance_id="episode-1")
    assert json.loads(text)["calls_left"] == 1


def test_the_budget_falls_back_to_the_tool_config(make_identity) -> None:
    identity = make_identity()
    del identity["budget"]
    tool = BatterySimulationTool(budget=1)
    results = _calls(tool, identity, [GOOD, GOOD])
    assert json.loads(results[0][0])["calls_left"] == 0 and results[1][0].startswith("Error:")


def test_the_oracle_never_appears_in_what_the_tool_says(make_identity, tool: BatterySimulationTool) -> None:
    identity = make_identity(budget=4)
    calls = [GOOD, {"pos_thickness": 50, "pos_porosity": 0.3, **CHEN2020_ANODE}, {"pos_thickness": 1e-4, "pos_porosity": 0.6, **CHEN2020_ANODE},
             {"pos_thickness": 9e-05, "pos_porosity": 0.25, **CHEN2020_ANODE}, GOOD]
    oracle = identity["oracle"]
    for text, _, metrics in _calls(tool, identity, calls):
        for value in oracle.values():
            assert repr(value) not in text and f"{value:g}" not in text
        assert "oracle" not in text and "oracle" not in json.dumps(metrics)
    assert "87.654" not in json.dumps(tool.parameters) + tool.description
