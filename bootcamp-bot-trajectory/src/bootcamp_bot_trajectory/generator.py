"""The task generator: a start configuration, box obstacles and a target, with a hidden witness path that clears them.

A scene is built around its witness: draw a start and a goal configuration (the target is where the goal puts the end
effector) and a via configuration that makes the witness ``start -> via -> goal`` leave the straight joint-space
line; then draw boxes, keeping only those that stay ``clearance`` metres away from the arm at every configuration
the judge would check along the witness. So the witness is collision-free by construction, and provably so: it is
checked at the judge's own resolution, with a margin. "Clutter" boxes are placed where a naive path would go: on the
end effector's straight line from its start to the target, or on the arm along the straight joint-space line from
the start to the goal configuration.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any, ClassVar

from bootcamp_bot_trajectory.answer import ANSWER_FORMAT
from bootcamp_bot_trajectory.robot import (
    END_EFFECTOR,
    JOINT_COUNT,
    MAX_WAYPOINTS,
    START_TOLERANCE,
    UPPER_LIMITS,
    Box,
    path_samples,
    round_configuration,
    segment_samples,
)
from bootcamp_bot_trajectory.simulator import Simulator, simulator
from bootcamp_core import ConfigError, GenerationError, TaskGenerator

__all__ = ["DEFAULTS", "TrajectoryGenerator", "build_identity"]

DEFAULTS: dict[str, Any] = {
    "min_obstacles": 4,
    "max_obstacles": 8,
    "clutter": 0.3,  # share of the boxes placed on a straight-line path (see the module docstring)
    "tolerance": 0.03,  # metres, end effector to target
    "hidden_obstacles": False,
    "resolution": 0.02,  # radians per joint between checked configurations
    "min_half_extent": 0.03,
    "max_half_extent": 0.1,
    "clearance": 0.02,  # metres between every box and the arm along the witness
    "min_travel": 0.3,  # metres between the start's end effector and the target
    "floor": True,
    "forward_kinematics_budget": 20,
    "check_path_budget": 4,
    "blocked_goals": 40,  # IK solutions of the target whose straight joint-space segment from the start is blocked
}

#: Share of each joint's range that starts, goals and via points are drawn from (extreme wrist angles make odd poses).
DRAW_RANGE = 0.85
#: Where random (non-clutter) boxes are centred, metres: around the arm, above the floor.
WORKSPACE = ((-0.9, 0.9), (-0.9, 0.9), (0.05, 1.2))
#: The lowest and highest a target may be (above the floor, within reach).
TARGET_HEIGHT = (0.1, 1.1)
#: Standard deviation (metres) of the offset of a clutter box from the point of the arm it is placed on.
CLUTTER_JITTER = 0.04
SCENE_ATTEMPTS = 200
VIA_ATTEMPTS = 20
BOX_ATTEMPTS = 40
#: Blockers tried for one straight segment before the scene is given up.
BLOCK_ATTEMPTS = 30
#: Where along a straight segment (share of its length) a blocker is placed: away from both ends.
BLOCK_SPAN = (0.2, 0.8)
#: IK solves per seed when the generator looks for goal configurations (each from the last).
IK_ROUNDS = 4


def _round(values: Any, digits: int) -> list[float]:
    return [round(float(value), digits) + 0.0 for value in values]  # + 0.0 turns -0.0 into 0.0


class _Settings:
    """The generator's config, checked once: every knob a number in its range."""

    def __init__(self, config: dict[str, Any]) -> None:
        unknown = sorted(set(config) - set(DEFAULTS))
        if unknown:
            raise ConfigError(f"unknown bot_trajectory generator setting(s): {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(DEFAULTS))}")
        settings = {**DEFAULTS, **config}
        self.min_obstacles = self._integer(settings, "min_obstacles", 0, 40)
        self.max_obstacles = self._integer(settings, "max_obstacles", self.min_obstacles, 40)
        self.clutter = self._number(settings, "clutter", 0.0, 1.0)
        self.tolerance = self._number(settings, "tolerance", 0.002, 0.5)
        self.resolution = self._number(settings, "resolution", 0.001, 0.2)
        self.min_half_extent = self._number(settings, "min_half_extent", 0.005, 0.5)
        self.max_half_extent = self._number(settings, "max_half_extent", self.min_half_extent, 0.5)
        self.clearance = self._number(settings, "clearance", 0.001, 0.2)
        self.min_travel = self._number(settings, "min_travel", 0.0, 2.0)
        self.forward_kinematics_budget = self._integer(settings, "forward_kinematics_budget", 0, 10_000)
        self.check_path_budget = self._integer(settings, "check_path_budget", 0, 10_000)
        self.blocked_goals = self._integer(settings, "blocked_goals", 0, 200)
        for key in ("hidden_obstacles", "floor"):
            if not isinstance(settings[key], bool):
                raise ConfigError(f"{key} must be true or false, got {settings[key]!r}", field=key)
        self.hidden_obstacles = settings["hidden_obstacles"]
        self.floor = settings["floor"]

    @staticmethod
    def _number(settings: dict, key: str, low: float, high: float) -> float:
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ConfigError(f"{key} must be a number in [{low:g}, {high:g}], got {value!r}", field=key)
        return float(value)

    @staticmethod
    def _integer(settings: dict, key: str, low: int, high: int) -> int:
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{key} must be an integer in [{low}, {high}], got {value!r}", field=key)
        return value


