"""The PyBaMM simulation: a golden design, physics sanity, caching, one worker thread, forks."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from bootcamp_battery_design.cell import CellDesign, Conditions
from bootcamp_battery_design.simulator import CellSimulator, SimulationError, get_simulator

REFERENCE = CellDesign(75.6e-6, 0.335)
ROOM = Conditions(1.0, 298.15, 10.0)


def test_golden_reference_design_at_1c(simulator: CellSimulator) -> None:
    # Chen2020 at 1C, measured independently with PyBaMM's own Experiment: 4.95 Ah, 17.4 Wh, 311.9 K
    result = simulator.simulate(REFERENCE, ROOM)
    assert result.termination == "event: Minimum voltage [V]"
    assert result.delivered_capacity_Ah == pytest.approx(4.95, rel=0.02)
    assert result.energy_Wh == pytest.approx(17.4, rel=0.02)
    assert result.peak_temperature_K == pytest.approx(311.9, abs=1.0)
    assert result.specific_energy_Wh_kg == pytest.approx(17.4 / 0.06233, rel=0.02)
    assert result.discharge_time_s == pytest.approx(3562, rel=0.02)


@pytest.mark.slow
def test_golden_reference_design_at_3c(simulator: CellSimulator) -> None:
    # electrolyte depletion in the cathode ends a 3C discharge early: 7.95 Wh at a peak of 355.8 K
    result = simulator.simulate(REFERENCE, Conditions(3.0, 298.15, 10.0))
    assert result.energy_Wh == pytest.approx(7.95, rel=0.02)
    assert result.peak_temperature_K == pytest.approx(355.8, abs=1.0)


def test_thicker_cathodes_deliver_more_at_a_low_rate(simulator: CellSimulator) -> None:
    gentle = Conditions(0.5, 298.15, 10.0)
    thin, thick = (simulator.simulate(CellDesign(thickness, 0.35), gentle) for thickness in (50e-6, 110e-6))
    assert thick.delivered_capacity_Ah > thin.delivered_capacity_Ah
    assert thick.energy_Wh > thin.energy_Wh
    assert thick.specific_energy_Wh_kg > thin.specific_energy_Wh_kg
    assert thin.utilisation > 0.95 and thick.utilisation > 0.95


def test_higher_rates_run_hotter_and_shorter(simulator: CellSimulator) -> None:
    results = [simulator.simulate(REFERENCE, Conditions(rate, 298.15, 10.0)) for rate in (0.5, 1.0, 2.0)]
    temperatures = [result.peak_temperature_K for result in results]
    times = [result.discharge_time_s for result in results]
    assert temperatures == sorted(temperatures) and temperatures[0] + 10 < temperatures[-1]
    assert times == sorted(times, reverse=True)
    assert results[0].specific_energy_Wh_kg > results[-1].specific_energy_Wh_kg


def test_cooling_and_ambient_move_the_peak_temperature(simulator: CellSimulator) -> None:
    weak, strong = (simulator.simulate(REFERENCE, Conditions(1.0, 298.15, h)) for h in (10.0, 40.0))
    assert strong.peak_temperature_K < weak.peak_temperature_K
    warm = simulator.simulate(REFERENCE, Conditions(1.0, 308.15, 10.0))
    assert warm.peak_temperature_K > weak.peak_temperature_K


def test_a_thick_dense_cathode_is_transport_limited_at_2c(simulator: CellSimulator) -> None:
    # the electrolyte cannot reach the back of the electrode: most of the cathode is never used
    limited = simulator.simulate(CellDesign(140e-6, 0.2), Conditions(2.0, 298.15, 10.0))
    assert limited.utilisation < 0.5
    assert limited.specific_energy_Wh_kg < 100


def test_results_are_cached_by_inputs(simulator: CellSimulator) -> None:
    design = CellDesign(66.6e-6, 0.333)
    first = simulator.simulate(design, ROOM)
    solves, hits = simulator.stats.solves, simulator.stats.cache_hits
    again = simulator.simulate(CellDesign(6.66e-5, 0.3330001), ROOM)  # the same design, other digits
    assert again is first
    assert (simulator.stats.solves, simulator.stats.cache_hits) == (solves, hits + 1)
    other = simulator.simulate(design, Conditions(1.0, 298.15, 11.0))
    assert other != first and simulator.stats.solves == solves + 1


def test_a_solve_does_not_depend_on_what_was_solved_before() -> None:
    fresh = CellSimulator()
    try:
        design = CellDesign(90e-6, 0.3)
        first = fresh.simulate(design, ROOM)
        fresh.simulate(CellDesign(130e-6, 0.22), Conditions(2.0, 308.15, 10.0))
        fresh.clear_cache()
        assert fresh.simulate(design, ROOM) == first  # bit for bit
        assert get_simulator().simulate(design, ROOM) == first
    finally:
        fresh.close()


def test_concurrent_requests_share_one_solve_on_one_worker_thread(simulator: CellSimulator) -> None:
    design = CellDesign(71.7e-6, 0.37)

    async def ask() -> list:
        return await asyncio.gather(*(simulator.simulate_async(design, ROOM) for _ in range(4)))

    solves = simulator.stats.solves
    with ThreadPoolExecutor(max_workers=3) as pool:  # reward threads, at the same time as the event loop
        others = [pool.submit(simulator.simulate, CellDesign(thickness, 0.37), ROOM)
                  for thickness in (61.1e-6, 62.2e-6, 63.3e-6)]
        results = asyncio.run(ask())
        assert all(future.result().peak_temperature_K > 298.15 for future in others)
    assert all(result is results[0] for result in results)
    assert simulator.stats.solves == solves + 4  # one for the shared design, three for the others
    workers = [thread for thread in threading.enumerate() if thread.name.startswith("battery-design-simulator")]
    assert len(workers) == 1


def _simulate_in_child(_: int) -> tuple:
    cached = get_simulator().simulate(CellDesign(77.7e-6, 0.3), ROOM)
    solves = get_simulator().stats.solves
    new = get_simulator().simulate(CellDesign(77.8e-6, 0.3), ROOM)  # builds the child's own model
    return cached.specific_energy_Wh_kg, cached.peak_temperature_K, solves, new.peak_temperature_K


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_process_gets_its_own_simulator_and_the_same_results(simulator: CellSimulator) -> None:
    parent = simulator.simulate(CellDesign(77.7e-6, 0.3), ROOM)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        energy, temperature, solves, new = pool.map(_simulate_in_child, [0])[0]
    # the child kept the parent's cache (no solve for a known design) and solved a new one on a model of its own
    assert (energy, temperature, solves) == (parent.specific_energy_Wh_kg, parent.peak_temperature_K, 0)
    assert new == simulator.simulate(CellDesign(77.8e-6, 0.3), ROOM).peak_temperature_K


def test_a_solver_failure_is_a_clear_cached_error_and_the_model_keeps_working(simulator: CellSimulator) -> None:
    # 150 K is far outside the supported range (the tool never asks for it): the solver cannot start from there
    frozen = Conditions(1.0, 150.0, 10.0)
    with pytest.raises(SimulationError, match="^the solver failed for this design"):
        simulator.simulate(REFERENCE, frozen)
    solves, failures = simulator.stats.solves, simulator.stats.failures
    with pytest.raises(SimulationError, match="^the solver failed for this design"):
        simulator.simulate(REFERENCE, frozen)
    assert (simulator.stats.solves, simulator.stats.failures) == (solves, failures)
    assert simulator.simulate(CellDesign(75.5e-6, 0.335), ROOM).termination == "event: Minimum voltage [V]"
