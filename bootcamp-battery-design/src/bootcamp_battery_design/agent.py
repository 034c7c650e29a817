"""The reference agent: a trust-region search over the four design variables with the simulator tool, within the budget.

It reads the task's conditions, targets, box and budget (what the prompt says), and tool results; never the oracle.
With an areal-capacity band it only ever simulates designs at the band's centre: the capacity is the prompt's
formula of the positive electrode's thickness and porosity, so the thickness follows from the porosity and the search
moves the other three variables. Each turn it fits local linear models of the energy margin and the peak temperature
to the designs simulated so far (with physics-signed prior slopes, so one result is enough to move), and simulates
the design in the trust region that the models say meets the energy and temperature targets by the widest margin. It answers as soon as a simulated
design meets every target, or with the closest design when the budget is spent.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import ClassVar

import attrs
import numpy as np

from bootcamp_battery_design.answer import format_answer
from bootcamp_battery_design.cell import DESIGN_VARIABLES, areal_capacity, thickness_for_areal_capacity
from bootcamp_battery_design.tools import DEFAULT_BUDGET, design_bounds
from bootcamp_core import ReferenceAgent, message_text, tool_call_message

__all__ = ["Probe", "SearchAgent", "Task", "next_design", "start_point"]

TOOL_NAME = "run_battery_simulation"
#: One percent of specific energy is weighed like 0.3 K of peak temperature: near the ratio of the targets' own
#: tolerances (0.1% of the oracle's energy, 0.01-0.05 K above its peak), so the search aims at the middle of the narrow
#: region that meets both. Measured on the tasks of 0.6.0: 1 K solves 39/40 train-split and 58/60
#: test-split tasks, 0.3 K 39/40 and 59/60.
ENERGY_UNIT = 0.01
TEMPERATURE_UNIT_K = 0.3
#: Candidate designs drawn in the trust region each turn.
CANDIDATES = 4000
#: Trust-region radius (normalised box units): initial, smallest and largest.
RADIUS = (0.3, 0.03, 0.8)
#: Where the search starts, in normalised box coordinates (one per design variable): a mid-thickness, fairly porous
#: cathode, a dense anode and the smallest N/P ratio (extra anode only adds mass).
START = (0.35, 0.5, 0.2, 0.0)
#: Prior slopes per normalised unit of each design variable: energy margin in percent (thicker and denser
#: electrodes and less spare anode store more per kilogram) and peak temperature as a multiple of the allowed rise
#: above ambient (the same changes run hotter).
ENERGY_PRIOR = (25.0, -15.0, -5.0, -13.0)
HEAT_PRIOR = (0.9, -0.45, -0.2, -0.13)
#: The same at a fixed areal capacity, over (porosity, negative porosity, N/P ratio): a more porous cathode of the
#: same loading is thicker (more electrolyte mass, a shorter electrode), so slightly less energy per kilogram.
ENERGY_PRIOR_AT_CAPACITY = (-3.0, -5.0, -13.0)
HEAT_PRIOR_AT_CAPACITY = (-0.1, -0.2, -0.13)
#: Weight of the prior slopes against the results: small, so that the designs simulated so far decide as soon as
#: there are a few of them (the prior only steers the first steps and the directions not yet explored). Chosen on
#: 40 train-split tasks (0.5: 34/40 solved, 0.1: 38/40, 0.05: 39/40, 0.02: 40/40) and confirmed on the test split.
PRIOR_WEIGHT = 0.02
#: Designs closer than this (normalised) to one already tried are not proposed again.
MIN_SPACING = 0.015


@attrs.frozen
class Task:
    """What the agent may know: conditions, targets, the search box and the budget."""

    c_rate: float
    ambient_K: float
    energy_target: float
    temperature_target_K: float
    bounds: tuple[tuple[float, float], ...]
    budget: int
    #: The areal-capacity band [mAh/cm2], or None when the task has none.
    capacity_band: tuple[float, float] | None = None

    @classmethod
    def from_identity(cls, identity: dict) -> Task:
        """The public part of an identity (the oracle is never read)."""
        band = identity["targets"].get("areal_capacity_mAh_cm2")
        return cls(
            c_rate=float(identity["conditions"]["c_rate"]),
            ambient_K=float(identity["conditions"]["ambient_temperature_K"]),
            energy_target=float(identity["targets"]["min_specific_energy_Wh_kg"]),
            temperature_target_K=float(identity["targets"]["max_peak_temperature_K"]),
            bounds=design_bounds(identity),
            budget=int(identity.get("budget", DEFAULT_BUDGET)),
            capacity_band=None if band is None else (float(band[0]), float(band[1])),
        )

    def normalise(self, values: Sequence[float]) -> tuple[float, ...]:
        return tuple((value - low) / (high - low or 1.0) for value, (low, high) in zip(values, self.bounds))

    def design(self, point: Sequence[float]) -> tuple[float, ...]:
        """The design at normalised coordinates, rounded to the simulator's resolution and kept in the box."""
        values = []
        for u, (low, high), variable in zip(point, self.bounds, DESIGN_VARIABLES):
            value = float(f"{round((low + u * (high - low)) / variable.resolution) * variable.resolution:.12g}")
            values.append(min(max(value, low), high))
        return tuple(values)

    @property
    def size(self) -> int:
        """How many coordinates the search moves: all four, or three at a fixed areal capacity."""
        return len(self.bounds) - (self.capacity_band is not None)

    def free(self, values: Sequence[float]) -> tuple[float, ...]:
        """The search coordinates of a design: its normalised coordinates, without the thickness at a fixed areal
        capacity (which the porosity sets)."""
        point = self.normalise(values)
        return point if self.capacity_band is None else point[1:]

    def porosity_span(self) -> tuple[float, float]:
        """The normalised porosities whose thickness at the band's centre lies in the window (all of them without a
        band)."""
        if self.capacity_band is None:
            return 0.0, 1.0
        target = sum(self.capacity_band) / 2
        (thickness_low, thickness_high), (porosity_low, porosity_high) = self.bounds[0], self.bounds[1]
        span = porosity_high - porosity_low or 1.0
        low = (1 - target / areal_capacity(thickness_low, 0.0) - porosity_low) / span
        high = (1 - target / areal_capacity(thickness_high, 0.0) - porosity_low) / span
        return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)

    def design_at(self, free: Sequence[float]) -> tuple[float, ...]:
        """The design at search coordinates ``free``; at a fixed areal capacity the thickness that puts it at the
        band's centre (where that thickness would leave the window, the window's edge and the porosity that gives
        the centre there)."""
        if self.capacity_band is None:
            return self.design(free)
        target = sum(self.capacity_band) / 2
        (thickness_low, thickness_high), (porosity_low, porosity_high) = self.bounds[0], self.bounds[1]
        porosity = porosity_low + min(max(free[0], 0.0), 1.0) * (porosity_high - porosity_low)
        thickness = thickness_for_areal_capacity(target, porosity)
        if not thickness_low <= thickness <= thickness_high:
            thickness = min(max(thickness, thickness_low), thickness_high)
            porosity = min(max(1 - target / areal_capacity(thickness, 0.0), porosity_low), porosity_high)
        return self.design(self.normalise((thickness, porosity))[:2] + tuple(free[1:]))


