"""The PyBaMM simulation: one DFN model with lumped thermal, built once per process, solved per design.

Every design and operating variable is an input parameter of one built simulation, so a new design is a new solve,
never a new model: the three through-cell domains use :class:`pybamm.SymbolicUniform1DSubMesh`, which lets the
thicknesses be inputs, and the discharge is a plain constant-current solve with the current as an input (Chen2020's
own 2.5 V cut-off event ends it), not an ``Experiment``. A built simulation is not thread-safe, so each process owns
one, used only from one worker thread (:func:`get_simulator`); the tool and the reward share it and its cache.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import attrs

from bootcamp_battery_design.cell import CellDesign, Conditions, DesignError, geometry

__all__ = ["CellPerformance", "CellSimulator", "SimulationError", "get_simulator", "simulate"]

#: Input parameters of the built model; every other parameter is Chen2020's.
INPUT_NAMES = (
    "Positive electrode thickness [m]",
    "Positive electrode porosity",
    "Positive electrode active material volume fraction",
    "Negative electrode thickness [m]",
    "Negative electrode porosity",
    "Negative electrode active material volume fraction",
    "Initial concentration in negative electrode [mol.m-3]",
    "Electrode width [m]",
    "Nominal cell capacity [A.h]",
    "Ambient temperature [K]",
    "Initial temperature [K]",
    "Total heat transfer coefficient [W.m-2.K-1]",
    "Current function [A]",
)
OUTPUT_NAMES = ("Time [s]", "Voltage [V]", "Current [A]", "Volume-averaged cell temperature [K]")
#: The solve runs for this many nominal discharge times at most; the voltage cut-off ends it well before.
TIME_LIMIT_FACTOR = 1.5
#: Results kept per process (a result is a few hundred bytes).
CACHE_SIZE = 20_000


class SimulationError(DesignError):
    """The solver could not simulate this design; the message is meant for the model as is."""


@attrs.frozen
class CellPerformance:
    """What one constant-current discharge of a design gives."""

    specific_energy_Wh_kg: float
    peak_temperature_K: float
    discharge_time_s: float
    energy_Wh: float
    mass_kg: float
    nominal_capacity_Ah: float
    delivered_capacity_Ah: float
    termination: str

    @property
    def utilisation(self) -> float:
        """Delivered over nominal capacity: well below 1 when transport limits the discharge."""
        return self.delivered_capacity_Ah / self.nominal_capacity_Ah


def _inputs(design: CellDesign, conditions: Conditions) -> dict[str, float]:
    cell = geometry(design)
    values = (
        design.thickness_m,
        design.porosity,
        1.0 - design.porosity,
        cell.negative_thickness_m,
        design.neg_porosity,
        1.0 - design.neg_porosity,
        cell.negative_initial_concentration,
        cell.electrode_width_m,
        cell.nominal_capacity_Ah,
        conditions.ambient_temperature_K,
        conditions.ambient_temperature_K,
        conditions.heat_transfer_coefficient,
        conditions.c_rate * cell.nominal_capacity_Ah,
    )
    return dict(zip(INPUT_NAMES, values))


def _integral(values: Any, times: Any) -> float:
    """Trapezoidal integral (numpy renamed ``trapz``; this works on every version)."""
    return float(((values[1:] + values[:-1]) * (times[1:] - times[:-1])).sum() / 2)


def build_simulation(threads: int = 1) -> Any:
    """A built DFN (lumped thermal, Chen2020) whose design and operating variables are all input parameters."""
    # Before the import: PyBaMM may otherwise ask about telemetry on stdin, which would hang a server.
    os.environ["PYBAMM_DISABLE_TELEMETRY"] = "true"
    import pybamm

    model = pybamm.lithium_ion.DFN(options={"thermal": "lumped"})
    parameters = pybamm.ParameterValues("Chen2020")
    parameters.update({name: "[input]" for name in INPUT_NAMES})
    submeshes = dict(model.default_submesh_types)
    for domain in ("negative electrode", "separator", "positive electrode"):
        submeshes[domain] = pybamm.SymbolicUniform1DSubMesh
    # One solver thread: the machine's cores belong to the many episodes, and results stay bit-for-bit repeatable.
    solver = pybamm.IDAKLUSolver(output_variables=list(OUTPUT_NAMES), options={"num_threads": threads})
    simulation = pybamm.Simulation(model, parameter_values=parameters, submesh_types=submeshes, solver=solver)
    simulation.build()
    return simulation


def solve(simulation: Any, design: CellDesign, conditions: Conditions) -> CellPerformance:
    """One constant-current discharge of ``design`` under ``conditions`` on a built simulation."""
    import pybamm

    inputs = _inputs(design, conditions)
    end = TIME_LIMIT_FACTOR * 3600.0 / conditions.c_rate
    try:
        solution = simulation.solve([0.0, end], inputs=inputs)
    except pybamm.SolverError as error:
        raise SimulationError(f"the solver failed for this design ({str(error).splitlines()[0][:200]})") from None
    times, voltage, current, temperature = (solution[name].entries for name in OUTPUT_NAMES)
    if len(times) < 2:
        raise SimulationError("the solver returned no discharge for this design")
    energy = _integral(voltage * current, times) / 3600.0
    cell = geometry(design)
    return CellPerformance(
        specific_energy_Wh_kg=energy / cell.mass_kg,
        peak_temperature_K=float(temperature.max()),
        discharge_time_s=float(times[-1]),
        energy_Wh=energy,
        mass_kg=cell.mass_kg,
        nominal_capacity_Ah=cell.nominal_capacity_Ah,
        delivered_capacity_Ah=_integral(current, times) / 3600.0,
        termination=str(solution.termination),
    )


@attrs.define
class SimulatorStats:
    """Counters of one process's simulator."""

    solves: int = 0
    cache_hits: int = 0
    failures: int = 0
    build_s: float = 0.0
    first_solve_s: float = 0.0
    solve_s: float = 0.0

    @property
    def requests(self) -> int:
        """Every simulation asked for: solved, or answered from the cache or a solve already under way."""
        return self.solves + self.cache_hits

    @property
    def hit_rate(self) -> float:
        """Share of requests answered without a solve of their own."""
        return self.cache_hits / self.requests if self.requests else 0.0


