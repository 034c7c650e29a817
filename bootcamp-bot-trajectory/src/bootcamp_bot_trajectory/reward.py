"""The reward: the final answer's path, judged by the simulator. Strict by default; soft on request."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bootcamp_bot_trajectory.answer import find_answer
from bootcamp_bot_trajectory.judge import PathReport, judge_path
from bootcamp_bot_trajectory.robot import IdentityError, Task, path_length
from bootcamp_bot_trajectory.simulator import on_simulation_thread
from bootcamp_core import Reward, config_flag, config_number

__all__ = ["SOFT_WEIGHTS", "TrajectoryReward", "soft_score"]

#: Weights of the soft reward's parts: collision-free share, closeness to the target, shortness (only when solved).
SOFT_WEIGHTS = {"free": 0.4, "target": 0.4, "length": 0.2}
#: Metres beyond the tolerance over which the soft reward's closeness part falls from 1 to 0.
SOFT_DISTANCE = 1.0


def soft_score(report: PathReport, length: float, witness_length: float, distance_scale: float = SOFT_DISTANCE
               ) -> float:
    """``0.4 * free + 0.4 * near + 0.2 * short`` where ``short`` counts only for a solving path.

    ``free`` is the share of the path (in checked configurations, in order) before the first collision or limit
    violation; ``near`` is 1 within the tolerance, falling linearly to 0 at ``distance_scale`` metres beyond it, and
    counts only for a clear path (ending near the target through an obstacle earns nothing, so padding a colliding
    path with harmless moves cannot lift it above 0.4); ``short`` is ``min(1, witness length / path length)``. So an
    unsolved path scores at most 0.8, a colliding one below 0.4, a solved one at least 0.8, and 1.0 only when it is no
    longer (in joint space) than the hidden witness. A path that does not start at the start configuration scores 0.
    """
    if not report.starts_at_start:
        return 0.0
    free = report.free_fraction
    near = max(0.0, 1.0 - max(0.0, report.distance - report.tolerance) / distance_scale) if report.clear else 0.0
    short = 0.0
    if report.solved:
        short = 1.0 if length <= witness_length else witness_length / length
    return SOFT_WEIGHTS["free"] * free + SOFT_WEIGHTS["target"] * near + SOFT_WEIGHTS["length"] * short


class TrajectoryReward(Reward):
    """1.0 when the answer's path solves the task (strict), else 0.0; ``soft=True`` gives partial credit.

    Solved means: starts at the start configuration, every waypoint within the joint limits, no penetration of an
    obstacle, the floor or the arm itself anywhere along the interpolated path, and the end effector within the
    tolerance of the target at the last waypoint. Tool use never enters the score.
    """

    name: ClassVar[str] = "trajectory"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        config_flag(self, config, "soft", False)
        config_number(self, config, "soft_distance", SOFT_DISTANCE, above=0.0)

    def extract_output(self, output: str) -> tuple[tuple[float, ...], ...] | None:
        """The waypoints of the last well-formed ``"waypoints": [...]`` in the output, or ``None``."""
        return find_answer(output)[0]

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """Strict 0/1, or :func:`soft_score` when the verify kwarg (or config) ``soft`` is true."""
        try:
            task = Task.from_identity(identity)
        except IdentityError:
            return 0.0
        # on a simulation thread: rewards run on many worker threads, and each thread would need a client of its own
        report = on_simulation_thread(judge_path, task, extracted)
        if not kwargs.get("soft", self.config.get("soft", False)):
            return 1.0 if report.solved else 0.0
        scale = float(kwargs.get("soft_distance", self.config.get("soft_distance", SOFT_DISTANCE)))
        witness = task.witness
        witness_length = path_length(witness) if witness else math.inf
        return soft_score(report, path_length(extracted), witness_length, scale)
