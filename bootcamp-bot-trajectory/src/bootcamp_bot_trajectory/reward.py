"""The reward: the final answer's path, judged by the simulator, less for failed checks and for a long detour.

A solving path scores ``1 - 0.2 × failed checks - 0.1 × excess length`` (at least 0.1): a failed check is a
``check_path`` call whose path collided (read from the tool's ``calc_reward``, ``tool_scores["check_path"]``), and the
excess length grows from 0 at twice the hidden witness's joint-space length to 1 at four times it. An unsolved path
scores 0 (strict, the default) or partial credit below 0.6 (soft). Solved (``solved_threshold`` 0.65) means a path
that solves the task found with at most one failed check, however long it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from bootcamp_bot_trajectory.answer import find_answer
from bootcamp_bot_trajectory.judge import PathReport, judge_path
from bootcamp_bot_trajectory.robot import IdentityError, Task, path_length
from bootcamp_bot_trajectory.simulator import on_simulation_thread
from bootcamp_core import Reward, config_flag, config_number

__all__ = [
    "FAILED_CHECK_PENALTY",
    "LENGTH_PENALTY",
    "LENGTH_SLACK",
    "SOFT_WEIGHTS",
    "TrajectoryReward",
    "failed_checks",
    "path_score",
    "soft_score",
]

#: What each failed check (a ``check_path`` call whose path collided) takes off a solving path's score.
FAILED_CHECK_PENALTY = 0.2
#: The most the failed checks take off a solving path's score: it never falls below 0.2 for them.
MAX_CHECK_PENALTY = 0.8
#: What the longest detour takes off a solving path's score; less than one failed check, so length never decides
#: whether an episode counts as solved.
LENGTH_PENALTY = 0.1
#: A solving path up to this many times the witness's joint-space length loses nothing for its length; the length
#: penalty grows linearly to its full value at twice this multiple.
LENGTH_SLACK = 2.0
#: Weights of the soft reward's parts for an unsolved path: collision-free share, closeness to the target.
SOFT_WEIGHTS = {"free": 0.3, "target": 0.3}
#: Metres beyond the tolerance over which the soft reward's closeness part falls from 1 to 0.
SOFT_DISTANCE = 1.0
#: ``solved_threshold``: a solving path with at most one failed check scores at least 0.7, with two at most 0.6.
SOLVED_THRESHOLD = 0.65


def failed_checks(tool_scores: Any) -> float:
    """The episode's failed checks: ``tool_scores["check_path"]`` (the tool's ``calc_reward``), 0 when absent.

    A value that is not a number, NaN or negative counts as none (a reward never raises); a huge one is capped by
    :data:`MAX_CHECK_PENALTY` where it is used.
    """
    if not isinstance(tool_scores, Mapping):
        return 0.0
    value = tool_scores.get("check_path")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    value = float(value)
    return 0.0 if math.isnan(value) else max(0.0, value)


def path_score(length: float, witness_length: float, failed: float) -> float:
    """A solving path's score: ``1 - check part - length part``, in [0.1, 1].

    The check part is ``0.2 × failed`` (at most 0.8); the length part is ``0.1 × min(1, length / (2 × witness length)
    - 1)`` when the path is longer than twice the witness (none without a witness).
    """
    checks = min(MAX_CHECK_PENALTY, FAILED_CHECK_PENALTY * failed)
    excess = 0.0
    if witness_length > 0.0 and math.isfinite(witness_length):
        excess = min(1.0, max(0.0, length / (LENGTH_SLACK * witness_length) - 1.0))
    return 1.0 - checks - LENGTH_PENALTY * excess


def soft_score(report: PathReport, length: float, witness_length: float, distance_scale: float = SOFT_DISTANCE,
               failed: float = 0.0) -> float:
    """A solving path's :func:`path_score`; an unsolved one ``(0.3 × free + 0.3 × near) × (1 - check part)``.

    ``free`` is the share of the path (in checked configurations, in order) before the first collision or limit
    violation; ``near`` is 1 within the tolerance, falling linearly to 0 at ``distance_scale`` metres beyond it, and
    counts only for a clear path (ending near the target through an obstacle earns nothing, so padding a colliding
    path with harmless moves cannot lift it above 0.3). So an unsolved path scores at most 0.6, below the solved
    threshold, a colliding one below 0.3, and failed checks lower every score. A path that does not start at the start
    configuration scores 0.
    """
    if not report.starts_at_start:
        return 0.0
    if report.solved:
        return path_score(length, witness_length, failed)
    near = max(0.0, 1.0 - max(0.0, report.distance - report.tolerance) / distance_scale) if report.clear else 0.0
    partial = SOFT_WEIGHTS["free"] * report.free_fraction + SOFT_WEIGHTS["target"] * near
    return partial * (1.0 - min(MAX_CHECK_PENALTY, FAILED_CHECK_PENALTY * failed))


class TrajectoryReward(Reward):
    """A solving path scores :func:`path_score` (1.0 without failed checks or a long detour); else 0.0, or soft.

    Solving means: starts at the start configuration, every waypoint within the joint limits, no penetration of an
    obstacle, the floor or the arm itself anywhere along the interpolated path, and the end effector within the
    tolerance of the target at the last waypoint. Failed checks are read from the episode's ``tool_scores``; where a
    runner passes none (scoring a bare answer), none are counted.
    """

    name: ClassVar[str] = "trajectory"
    solved_threshold: ClassVar[float] = SOLVED_THRESHOLD

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        config_flag(self, config, "soft", False)
        config_number(self, config, "soft_distance", SOFT_DISTANCE, above=0.0)

    def extract_output(self, output: str) -> tuple[tuple[float, ...], ...] | None:
        """The waypoints of the last well-formed ``"waypoints": [...]`` in the output, or ``None``."""
        return find_answer(output)[0]

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """:func:`path_score` of a solving path, else 0.0 (or :func:`soft_score` when ``soft`` is true)."""
        try:
            task = Task.from_identity(identity)
        except IdentityError:
            return 0.0
        # on a simulation thread: rewards run on many worker threads, and each thread would need a client of its own
        report = on_simulation_thread(judge_path, task, extracted)
        witness = task.witness
        witness_length = path_length(witness) if witness else math.inf
        failed = failed_checks(kwargs.get("tool_scores"))
        length = path_length(extracted)
        if not kwargs.get("soft", self.config.get("soft", False)):
            return path_score(length, witness_length, failed) if report.solved else 0.0
        scale = float(kwargs.get("soft_distance", self.config.get("soft_distance", SOFT_DISTANCE)))
        return soft_score(report, length, witness_length, scale, failed)
