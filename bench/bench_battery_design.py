"""bootcamp-battery-design benchmark: designs/s, first-solve latency, cache hit rate of a reference-agent run.

Every rate is printed next to a baseline measured in the same run, on the same designs and conditions:

- designs/s: the package's simulator (one DFN built per process with every design and operating variable as an
  input parameter, one constant-current solve per design) vs rebuilding per design the obvious way (a new DFN model,
  Chen2020 values set to the design, a new ``Simulation`` with an ``Experiment`` "Discharge at I A until 2.5 V",
  then solve), with the largest disagreement between the two in energy and peak temperature;
- first-solve latency, in a fresh process: ``import pybamm``, building the model, the first solve and the next ones;
- a reference-agent run through the rollout engine (generated tasks, bounded concurrency as ``bootcamp eval`` runs
  them): tasks solved, simulator calls per task, episodes/s and the simulator's cache hit rate (the reward
  simulates the answer again, which the tool has just simulated).

Run: ``python bench/bench_battery_design.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time

os.environ["PYBAMM_DISABLE_TELEMETRY"] = "true"


def random_cases(count: int, seed: int) -> list:
    """(design, conditions) pairs drawn uniformly from the supported box and operating ranges."""
    from bootcamp_battery_design.cell import (
        AMBIENT_RANGE_K,
        C_RATE_RANGE,
        HEAT_TRANSFER_RANGE,
        POROSITY_RANGE,
        THICKNESS_RANGE_M,
        CellDesign,
        Conditions,
    )

    rng = random.Random(seed)
    return [
        (CellDesign(rng.uniform(*THICKNESS_RANGE_M), rng.uniform(*POROSITY_RANGE)),
         Conditions(round(rng.uniform(*C_RATE_RANGE), 2), round(rng.uniform(*AMBIENT_RANGE_K), 1),
                    round(rng.uniform(*HEAT_TRANSFER_RANGE), 1)))
        for _ in range(count)
    ]


def rebuild_and_solve(design, conditions) -> tuple[float, float]:
    """The baseline: everything built again for one design; returns (energy Wh, peak temperature K)."""
    import numpy as np
    import pybamm

    from bootcamp_battery_design.simulator import _inputs

    values = _inputs(design, conditions)
    current = values.pop("Current function [A]")
    model = pybamm.lithium_ion.DFN(options={"thermal": "lumped"})
    parameters = pybamm.ParameterValues("Chen2020")
    parameters.update(values)
    experiment = pybamm.Experiment([f"Discharge at {current:.6f} A until 2.5 V"])
    simulation = pybamm.Simulation(model, parameter_values=parameters, experiment=experiment,
                                   solver=pybamm.IDAKLUSolver(options={"num_threads": 1}))
    solution = simulation.solve()
    times = solution["Time [s]"].entries
    power = solution["Voltage [V]"].entries * solution["Current [A]"].entries
    energy = float(((power[1:] + power[:-1]) * np.diff(times)).sum() / 2 / 3600)
    return energy, float(solution["Volume-averaged cell temperature [K]"].entries.max())


def bench_designs(count: int, baseline_count: int, seed: int) -> None:
    from bootcamp_battery_design.simulator import CellSimulator

    cases = random_cases(count, seed)
    simulator = CellSimulator()
    simulator.simulate(*random_cases(1, seed + 1)[0])  # build and first solve outside the timing
    ours, ours_times = [], []
    for design, conditions in cases:
        started = time.perf_counter()
        ours.append(simulator.simulate(design, conditions))
        ours_times.append(time.perf_counter() - started)
    simulator.close()

    rebuild_and_solve(*cases[0])  # imports and first-use costs outside the timing, as for ours
    baseline, baseline_times = [], []
    for design, conditions in cases[:baseline_count]:
        started = time.perf_counter()
        baseline.append(rebuild_and_solve(design, conditions))
        baseline_times.append(time.perf_counter() - started)

    ours_rate, baseline_rate = count / sum(ours_times), baseline_count / sum(baseline_times)
    # the ratio on the very same designs (the baseline runs on the first ones only: it is slow)
    same = sum(baseline_times) / sum(ours_times[:baseline_count])
    energy_error = max(abs(result.energy_Wh - energy) / energy
                       for result, (energy, _) in zip(ours, baseline))
    temperature_error = max(abs(result.peak_temperature_K - temperature)
                            for result, (_, temperature) in zip(ours, baseline))
    print(f"random designs ({count} ours, {baseline_count} baseline; 0.5-2C, 15-35 °C, h 10-40)")
    print(f"  built once, inputs     {ours_rate:8.2f} designs/s   ({1000 / ours_rate:6.0f} ms/design)")
    print(f"  rebuilt per design     {baseline_rate:8.2f} designs/s   ({1000 / baseline_rate:6.0f} ms/design)")
    print(f"  ratio, same designs    {same:8.2f}x")
    print(f"  agreement              max |dE| {100 * energy_error:.2f}%, max |dTmax| {temperature_error:.2f} K")


_LATENCY = """
import os, time, statistics
os.environ["PYBAMM_DISABLE_TELEMETRY"] = "true"
started = time.perf_counter(); import pybamm; imported = time.perf_counter() - started
from bootcamp_battery_design.cell import CellDesign, Conditions
from bootcamp_battery_design.simulator import build_simulation, solve
started = time.perf_counter(); simulation = build_simulation(); built = time.perf_counter() - started
conditions = Conditions(1.0, 298.15, 10.0)
started = time.perf_counter(); solve(simulation, CellDesign(7.56e-05, 0.335), conditions)
first = time.perf_counter() - started
later = []
for index in range(8):
    started = time.perf_counter(); solve(simulation, CellDesign(6e-05 + index * 5e-06, 0.3), conditions)
    later.append(time.perf_counter() - started)
