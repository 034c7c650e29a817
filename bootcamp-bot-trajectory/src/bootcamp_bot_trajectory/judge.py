"""The judge of a path: the one check behind ``check_path``, the reward, the interaction and the reference agent."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from bootcamp_bot_trajectory.robot import (
    START_TOLERANCE,
    Task,
    describe_violations,
    path_samples,
    sample_count,
)
from bootcamp_bot_trajectory.simulator import Contact, Simulator, simulator

__all__ = ["SOLVED", "PathReport", "judge_path"]

#: The sentence a report ends with when the path solves the task (the reference agent looks for it).
SOLVED = "Verdict: this path solves the task."
#: Contacts named in a report, beyond the deepest one.
EXTRA_CONTACTS = 2


@attrs.frozen
class PathReport:
    """What the judge found along a path, checked in order up to the first problem."""

    waypoints: int
    total: int  # configurations the whole path is checked at
    checked: int  # configurations checked before the first problem (all of them when there is none)
    resolution: float
    start_error: float  # the largest joint difference between waypoint 0 and the start configuration
    limit_problem: str | None  # the first waypoint outside the joint limits, described
    segment: int | None  # where the first collision is: segment -1 is waypoint 0
    fraction: float | None
    contacts: tuple[Contact, ...]
    end_effector: tuple[float, float, float]
    distance: float
    tolerance: float

    @property
    def starts_at_start(self) -> bool:
        return self.start_error <= START_TOLERANCE

    @property
    def clear(self) -> bool:
        """Within the joint limits and collision-free everywhere."""
        return self.limit_problem is None and not self.contacts

    @property
    def reaches(self) -> bool:
        return self.distance <= self.tolerance

    @property
    def solved(self) -> bool:
        return self.clear and self.starts_at_start and self.reaches

    @property
    def free_fraction(self) -> float:
        """The share of the path's checked configurations, in order, before the first collision or limit violation."""
        return 1.0 if self.clear else self.checked / self.total

    def where(self) -> str:
        """Where the first collision is, in words."""
        if self.segment is None or self.fraction is None:
            return ""
        if self.segment < 0:
            return "at waypoint 0 (the first one)"
        if self.fraction >= 1.0:
            return f"at waypoint {self.segment + 1}"
        return (f"on segment {self.segment} (waypoint {self.segment} -> waypoint {self.segment + 1}), "
                f"{self.fraction:.0%} of the way")

    def describe(self) -> str:
        """The report as the model reads it (``check_path``'s output, before the calls left)."""
        plural = "s" if self.waypoints != 1 else ""
        lines = [(f"Checked {self.checked} of {self.total} configurations along {self.waypoints} waypoint{plural} "
                  f"(steps of at most {self.resolution:g} rad per joint).")]
        if self.limit_problem is not None:
            lines.append(f"Stopped: {self.limit_problem}.")
        elif self.contacts:
            deepest, *others = self.contacts
            line = f"Collision {self.where()}: {deepest.describe()}."
            if others:
                line += " Also: " + "; ".join(contact.describe() for contact in others[:EXTRA_CONTACTS]) + "."
            lines.append(line)
        else:
            lines.append("The path is collision-free and within the joint limits.")
        if self.starts_at_start:
            lines.append("The first waypoint is the start configuration.")
        else:
            lines.append(f"The first waypoint is not the start configuration: a joint differs by {self.start_error:.4f} "
                         f"rad (at most {START_TOLERANCE:g} allowed).")
        x, y, z = self.end_effector
        lines.append(
            f"End effector at the last waypoint: ({x:.4f}, {y:.4f}, {z:.4f}), {self.distance:.4f} m from the target "
            f"(tolerance {self.tolerance:g} m): {'within' if self.reaches else 'not within'} tolerance."
        )
        lines.append(SOLVED if self.solved else "Verdict: not a solution yet.")
        return "\n".join(lines)


def judge_path(task: Task, waypoints: Sequence[Sequence[float]], sim: Simulator | None = None) -> PathReport:
    """Check ``waypoints`` against ``task`` at its resolution, stopping at the first limit violation or collision.

    A waypoint outside the joint limits ends the check where the segment leading to it begins (waypoint 0 itself
    when it is the first), since everything between two waypoints within the limits is within them too.
    """
    sim = sim or simulator()
    sim.load(task.scene)
    resolution = task.resolution
    total = sample_count(waypoints, resolution)
    limit_problem, stop = None, len(waypoints)
    for index, point in enumerate(waypoints):
        limit_problem = describe_violations(point, f"waypoint {index}")
        if limit_problem is not None:
            stop = index - 1
            break
    checked = 0
    segment, fraction, contacts = None, None, ()
    for index, at, configuration in path_samples(waypoints, resolution):
        if index >= stop:
            break
        if sim.collides(configuration):
            segment, fraction, contacts = index, at, tuple(sim.contacts(configuration))
            break
        checked += 1
    end_effector = sim.end_effector(waypoints[-1])
    return PathReport(
        waypoints=len(waypoints),
        total=total,
        checked=checked,
        resolution=resolution,
        start_error=max(abs(a - b) for a, b in zip(waypoints[0], task.start)),
        limit_problem=limit_problem,
        segment=segment,
        fraction=fraction,
        contacts=contacts,
        end_effector=end_effector,
        distance=math.dist(end_effector, task.target),
        tolerance=task.tolerance,
    )