def _configuration(rng: random.Random) -> list[float]:
    return _round((rng.uniform(-DRAW_RANGE * limit, DRAW_RANGE * limit) for limit in UPPER_LIMITS), 4)


def _clear(sim: Simulator, samples: list[tuple], bodies: list[int], margin: float) -> bool:
    """Whether the arm keeps ``margin`` from ``bodies`` at every configuration of ``samples``."""
    return not any(sim.near(configuration, bodies, margin) for configuration in samples)


def _free(sim: Simulator, samples: list[tuple]) -> bool:
    return not any(sim.collides(configuration) for configuration in samples)


def _draw_box(rng: random.Random, settings: _Settings, sim: Simulator, start: list, goal: list, target: list,
              clutter: bool) -> Box:
    half = _round((rng.uniform(settings.min_half_extent, settings.max_half_extent) for _ in range(3)), 3)
    if clutter:
        # where a naive path goes: on the end effector's straight line from its start to the target, or on the
        # arm (links 3..7) along the straight joint-space line from the start to the goal configuration
        fraction = rng.uniform(0.15, 0.85)
        if rng.random() < 0.5:
            anchor = [a + (b - a) * fraction for a, b in zip(sim.end_effector(start), target)]
        else:
            configuration = [a + (b - a) * fraction for a, b in zip(start, goal)]
            anchor = list(sim.link_positions(configuration)[rng.randrange(2, JOINT_COUNT)])
        center = [coordinate + rng.gauss(0.0, CLUTTER_JITTER) for coordinate in anchor]
    else:
        center = [rng.uniform(low, high) for low, high in WORKSPACE]
    return Box(tuple(_round(center, 3)), tuple(half))  # type: ignore[arg-type]