print(imported, built, first, statistics.median(later))
"""


def bench_latency() -> None:
    output = subprocess.run([sys.executable, "-c", _LATENCY], capture_output=True, text=True, check=True).stdout
    imported, built, first, later = (float(value) for value in output.split())
    print("first-solve latency (fresh process, 1C)")
    print(f"  import pybamm          {imported:8.2f} s")
    print(f"  build the model        {built:8.2f} s")
    print(f"  first solve            {first:8.2f} s")
    print(f"  later solves (median)  {later:8.3f} s   (first / later {first / later:.1f}x)")


def bench_agent(tasks: int, concurrency: int, seed: int) -> None:
    import anyio

    from bootcamp_battery_design.simulator import get_simulator
    from bootcamp_core.data.generate import config_for_bootcamp, iter_records
    from bootcamp_core.episode.engine import run_episode
    from bootcamp_core.episode.policies import ReferencePolicy
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    config = config_for_bootcamp("battery_design", registry, overrides={"split_samples": f"test:{tasks}",
                                                                         "seed": seed})
    started = time.perf_counter()
    records = list(iter_records(config, "test", registry))
    generated_s = time.perf_counter() - started
    simulator = get_simulator()
    requests, hits = simulator.stats.requests, simulator.stats.cache_hits
    policy = ReferencePolicy(registry)
    results = []

    async def play() -> None:
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(record: dict) -> None:
            async with limiter:
                results.append(await run_episode(record, policy, registry=registry))

        async with anyio.create_task_group() as group:
            for record in records:
                group.start_soon(one, record)

    started = time.perf_counter()
    anyio.run(play)
    played_s = time.perf_counter() - started
    solved = sum(result.score == 1.0 for result in results)
    calls = [result.turn_record["tool_calls"] for result in results]
    asked = simulator.stats.requests - requests
    hit = simulator.stats.cache_hits - hits
    print(f"reference agent ({tasks} generated tasks, {concurrency} episodes at a time)")
    print(f"  generation             {tasks / generated_s:8.2f} tasks/s (one oracle simulation or more per task)")
    print(f"  solved                 {solved}/{tasks}")
    budget = max(record["reward_model"]["ground_truth"]["budget"] for record in records)
    print(f"  simulator calls/task   {statistics.mean(calls):8.2f}   (budget {budget}; max {max(calls)})")
    print(f"  episodes/s             {tasks / played_s:8.2f}")
    print(f"  cache hit rate         {hit / max(1, asked):8.2f}   ({hit} of {asked} simulator requests)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args()
    designs, baseline, tasks = (8, 3, 10) if arguments.quick else (40, 10, 40)
    bench_latency()
    bench_designs(designs, baseline, arguments.seed)
    bench_agent(tasks, 8, arguments.seed)


if __name__ == "__main__":
    main()