class CellSimulator:
    """A built simulation behind one worker thread, with results cached by (design, conditions).

    ``simulate`` (blocking, any thread) and ``simulate_async`` (awaits without blocking the event loop) both queue
    onto the one worker thread; concurrent requests for the same inputs share one solve.
    """

    def __init__(self, cache_size: int = CACHE_SIZE) -> None:
        self.cache_size = cache_size
        self.stats = SimulatorStats()
        self._simulation: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple, CellPerformance | SimulationError] = OrderedDict()
        self._pending: dict[tuple, Future] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="battery-design-simulator")
        self._worker: int | None = None

    def _lookup(self, key: tuple) -> Any:
        """(cached result, None) or (None, future of the solve that will produce it)."""
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.stats.cache_hits += 1
                return self._cache[key], None
            future = self._pending.get(key)
            if future is not None and not future.cancelled():
                self.stats.cache_hits += 1
                return None, future
            future = self._executor.submit(self._solve, key)
            self._pending[key] = future
            return None, future

    def _solve(self, key: tuple) -> CellPerformance:
        self._worker = threading.get_ident()
        design, conditions = key
        try:
            if self._simulation is None:
                started = time.perf_counter()
                self._simulation = build_simulation()
                self.stats.build_s = time.perf_counter() - started
            started = time.perf_counter()
            try:
                result: CellPerformance | SimulationError = solve(self._simulation, design, conditions)
            except SimulationError as error:
                result = error
            elapsed = time.perf_counter() - started
            with self._lock:
                if self.stats.solves == 0:
                    self.stats.first_solve_s = elapsed
                self.stats.solves += 1
                self.stats.solve_s += elapsed
                self.stats.failures += isinstance(result, SimulationError)
                self._cache[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        finally:
            with self._lock:
                self._pending.pop(key, None)
        if isinstance(result, SimulationError):
            raise result
        return result

    @staticmethod
    def _result(result: Any) -> CellPerformance:
        if isinstance(result, SimulationError):
            raise SimulationError(str(result))
        return result

    def simulate(self, design: CellDesign, conditions: Conditions) -> CellPerformance:
        """The performance of ``design`` under ``conditions`` (blocks until solved; raises SimulationError)."""
        key = (design, conditions)
        if threading.get_ident() == self._worker:  # called from a solve: queueing would wait for ourselves
            with self._lock:
                cached = self._cache.get(key)
            return self._result(cached) if cached is not None else self._solve(key)
        cached, future = self._lookup(key)
        return self._result(cached) if future is None else future.result()

    async def simulate_async(self, design: CellDesign, conditions: Conditions) -> CellPerformance:
        """:meth:`simulate` for async code: the event loop keeps running while the worker solves."""
        cached, future = self._lookup((design, conditions))
        if future is None:
            return self._result(cached)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # another async library: wait in a thread instead
            import anyio

            return await anyio.to_thread.run_sync(future.result)
        # Shielded: a cancelled caller (a tool timeout) must not cancel the solve that other callers share.
        return await asyncio.shield(asyncio.wrap_future(future))

    def clear_cache(self) -> None:
        """Forget every cached result (the built model stays)."""
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        """Stop the worker thread once queued solves are done."""
        self._executor.shutdown(wait=True)


_simulator: CellSimulator | None = None
_simulator_lock = threading.Lock()


def get_simulator() -> CellSimulator:
    """This process's simulator, shared by the tool, the reward and the generator."""
    global _simulator
    if _simulator is None:
        with _simulator_lock:
            if _simulator is None:
                _simulator = CellSimulator()
    return _simulator


def simulate(design: CellDesign, conditions: Conditions) -> CellPerformance:
    """``get_simulator().simulate(design, conditions)``."""
    return get_simulator().simulate(design, conditions)


def _after_fork_in_child() -> None:
    # A forked child has no worker thread and must not touch the parent's solver state: it starts afresh, keeping
    # the parent's cached results (immutable values, so a plain copy is safe).
    global _simulator, _simulator_lock
    parent = _simulator
    _simulator_lock = threading.Lock()
    _simulator = None
    if parent is not None:
        child = get_simulator()
        child._cache.update(parent._cache)


os.register_at_fork(after_in_child=_after_fork_in_child)