def build_identity(rng: random.Random, settings: _Settings, sim: Simulator | None = None) -> dict:
    """One task identity drawn from ``rng``: start, target, obstacles and the witness that avoids them."""
    sim = sim or simulator()
    sim.load(((), settings.floor))
    for _ in range(SCENE_ATTEMPTS):
        start, goal = _configuration(rng), _configuration(rng)
        target = _round(sim.end_effector(goal), 3)
        if not TARGET_HEIGHT[0] <= target[2] <= TARGET_HEIGHT[1]:
            continue
        if math.dist(sim.end_effector(start), target) < settings.min_travel:
            continue
        if math.dist(sim.end_effector(goal), target) > settings.tolerance / 2:
            continue
        for _ in range(VIA_ATTEMPTS):
            witness = [start, _configuration(rng), goal]
            samples = [configuration for _, _, configuration in path_samples(witness, settings.resolution)]
            floor = [sim.floor] if settings.floor else []
            if _free(sim, samples) and _clear(sim, samples, floor, settings.clearance):
                break
        else:
            continue
        boxes = _place_boxes(rng, settings, sim, start, goal, target, samples)
        if boxes is None:
            continue
        boxes = _block_direct(rng, settings, sim, start, goal, target, samples, boxes)
        if boxes is None:
            continue
        return {
            "start": start,
            "target": target,
            "tolerance": settings.tolerance,
            "obstacles": [box.to_json() for box in boxes],
            "floor": settings.floor,
            "hidden_obstacles": settings.hidden_obstacles,
            "resolution": settings.resolution,
            "budget": {
                "forward_kinematics": settings.forward_kinematics_budget,
                "check_path": settings.check_path_budget,
            },
            "witness": witness,
        }
    raise GenerationError(
        f"no scene with a clear witness path in {SCENE_ATTEMPTS} attempts; lower max_obstacles, max_half_extent, "
        "clearance or min_travel"
    )


def _hull(corners: list[tuple[float, ...]]) -> tuple[float, ...]:
    """The box (x0, y0, z0, x1, y1, z1) around boxes given the same way."""
    return (
        min(c[0] for c in corners), min(c[1] for c in corners), min(c[2] for c in corners),
        max(c[3] for c in corners), max(c[4] for c in corners), max(c[5] for c in corners),
    )


class _Sweep:
    """The arm's bounding boxes at every configuration the judge checks along the witness: a cheap first test.

    Boxes are flat tuples (x0, y0, z0, x1, y1, z1); samples are grouped in chunks with one box around each chunk,
    so a candidate obstacle far from the witness is cleared after a few comparisons.
    """

    CHUNK = 8

    def __init__(self, sim: Simulator, samples: list[tuple]) -> None:
        self.samples = samples
        self.links = [[(*low, *high) for low, high in sim.link_bounds(configuration)] for configuration in samples]
        self.hulls = [_hull(links) for links in self.links]
        self.chunks = [
            (start, _hull(self.hulls[start:start + self.CHUNK])) for start in range(0, len(samples), self.CHUNK)
        ]

    def suspects(self, box: Box, margin: float) -> Iterator[tuple]:
        """The samples where a link's bounding box comes within ``margin`` of ``box``: only they need an exact test."""
        (cx, cy, cz), (hx, hy, hz) = box.center, box.half_extents
        x0, y0, z0 = cx - hx - margin, cy - hy - margin, cz - hz - margin
        x1, y1, z1 = cx + hx + margin, cy + hy + margin, cz + hz + margin

        def overlaps(c: tuple) -> bool:
            return c[0] <= x1 and c[3] >= x0 and c[1] <= y1 and c[4] >= y0 and c[2] <= z1 and c[5] >= z0

        for start, chunk in self.chunks:
            if not overlaps(chunk):
                continue
            for index in range(start, min(start + self.CHUNK, len(self.samples))):
                if overlaps(self.hulls[index]) and any(overlaps(link) for link in self.links[index]):
                    yield self.samples[index]


def _fits(sim: Simulator, sweep: _Sweep, box: Box, margin: float) -> bool:
    """Whether ``box`` keeps ``margin`` from the arm along the witness; the exact test only where bounds overlap."""
    body = None
    try:
        for configuration in sweep.suspects(box, margin):
            if body is None:
                body = sim.add_box(box)
            if sim.near(configuration, [body], margin):
                return False
        return True
    finally:
        if body is not None:
            sim.remove(body)