@attrs.frozen
class Probe:
    """One simulated design and what it gave."""

    values: tuple[float, ...]
    specific_energy: float
    peak_temperature_K: float
    met: bool  # as the tool judged it, on unrounded values

    def margins(self, task: Task) -> tuple[float, float]:
        """(energy margin, temperature margin) in units of :data:`ENERGY_UNIT` and :data:`TEMPERATURE_UNIT_K`; both
        >= 0 means both targets met (the agent's designs meet an areal-capacity band by construction)."""
        energy = (self.specific_energy / task.energy_target - 1.0) / ENERGY_UNIT
        return energy, (task.temperature_target_K - self.peak_temperature_K) / TEMPERATURE_UNIT_K

    def merit(self, task: Task) -> float:
        return min(self.margins(task))


def _fit(points: np.ndarray, values: np.ndarray, anchor: np.ndarray, prior: np.ndarray, scale: float) -> np.ndarray:
    """Weighted least squares of ``value = c + g . (x - anchor)`` with a ridge towards the prior slopes ``prior``."""
    offsets = points - anchor
    weights = np.exp(-(offsets**2).sum(axis=1) / (2 * scale**2))
    features = np.hstack([np.ones((len(points), 1)), offsets])
    normal = features.T @ (weights[:, None] * features)
    right = features.T @ (weights * values)
    ridge = np.full(len(anchor) + 1, PRIOR_WEIGHT)
    ridge[0] = 1e-9
    normal += np.diag(ridge)
    right[1:] += PRIOR_WEIGHT * prior
    return np.linalg.solve(normal, right)


def start_point(task: Task) -> tuple[float, ...]:
    """Where the search starts (search coordinates, see :meth:`Task.free`), from the stated rate: :data:`START`,
    thinner and more porous the faster the discharge (electrolyte transport and heat limit thick, dense cathodes at
    high rate); at a fixed areal capacity the capacity sets the thickness."""
    faster = min(max(task.c_rate - 0.5, 0.0), 1.5)
    point = (max(START[0] - 0.2 * faster, 0.0), min(START[1] + 0.25 * faster, 1.0), *START[2:])
    return point if task.capacity_band is None else point[1:]


