"""The reference agent: a trust-region search over (thickness, porosity) with the simulator tool, within the budget.

It reads the task's conditions, targets, box and budget (what the prompt says), and tool results; never the oracle.
Each turn it fits local linear models of the energy margin and the peak temperature to the designs simulated so far
(with physics-signed prior slopes, so one result is enough to move), and simulates the design in the trust region
that the models say meets both targets by the widest margin. It answers as soon as a simulated design meets both
targets, or with the closest design when the budget is spent.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from typing import ClassVar

import attrs

from bootcamp_battery_design.answer import format_answer
from bootcamp_battery_design.tools import DEFAULT_BUDGET, design_bounds
from bootcamp_core import ReferenceAgent, message_text, tool_call_message

__all__ = ["Probe", "SearchAgent", "Task", "next_design"]

TOOL_NAME = "run_battery_simulation"
#: One percent of specific energy is weighed like one kelvin of peak temperature.
ENERGY_UNIT = 0.01
TEMPERATURE_UNIT_K = 1.0
#: Candidate designs per axis of the normalised box.
GRID = 61
#: Trust-region radius (normalised box units): initial, smallest and largest.
RADIUS = (0.25, 0.02, 0.6)
#: Where the search starts, in normalised box coordinates (thickness, porosity).
START = (0.3, 0.5)


@attrs.frozen
class Task:
    """What the agent may know: conditions, targets, the search box and the budget."""

    c_rate: float
    ambient_K: float
    energy_target: float
    temperature_target_K: float
    thickness_range: tuple[float, float]
    porosity_range: tuple[float, float]
    budget: int

    @classmethod
    def from_identity(cls, identity: dict) -> Task:
        """The public part of an identity (the oracle is never read)."""
        thickness, porosity = design_bounds(identity)
        return cls(
            c_rate=float(identity["conditions"]["c_rate"]),
            ambient_K=float(identity["conditions"]["ambient_temperature_K"]),
            energy_target=float(identity["targets"]["min_specific_energy_Wh_kg"]),
            temperature_target_K=float(identity["targets"]["max_peak_temperature_K"]),
            thickness_range=thickness,
            porosity_range=porosity,
            budget=int(identity.get("budget", DEFAULT_BUDGET)),
        )

    def normalise(self, thickness: float, porosity: float) -> tuple[float, float]:
        (t0, t1), (p0, p1) = self.thickness_range, self.porosity_range
        return (thickness - t0) / (t1 - t0 or 1.0), (porosity - p0) / (p1 - p0 or 1.0)

    def design(self, u: float, v: float) -> tuple[float, float]:
        """(thickness, porosity) at normalised coordinates, rounded to the simulator's resolution."""
        (t0, t1), (p0, p1) = self.thickness_range, self.porosity_range
        thickness = float(f"{round((t0 + u * (t1 - t0)) / 1e-8) * 1e-8:.12g}")
        porosity = float(f"{round(p0 + v * (p1 - p0), 4):.12g}")
        return min(max(thickness, t0), t1), min(max(porosity, p0), p1)


@attrs.frozen
class Probe:
    """One simulated design and what it gave."""

    thickness_m: float
    porosity: float
    specific_energy: float
    peak_temperature_K: float
    met: bool  # as the tool judged it, on unrounded values

    def margins(self, task: Task) -> tuple[float, float]:
        """(energy margin, temperature margin) in units of 1% and 1 K; both >= 0 means both targets met."""
        energy = (self.specific_energy / task.energy_target - 1.0) / ENERGY_UNIT
        return energy, (task.temperature_target_K - self.peak_temperature_K) / TEMPERATURE_UNIT_K

    def merit(self, task: Task) -> float:
        return min(self.margins(task))


