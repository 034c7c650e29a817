"""The reference agent: plans with RRT-Connect on a privileged simulator, confirms with ``check_path``, answers."""

from __future__ import annotations

import json
import random
from typing import Any, ClassVar

import attrs

from bootcamp_bot_trajectory.judge import SOLVED, judge_path
from bootcamp_bot_trajectory.planner import Planner, PlannerSettings
from bootcamp_bot_trajectory.robot import Task, round_configuration
from bootcamp_bot_trajectory.simulator import simulate
from bootcamp_core import ConfigError, ReferenceAgent, message_text, tool_call_message

__all__ = ["PlannerAgent"]

#: Planning attempts per turn, each with fresh goals and twice the iterations of the one before.
ATTEMPTS = 3
#: Decimals tried, in order, for the answered angles: the rounded path must pass the judge as the planned one did.
DIGITS = (4, 6)


def plan_waypoints(task: Task, rng: random.Random, settings: PlannerSettings | None = None
                   ) -> list[list[float]] | None:
    """A rounded path that the judge (on this thread's simulator) finds solving the task, or ``None``."""
    settings = settings or PlannerSettings()
    for attempt in range(ATTEMPTS):
        path = Planner(task, rng, attrs.evolve(settings, max_iterations=settings.max_iterations << attempt)).plan()
        if path is None:
            continue
        for digits in DIGITS:
            rounded = [list(task.start)] + [list(round_configuration(point, digits)) for point in path[1:]]
            if judge_path(task, rounded).solved:
                return rounded
    return None


def _last_check(messages: list[dict]) -> tuple[list | None, str | None, int]:
    """(waypoints of the last ``check_path`` call, the tool's reply to it, ``check_path`` calls made so far)."""
    waypoints, reply, call_id, calls = None, None, None, 0
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") != "check_path":
                    continue
                calls += 1
                arguments = function.get("arguments")
                try:
                    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
                    waypoints, call_id, reply = parsed["waypoints"], call.get("id"), None
                except (TypeError, ValueError, KeyError):
                    continue
        elif message.get("role") == "tool" and call_id is not None and message.get("tool_call_id") == call_id:
            reply = message_text(message.get("content"))
    return waypoints, reply, calls


def _answer(waypoints: list, note: str) -> dict:
    return {"role": "assistant", "content": f'{note}\n\n```json\n{{"waypoints": {json.dumps(waypoints)}}}\n```'}


class PlannerAgent(ReferenceAgent):
    """RRT-Connect in joint space to inverse-kinematics goals, shortcut, checked with ``check_path``, then answered.

    The planner runs on the agent's own simulator with every obstacle known (hidden ones too): the privileged
    search a scripted player is allowed. The model-facing ``check_path`` confirms the path within the budget; a path
    it rejects is planned again while calls are left. Config: ``planner`` (a dict of :class:`PlannerSettings` fields).
    """

    name: ClassVar[str] = "rrt_connect"
    generators: ClassVar[tuple[str, ...]] = ("motion_planning",)

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        try:
            self.settings = PlannerSettings(**(config.get("planner") or {}))
        except TypeError as error:
            raise ConfigError(f"rrt_connect: bad planner settings: {error}") from None

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A ``check_path`` call with a freshly planned path, or the final answer once ``check_path`` approves one."""
        task = Task.from_identity(identity)
        waypoints, reply, calls = _last_check(messages)
        if waypoints is not None and reply is not None and SOLVED in reply:
            return _answer(waypoints, "check_path confirms this path solves the task.")
        can_check = any((tool.get("function") or {}).get("name") == "check_path" for tool in tools)
        budget = task.budget.get("check_path", 0)
        # planning is CPU work of up to a second: off the event loop
        planned = await simulate(plan_waypoints, task, rng, self.settings)
        if planned is None:
            fallback = waypoints if waypoints is not None else [list(task.start)]
            return _answer(fallback, "I could not find a collision-free path.")
        if not can_check or calls >= budget:
            return _answer(planned, "Planned with RRT-Connect; no check_path calls are left to confirm it.")
        return tool_call_message(messages, ("check_path", {"waypoints": planned}),
                                 content=f"Planned a path of {len(planned)} waypoints with RRT-Connect; checking it.")
