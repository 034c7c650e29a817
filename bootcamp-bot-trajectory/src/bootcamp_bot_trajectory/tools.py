"""The tools: forward kinematics and the path check, each with a per-episode budget of calls that is enforced.

A call with bad arguments (wrong length, NaN, out of the joint limits, unknown keys) gets an ``Error:`` message and
costs nothing; a call past the budget gets an ``Error:`` message and runs nothing. ``check_path`` counts its failed
checks (paths that collided): its ``calc_reward`` is that count, which the reward reads from ``tool_scores``.
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

from bootcamp_bot_trajectory.judge import judge_path
from bootcamp_bot_trajectory.robot import (
    END_EFFECTOR,
    JOINT_COUNT,
    MAX_WAYPOINTS,
    PathError,
    Task,
    describe_violations,
    parse_configuration,
    parse_waypoints,
)
from bootcamp_bot_trajectory.simulator import simulate, simulator
from bootcamp_core import CallBudget, Tool

__all__ = ["CheckPathTool", "ForwardKinematicsTool"]

#: Waypoints outside the joint limits named in one error message.
MAX_NAMED_VIOLATIONS = 5

_CONFIGURATION_SCHEMA = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": JOINT_COUNT,
    "maxItems": JOINT_COUNT,
}


def _argument(parameters: Any, key: str) -> Any:
    """The one argument ``key`` of a call; a JSON string holding the value is accepted too."""
    if not isinstance(parameters, dict):
        raise PathError(f"arguments must be a JSON object with {key!r}")
    unknown = sorted(set(parameters) - {key})
    if unknown:
        raise PathError(f"unknown argument(s) {', '.join(map(repr, unknown))}; pass only {key!r}")
    if key not in parameters:
        raise PathError(f"missing {key!r}")
    value = parameters[key]
    if isinstance(value, str):  # some models send the list JSON-encoded
        try:
            value = json.loads(value)
        except ValueError:
            raise PathError(f"{key} must be a list of numbers, got a string that is not JSON") from None
    return value


class _BudgetedTool(Tool):
    """Per-episode call counting against ``identity["budget"][name]``; subclasses parse and run one call.

    The count lives in a :class:`CallBudget`, so creating an episode's instance again does not refill it.
    """

    parallel_safe: ClassVar[bool] = True

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.budget = CallBudget()

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode with no calls made (an identity that is not a task of this bootcamp is refused)."""
        task = Task.from_identity(identity)
        instance_id = await super().create(instance_id, identity, **kwargs)
        self.state(instance_id).update(task=task, invalid=0)
        self.budget.open(instance_id, task.budget.get(self.name, 0))
        return instance_id

    def metrics(self, instance_id: str) -> dict:
        """``{"calls", "calls_left", "refused"}`` of the budget, and ``invalid``: calls with bad arguments."""
        return {**self.budget.metrics(instance_id), "invalid": self.state(instance_id)["invalid"]}

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """Run one call within the budget: (the result or an ``Error:`` message, 0.0, :meth:`metrics`)."""
        state = self.state(instance_id)
        try:
            request = self.parse(parameters, state["task"])
        except PathError as error:
            state["invalid"] += 1
            return f"Error: {error}. This call was not counted.", 0.0, self.metrics(instance_id)
        # taken before any await, so concurrent calls cannot overdraw the budget
        if not self.budget.take(instance_id):
            return (f"Error: the budget of {self.budget.limit(instance_id)} {self.name} calls for this task is used "
                    "up; nothing was run. Give your final answer."), 0.0, self.metrics(instance_id)
        text = await self.run(request, state["task"], instance_id)
        return f"{text}\n{self.name} calls left: {self.budget.left(instance_id)}.", 0.0, self.metrics(instance_id)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode: drop its state and its budget."""
        self.budget.close(instance_id)
        await super().release(instance_id, **kwargs)

    def parse(self, parameters: Any, task: Task) -> Any:
        raise NotImplementedError

    async def run(self, request: Any, task: Task, instance_id: str) -> str:
        raise NotImplementedError


class ForwardKinematicsTool(_BudgetedTool):
    """Where the end effector is in one configuration, and how far that is from the target."""

    name: ClassVar[str] = "forward_kinematics"
    description: ClassVar[str] = (
        f"Forward kinematics of the arm: the position of the end effector ({END_EFFECTOR}) in metres for one "
        "configuration of the 7 joint angles (radians, within the joint limits), and its distance to the target. "
        "Each task has a budget of calls; calls with bad arguments are not counted."
    )
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "joint_angles": {
                **_CONFIGURATION_SCHEMA,
                "description": "The 7 joint angles in radians, joint 1 first.",
            }
        },
        "required": ["joint_angles"],
        "additionalProperties": False,
    }

    def parse(self, parameters: Any, task: Task) -> tuple[float, ...]:
        configuration = parse_configuration(_argument(parameters, "joint_angles"))
        problem = describe_violations(configuration, "joint_angles")
        if problem is not None:
            raise PathError(problem)
        return configuration

    async def run(self, request: tuple[float, ...], task: Task, instance_id: str) -> str:
        # about 20 µs of PyBullet: no reason to leave the event loop
        x, y, z = position = simulator().end_effector(request)
        return (f"End effector at ({x:.4f}, {y:.4f}, {z:.4f}), {math.dist(position, task.target):.4f} m from the "
                "target.")


class CheckPathTool(_BudgetedTool):
    """The judge's own check of a path: first collision and what it hit, limits, start, end and verdict.

    A check whose path collides is a failed check; ``calc_reward`` is the episode's count of them (the reward takes
    points off for each). The count lives outside the episode's state, like the budget, so creating the instance
    again does not clear it. A clear path that misses the target or the start (a probe) is not a failed check.
    """

    name: ClassVar[str] = "check_path"
    description: ClassVar[str] = (
        "Check a path exactly as the final answer is judged: the arm moves linearly in joint space between "
        "consecutive waypoints and is checked at the task's resolution. Reports the first collision (where, which "
        "link, what it hit, how deep), waypoints outside the joint limits, whether the path starts at the start "
        "configuration and where the end effector ends, relative to the target. Each task has a budget of calls; "
        "calls with bad arguments are not counted."
    )
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "waypoints": {
                "type": "array",
                "items": _CONFIGURATION_SCHEMA,
                "minItems": 1,
                "maxItems": MAX_WAYPOINTS,
                "description": "Configurations of 7 joint angles (radians), the start configuration first.",
            }
        },
        "required": ["waypoints"],
        "additionalProperties": False,
    }

    def parse(self, parameters: Any, task: Task) -> tuple[tuple[float, ...], ...]:
        waypoints = parse_waypoints(_argument(parameters, "waypoints"))
        problems = [
            problem for index, point in enumerate(waypoints)
            if (problem := describe_violations(point, f"waypoint {index}")) is not None
        ]
        if problems:
            more = len(problems) - MAX_NAMED_VIOLATIONS
            named = "; ".join(problems[:MAX_NAMED_VIOLATIONS]) + (f"; and {more} more" if more > 0 else "")
            raise PathError(f"every waypoint must be within the joint limits: {named}")
        return waypoints

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.failed: dict[str, int] = {}

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode with no calls made and no failed check (an episode already open keeps its count)."""
        instance_id = await super().create(instance_id, identity, **kwargs)
        self.failed.setdefault(instance_id, 0)
        return instance_id

    async def run(self, request: tuple[tuple[float, ...], ...], task: Task, instance_id: str) -> str:
        # a long path takes milliseconds to a second: off the event loop
        report = await simulate(judge_path, task, request)
        if not report.clear and instance_id in self.failed:
            self.failed[instance_id] += 1
        return report.describe()

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's failed checks: ``check_path`` calls whose path collided (0.0 for an unknown episode)."""
        return float(self.failed.get(instance_id, 0))

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode: drop its state, its budget and its count of failed checks."""
        self.failed.pop(instance_id, None)
        await super().release(instance_id, **kwargs)
