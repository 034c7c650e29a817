"""A sampling motion planner: inverse kinematics for goal configurations, RRT-Connect in joint space, shortcuts.

Every edge is checked with the judge's own interpolation (:func:`segment_samples` at the task's resolution), so a
path made of checked edges is one the judge accepts; the caller still confirms the final, rounded path with the
judge. All randomness comes from the ``rng`` passed in.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import attrs

from bootcamp_bot_trajectory.robot import LOWER_LIMITS, UPPER_LIMITS, Task, round_configuration, segment_samples
from bootcamp_bot_trajectory.simulator import Simulator, simulator

__all__ = ["Planner", "PlannerSettings"]

Configuration = tuple[float, ...]


@attrs.frozen
class PlannerSettings:
    """Knobs of the planner; the defaults solve the generated tasks in well under a second each."""

    step: float = 0.5  # radians (Euclidean) a tree grows per extension
    max_iterations: int = 3000  # RRT-Connect iterations before giving up
    goals: int = 4  # collision-free IK solutions used as roots of the goal tree
    ik_seeds: int = 60  # random seeds tried for them
    ik_rounds: int = 4  # IK solves per seed, each starting from the last
    goal_share: float = 0.5  # how close to the target (share of the tolerance) a goal must put the end effector
    shortcut_rounds: int = 80


class _Tree:
    """Nodes and parent links of one RRT tree."""

    __slots__ = ("nodes", "parents")

    def __init__(self, roots: Sequence[Configuration]) -> None:
        self.nodes: list[Configuration] = list(roots)
        self.parents: list[int] = [-1] * len(self.nodes)

    def nearest(self, configuration: Configuration) -> int:
        best, best_distance = 0, math.inf
        for index, node in enumerate(self.nodes):
            distance = 0.0
            for a, b in zip(node, configuration):
                distance += (a - b) * (a - b)
                if distance >= best_distance:
                    break
            else:
                best, best_distance = index, distance
        return best

    def add(self, configuration: Configuration, parent: int) -> int:
        self.nodes.append(configuration)
        self.parents.append(parent)
        return len(self.nodes) - 1

    def branch(self, index: int) -> list[Configuration]:
        """The nodes from ``index`` back to its root."""
        found = []
        while index != -1:
            found.append(self.nodes[index])
            index = self.parents[index]
        return found


_TRAPPED, _ADVANCED, _REACHED = 0, 1, 2


class Planner:
    """Plans one task on a simulator of its own (privileged: it sees every obstacle, hidden or not)."""

    def __init__(self, task: Task, rng: random.Random, settings: PlannerSettings | None = None,
                 sim: Simulator | None = None) -> None:
        self.task = task
        self.rng = rng
        self.settings = settings or PlannerSettings()
        self.sim = sim or simulator()
        self.checks = 0  # collision queries made, for benchmarks

    # ------------------------------------------------------------------------------------------ checking
    def free(self, configuration: Sequence[float]) -> bool:
        self.checks += 1
        return not self.sim.collides(configuration)

    def segment_free(self, start: Sequence[float], end: Sequence[float]) -> bool:
        """Whether the judge finds the segment collision-free (``start`` itself is not checked)."""
        samples = [configuration for _, configuration in segment_samples(start, end, self.task.resolution)]
        # the far end first: a blocked extension usually fails there, before the whole segment is walked
        if not self.free(samples[-1]):
            return False
        return all(self.free(configuration) for configuration in samples[:-1])

    # ----------------------------------------------------------------------------------------------- goals
    def random_configuration(self) -> Configuration:
        return tuple(self.rng.uniform(low, high) for low, high in zip(LOWER_LIMITS, UPPER_LIMITS))

    def goals(self) -> list[Configuration]:
        """Collision-free configurations that put the end effector close to the target, found by IK."""
        settings, task, sim = self.settings, self.task, self.sim
        reach = task.tolerance * settings.goal_share
        found: list[Configuration] = []
        for _ in range(settings.ik_seeds):
            seed = self.random_configuration()
            for _ in range(settings.ik_rounds):
                solution = round_configuration(sim.inverse_kinematics(task.target, seed))
                if math.dist(sim.end_effector(solution), task.target) <= reach:
                    break
                seed = solution
            else:
                continue
            distinct = all(math.dist(solution, other) > settings.step for other in found)
            if distinct and self.free(solution):
                found.append(solution)
                if len(found) >= settings.goals:
                    break
        return found

    # ----------------------------------------------------------------------------------------- searching
    def _extend(self, tree: _Tree, toward: Configuration) -> tuple[int, int]:
        near = tree.nearest(toward)
        origin = tree.nodes[near]
        distance = math.dist(origin, toward)
        if distance <= self.settings.step:
            reached, target = True, toward
        else:
            scale = self.settings.step / distance
            reached, target = False, tuple(a + (b - a) * scale for a, b in zip(origin, toward))
        if not self.segment_free(origin, target):
            return _TRAPPED, near
        return (_REACHED if reached else _ADVANCED), tree.add(target, near)

    def _connect(self, tree: _Tree, toward: Configuration) -> tuple[int, int]:
        while True:
            status, index = self._extend(tree, toward)
            if status != _ADVANCED:
                return status, index

    def connect(self, start: Configuration, goals: Sequence[Configuration]) -> list[Configuration] | None:
        """RRT-Connect from ``start`` to any of ``goals``: a list of configurations, or ``None`` when out of tries."""
        for goal in goals:  # the straight line first: often free in light clutter
            if self.segment_free(start, goal):
                return [start, goal]
        start_tree, goal_tree = _Tree([start]), _Tree(goals)
        grow, other = start_tree, goal_tree
        for _ in range(self.settings.max_iterations):
            status, index = self._extend(grow, self.random_configuration())
            if status != _TRAPPED:
                reached, joint = self._connect(other, grow.nodes[index])
                if reached == _REACHED:
                    if grow is start_tree:
                        return grow.branch(index)[::-1] + other.branch(joint)[1:]
                    return other.branch(joint)[::-1] + grow.branch(index)[1:]
            grow, other = other, grow
        return None

    def shortcut(self, path: list[Configuration]) -> list[Configuration]:
        """Drop waypoints while the straight segment that skips them is free."""
        path = list(path)
        # a blocked segment between two configurations stays blocked: never walk it twice, and stop once every
        # remaining skip is known to be blocked (usually at 3-5 waypoints, long before the rounds run out)
        blocked: set[tuple[Configuration, Configuration]] = set()
        for _ in range(self.settings.shortcut_rounds):
            skips = [(first, last) for first in range(len(path) - 2) for last in range(first + 2, len(path))
                     if (path[first], path[last]) not in blocked]
            if not skips:
                break
            first, last = skips[self.rng.randrange(len(skips))]
            if self.segment_free(path[first], path[last]):
                path[first + 1:last] = []
            else:
                blocked.add((path[first], path[last]))
        return path

    def plan(self) -> list[Configuration] | None:
        """A short collision-free path from the start to a goal configuration, or ``None``."""
        self.sim.load(self.task.scene)
        goals = self.goals()
        if not goals:
            return None
        path = self.connect(tuple(self.task.start), goals)
        return None if path is None else self.shortcut(path)