def _place_boxes(rng: random.Random, settings: _Settings, sim: Simulator, start: list, goal: list, target: list,
                 samples: list[tuple]) -> list[Box] | None:
    """Boxes that each stay ``clearance`` away from the arm along the witness; ``None`` when they will not fit."""
    count = rng.randint(settings.min_obstacles, settings.max_obstacles)
    sweep = _Sweep(sim, samples)
    boxes: list[Box] = []
    for _ in range(count):
        clutter = rng.random() < settings.clutter
        for _ in range(BOX_ATTEMPTS):
            box = _draw_box(rng, settings, sim, start, goal, target, clutter)
            if _fits(sim, sweep, box, settings.clearance):
                boxes.append(box)
                break
        else:
            return None
    return boxes


def _goal_configurations(rng: random.Random, settings: _Settings, sim: Simulator, start: list, goal: list,
                         target: list) -> list[tuple[float, ...]]:
    """Configurations that put the end effector within the tolerance of ``target``: the witness's goal, and IK
    solutions seeded from the start and from ``blocked_goals - 1`` random configurations."""
    seeds = [tuple(start)] + [tuple(_configuration(rng)) for _ in range(settings.blocked_goals - 1)]
    found = [tuple(goal)]
    for seed in seeds[:settings.blocked_goals]:
        for _ in range(IK_ROUNDS):
            solution = round_configuration(sim.inverse_kinematics(target, seed))
            if math.dist(sim.end_effector(solution), target) <= settings.tolerance:
                found.append(solution)
                break
            seed = solution
    return found


def _segment_collides(sim: Simulator, start: list, end: tuple, resolution: float) -> bool:
    return any(sim.collides(configuration) for _, configuration in segment_samples(start, end, resolution))


def _draw_blocker(rng: random.Random, settings: _Settings, sim: Simulator, start: list, end: tuple) -> Box:
    """A box on a link of the arm (links 3..7) somewhere along the straight segment from ``start`` to ``end``."""
    fraction = rng.uniform(*BLOCK_SPAN)
    configuration = [a + (b - a) * fraction for a, b in zip(start, end)]
    anchor = sim.link_positions(configuration)[rng.randrange(2, JOINT_COUNT)]
    half = _round((rng.uniform(settings.min_half_extent, settings.max_half_extent) for _ in range(3)), 3)
    center = [coordinate + rng.gauss(0.0, CLUTTER_JITTER / 2) for coordinate in anchor]
    return Box(tuple(_round(center, 3)), tuple(half))  # type: ignore[arg-type]


def _block_direct(rng: random.Random, settings: _Settings, sim: Simulator, start: list, goal: list, target: list,
                  samples: list[tuple], boxes: list[Box]) -> list[Box] | None:
    """``boxes`` plus blockers, so that the straight segment from the start to every goal configuration found by
    :func:`_goal_configurations` collides; each blocker keeps ``clearance`` from the witness. ``None`` when a
    segment cannot be blocked."""
    if settings.blocked_goals == 0:
        return boxes
    sweep = _Sweep(sim, samples)
    bodies = [sim.add_box(box) for box in boxes]
    boxes = list(boxes)
    try:
        for end in _goal_configurations(rng, settings, sim, start, goal, target):
            if _segment_collides(sim, start, end, settings.resolution):
                continue
            for _ in range(BLOCK_ATTEMPTS):
                box = _draw_blocker(rng, settings, sim, start, end)
                if not _fits(sim, sweep, box, settings.clearance):
                    continue
                bodies.append(sim.add_box(box))
                if _segment_collides(sim, start, end, settings.resolution):
                    boxes.append(box)
                    break
                sim.remove(bodies.pop())
            else:
                return None
        return boxes
    finally:
        for body in bodies:
            sim.remove(body)