def next_design(task: Task, probes: list[Probe], failed: Sequence[Sequence[float]] = ()) -> tuple[float, ...]:
    """The design to simulate next (values in the order of the design variables); ``failed`` designs are never
    proposed again."""
    size = task.size
    visited = [task.free(design) for design in failed]
    if not probes:
        if not visited:
            return task.design_at(start_point(task))
        return task.design_at([0.5 * value + 0.1 for value in start_point(task)])
    coordinates = np.array([task.free(probe.values) for probe in probes])
    visited = np.array(visited + [tuple(row) for row in coordinates])
    best = max(range(len(probes)), key=lambda index: probes[index].merit(task))
    anchor = coordinates[best]
    radius = _radius(task, probes)
    rise = max(task.temperature_target_K - task.ambient_K, 1.0)
    energy = np.array([probe.margins(task)[0] for probe in probes])
    heat = np.array([probe.peak_temperature_K for probe in probes])
    scale = max(radius, 0.2)
    energy_prior, heat_prior = ((ENERGY_PRIOR, HEAT_PRIOR) if task.capacity_band is None
                                else (ENERGY_PRIOR_AT_CAPACITY, HEAT_PRIOR_AT_CAPACITY))
    energy_model = _fit(coordinates, energy, anchor, np.array(energy_prior[:size]), scale)
    heat_model = _fit(coordinates, heat, anchor, rise * np.array(heat_prior[:size]), scale)
    # Candidates: uniform in the trust-region ball around the best design so far, clipped to the box.
    generator = np.random.default_rng(len(probes) + 7919 * len(failed))
    directions = generator.normal(size=(CANDIDATES, size))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    lengths = radius * generator.random(CANDIDATES) ** (1 / size)
    candidates = np.clip(anchor + directions * lengths[:, None], 0.0, 1.0)
    if task.capacity_band is not None:  # porosities whose thickness at the capacity lies in the window
        candidates[:, 0] = np.clip(candidates[:, 0], *task.porosity_span())
    distances = np.sqrt(((candidates[:, None, :] - visited[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    offsets = candidates - anchor
    predicted_energy = energy_model[0] + offsets @ energy_model[1:]
    predicted_heat = heat_model[0] + offsets @ heat_model[1:]
    score = np.minimum(predicted_energy, (task.temperature_target_K - predicted_heat) / TEMPERATURE_UNIT_K)
    # ties (a flat model): the nearer candidate, where the linear model is most trustworthy
    score -= 1e-3 * np.linalg.norm(offsets, axis=1)
    score[distances < MIN_SPACING] = -math.inf
    if not np.isfinite(score).any():
        return task.design_at(anchor)
    return task.design_at(candidates[int(np.argmax(score))])


def _radius(task: Task, probes: list[Probe]) -> float:
    """Trust-region radius after the probes so far: grows after an improving step, shrinks after a worse one."""
    radius = RADIUS[0]
    best = probes[0].merit(task)
    for index in range(1, len(probes)):
        merit = probes[index].merit(task)
        if merit > best:
            radius = min(RADIUS[2], radius * 1.5)
            best = merit
        else:
            radius = max(RADIUS[1], radius * 0.5)
    return radius


def probes_from_messages(messages: list[dict]) -> tuple[list[Probe], list[tuple[float, ...]], int]:
    """(designs simulated so far, designs the tool could not simulate, tool calls made so far)."""
    probes: list[Probe] = []
    failed: list[tuple[float, ...]] = []
    asked: dict[str, dict] = {}
    calls = 0
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") == TOOL_NAME:
                    calls += 1
                    asked[str(call.get("id"))] = function
        elif message.get("role") == "tool":
            try:
                result = json.loads(message_text(message.get("content")))
                probes.append(Probe(tuple(float(result[variable.key]) for variable in DESIGN_VARIABLES),
                                    float(result["specific_energy_Wh_kg"]), float(result["peak_temperature_K"]),
                                    bool(result["all_targets_met"])))
                continue
            except (ValueError, TypeError, KeyError):
                pass
            # an error: nothing was simulated; remember the design so it is not asked for again
            try:
                arguments = json.loads(asked[str(message.get("tool_call_id"))]["arguments"])
                failed.append(tuple(float(arguments[variable.argument]) for variable in DESIGN_VARIABLES))
            except (ValueError, TypeError, KeyError):
                continue
    return probes, failed, calls


class SearchAgent(ReferenceAgent):
    """Trust-region search with local linear models; answers the first design that meets every target."""

    name: ClassVar[str] = "design_search"
    generators: ClassVar[tuple[str, ...]] = ("cell_design",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A simulator call while no design meets every target and budget is left, else the final answer."""
        task = Task.from_identity(identity)
        probes, failed, calls = probes_from_messages(messages)
        solved = [probe for probe in probes if probe.met]
        if solved or calls >= task.budget or (len(failed) >= 2 and not probes):
            return self._answer(task, solved or probes)
        design = next_design(task, probes, failed)
        arguments = {variable.argument: value for variable, value in zip(DESIGN_VARIABLES, design)}
        return tool_call_message(messages, (TOOL_NAME, arguments))

    @staticmethod
    def _answer(task: Task, candidates: list[Probe]) -> dict:
        if not candidates:
            return {"role": "assistant", "content": "The simulator returned no results, so I have no design to give."}
        best = max(candidates, key=lambda probe: (probe.met, probe.merit(task)))
        verdict = "meets every target" if best.met else "is the closest design I found"
        return {
            "role": "assistant",
            "content": (
                f"The design with a {best.values[0] * 1e6:.2f} µm positive electrode at porosity {best.values[1]:g}, "
                f"negative porosity {best.values[2]:g} and N/P ratio {best.values[3]:g} gives "
                f"{best.specific_energy:g} Wh/kg at a peak of {best.peak_temperature_K:g} K and {verdict}.\n\n"
                f"{format_answer(*best.values)}"
            ),
        }