def _solve3(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for the 3x3 normal equations."""
    rows = [row[:] + [value] for row, value in zip(matrix, vector)]
    for column in range(3):
        pivot = max(range(column, 3), key=lambda row: abs(rows[row][column]))
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for row in range(column + 1, 3):
            factor = rows[row][column] / rows[column][column]
            for k in range(column, 4):
                rows[row][k] -= factor * rows[column][k]
    solution = [0.0, 0.0, 0.0]
    for row in (2, 1, 0):
        solution[row] = (rows[row][3] - sum(rows[row][k] * solution[k] for k in range(row + 1, 3))) / rows[row][row]
    return solution


def _fit(points: list[tuple[float, float, float]], anchor: tuple[float, float], prior: tuple[float, float],
         prior_weight: float, scale: float) -> tuple[float, float, float]:
    """Weighted least squares of ``value = c + gu (u - u0) + gv (v - v0)`` with a ridge towards prior slopes."""
    u0, v0 = anchor
    normal = [[0.0] * 3 for _ in range(3)]
    right = [0.0] * 3
    for u, v, value in points:
        distance2 = (u - u0) ** 2 + (v - v0) ** 2
        weight = math.exp(-distance2 / (2 * scale**2))
        features = (1.0, u - u0, v - v0)
        for i in range(3):
            right[i] += weight * features[i] * value
            for j in range(3):
                normal[i][j] += weight * features[i] * features[j]
    for i, slope in ((1, prior[0]), (2, prior[1])):
        normal[i][i] += prior_weight
        right[i] += prior_weight * slope
    normal[0][0] += 1e-9
    c, gu, gv = _solve3(normal, right)
    return c, gu, gv


def next_design(task: Task, probes: list[Probe], failed: Sequence[tuple[float, float]] = ()) -> tuple[float, float]:
    """The design to simulate next (thickness in metres, porosity); ``failed`` designs are never proposed again."""
    visited = [task.normalise(*design) for design in failed]
    if not probes:
        return task.design(*START) if not visited else task.design(0.5 * START[0], 0.5 * START[1] + 0.25)
    coordinates = [task.normalise(probe.thickness_m, probe.porosity) for probe in probes]
    visited += coordinates
    best = max(range(len(probes)), key=lambda index: probes[index].merit(task))
    anchor = coordinates[best]
    radius = _radius(task, probes)
    # Physics-signed prior slopes per normalised unit: thicker and denser electrodes store more energy per kilogram
    # and run hotter; the temperature slope scales with how far the target sits above ambient.
    rise = max(task.temperature_target_K - task.ambient_K, 1.0)
    energy_points = [(u, v, probe.margins(task)[0]) for (u, v), probe in zip(coordinates, probes)]
    heat_points = [(u, v, probe.peak_temperature_K) for (u, v), probe in zip(coordinates, probes)]
    energy_model = _fit(energy_points, anchor, (30.0, -20.0), 0.5, max(radius, 0.15))
    heat_model = _fit(heat_points, anchor, (1.2 * rise, -0.6 * rise), 0.5, max(radius, 0.15))
    choice, choice_score = anchor, -math.inf
    for i in range(GRID):
        u = i / (GRID - 1)
        for j in range(GRID):
            v = j / (GRID - 1)
            du, dv = u - anchor[0], v - anchor[1]
            if du * du + dv * dv > radius * radius:
                continue
            if min((u - cu) ** 2 + (v - cv) ** 2 for cu, cv in visited) < 0.015**2:
                continue
            energy = energy_model[0] + energy_model[1] * du + energy_model[2] * dv
            heat = heat_model[0] + heat_model[1] * du + heat_model[2] * dv
            score = min(energy, (task.temperature_target_K - heat) / TEMPERATURE_UNIT_K)
            # ties (a flat model): the nearer candidate, where the linear model is most trustworthy
            score -= 1e-3 * math.sqrt(du * du + dv * dv)
            if score > choice_score:
                choice, choice_score = (u, v), score
    return task.design(*choice)


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


def probes_from_messages(messages: list[dict]) -> tuple[list[Probe], list[tuple[float, float]], int]:
    """(designs simulated so far, designs the tool could not simulate, tool calls made so far)."""
    probes: list[Probe] = []
    failed: list[tuple[float, float]] = []
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
                probes.append(Probe(float(result["pos_thickness_m"]), float(result["pos_porosity"]),
                                    float(result["specific_energy_Wh_kg"]), float(result["peak_temperature_K"]),
                                    bool(result["both_targets_met"])))
                continue
            except (ValueError, TypeError, KeyError):
                pass
            # an error: nothing was simulated; remember the design so it is not asked for again
            try:
                arguments = json.loads(asked[str(message.get("tool_call_id"))]["arguments"])
                failed.append((float(arguments["pos_thickness"]), float(arguments["pos_porosity"])))
            except (ValueError, TypeError, KeyError):
                continue
    return probes, failed, calls


class SearchAgent(ReferenceAgent):
    """Trust-region search with local linear models; answers the first design that meets both targets."""

    name: ClassVar[str] = "design_search"
    generators: ClassVar[tuple[str, ...]] = ("cell_design",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A simulator call while no design meets both targets and budget is left, else the final answer."""
        task = Task.from_identity(identity)
        probes, failed, calls = probes_from_messages(messages)
        solved = [probe for probe in probes if probe.met]
        if solved or calls >= task.budget or (len(failed) >= 2 and not probes):
            return self._answer(task, solved or probes)
        thickness, porosity = next_design(task, probes, failed)
        return tool_call_message(messages, (TOOL_NAME, {"pos_thickness": thickness, "pos_porosity": porosity}))

    @staticmethod
    def _answer(task: Task, candidates: list[Probe]) -> dict:
        if not candidates:
            return {"role": "assistant", "content": "The simulator returned no results, so I have no design to give."}
        best = max(candidates, key=lambda probe: (probe.met, probe.merit(task)))
        verdict = "meets both targets" if best.met else "is the closest design I found"
        return {
            "role": "assistant",
            "content": (
                f"The design with a {best.thickness_m * 1e6:.2f} µm positive electrode at porosity {best.porosity:g} "
                f"gives {best.specific_energy:g} Wh/kg at a peak of {best.peak_temperature_K:g} K and {verdict}.\n\n"
                f"{format_answer(best.thickness_m, best.porosity)}"
            ),
        }