class TrajectoryGenerator(TaskGenerator):
    """Motion-planning tasks for a KUKA iiwa among box obstacles; see :data:`DEFAULTS` for the knobs."""

    name: ClassVar[str] = "motion_planning"
    tools: ClassVar[tuple[str, ...]] = ("forward_kinematics", "check_path")
    interaction: ClassVar[str | None] = "answer_feedback"
    hidden_fields: ClassVar[tuple[str, ...]] = ("witness",)
    reward: ClassVar[str] = "trajectory"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.settings = _Settings(config)

    def case_generator(self, rng: random.Random) -> dict:
        """A task identity, drawn only from ``rng``; its ``witness`` is hidden (never in the prompt)."""
        return build_identity(rng, self.settings)

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """Describe the arm, the scene (unless hidden), the limits, the tolerance, the tools and the answer format."""
        return render_prompt(identity)


def _vector(values: Any, digits: int = 3) -> str:
    return "(" + ", ".join(f"{value:.{digits}f}" for value in values) + ")"


def render_prompt(identity: dict) -> str:
    """The task as the model sees it: everything except the witness (and the obstacles when they are hidden)."""
    limits = ", ".join(f"joint {index + 1} ±{limit}" for index, limit in enumerate(UPPER_LIMITS))
    start = "[" + ", ".join(f"{angle:.4f}" for angle in identity["start"]) + "]"
    obstacles = identity["obstacles"]
    budget = identity["budget"]
    floor = " and the floor (the plane z = 0)" if identity["floor"] else ""
    if identity["hidden_obstacles"]:
        scene = (
            f"There are {len(obstacles)} box obstacles in the workspace, but where they are is not given: "
            "`check_path` tells you where a path hits one."
        )
    elif obstacles:
        rows = "\n".join(
            f"  {index}: centre {_vector(box['center'])}, half-extents {_vector(box['half_extents'])}"
            for index, box in enumerate(obstacles)
        )
        scene = f"Obstacles (axis-aligned boxes, metres):\n{rows}"
    else:
        scene = "There are no box obstacles."
    return (
        "Plan a collision-free motion for a 7-joint KUKA LBR iiwa robot arm (the kuka_iiwa model of PyBullet). Its "
        "base is fixed at the origin, z points up; lengths are in metres, angles in radians.\n\n"
        f"Start configuration (joints 1-7): {start}\n"
        f"Goal: bring the end effector ({END_EFFECTOR}) to within {identity['tolerance']:g} m of the target "
        f"{_vector(identity['target'])}.\n"
        f"Joint limits: {limits}.\n\n"
        f"{scene}\n\n"
        f"The arm must not penetrate the obstacles{floor}, nor its own base and links (touching is allowed).\n\n"
        "A path is a list of waypoints, each a configuration of 7 joint angles. The arm moves linearly in joint space "
        f"from each waypoint to the next, and the path is checked at every step of at most {identity['resolution']:g} "
        f"rad per joint. The first waypoint must be the start configuration (each joint within {START_TOLERANCE:g} "
        "rad); every waypoint must be within the joint limits; the last must put the end effector within the "
        f"tolerance of the target. At most {MAX_WAYPOINTS} waypoints.\n\n"
        "Tools (each with a budget of calls for this task):\n"
        "- `forward_kinematics(joint_angles)`: where the end effector is in one configuration "
        f"({budget.get('forward_kinematics', 0)} calls).\n"
        "- `check_path(waypoints)`: checks a path exactly as the final answer is judged and reports the first "
        "collision and what it hit, joint-limit violations and where the path ends "
        f"({budget.get('check_path', 0)} calls).\n\n"
        "Scoring: a final path that solves the task scores 1, less 0.2 for every `check_path` call whose path "
        "collided, and less (up to 0.1) for a detour more than twice as long in joint space as a planned path around "
        "the obstacles; any other answer scores 0. Plan first, and check a path you expect to be clear.\n\n"
        f"Give your final answer in exactly this form:\n\n{ANSWER_FORMAT}"
    )
