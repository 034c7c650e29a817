"""The arm, the scene and paths as plain data: joint limits, input checks, joint-space interpolation. No PyBullet."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

__all__ = [
    "END_EFFECTOR",
    "JOINT_COUNT",
    "LOWER_LIMITS",
    "MAX_WAYPOINTS",
    "START_TOLERANCE",
    "UPPER_LIMITS",
    "Box",
    "IdentityError",
    "PathError",
    "Task",
    "describe_violations",
    "limit_violations",
    "link_name",
    "parse_configuration",
    "parse_waypoints",
    "path_length",
    "path_samples",
    "round_configuration",
    "sample_count",
    "segment_samples",
    "segment_steps",
]

JOINT_COUNT = 7
#: Joint limits of ``kuka_iiwa/model.urdf`` in radians (a test reads them back from the URDF).
UPPER_LIMITS = (2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239, 3.05432619099)
LOWER_LIMITS = tuple(-limit for limit in UPPER_LIMITS)
#: What "the end effector" means: the origin of link 7's frame (the flange), PyBullet link index 6.
END_EFFECTOR = "the origin of link 7, the flange frame"
#: Longest path a tool or the judge accepts; bounds the work one call can cause.
MAX_WAYPOINTS = 100
#: How far (radians, per joint) the first waypoint may be from the start configuration.
START_TOLERANCE = 1e-3


class PathError(ValueError):
    """A configuration or path is malformed; the message is meant for the model as is."""


def link_name(link: int) -> str:
    """The name a message uses for a PyBullet link index of the arm (-1 is the base)."""
    if link == -1:
        return "link 0 (the base)"
    if link == JOINT_COUNT - 1:
        return "link 7 (the flange)"
    return f"link {link + 1}"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PathError(f"{where} must be a number, got {_show(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise PathError(f"{where} must be a finite number, got an integer of {len(str(value))} digits") from None
    if not math.isfinite(number):
        raise PathError(f"{where} must be a finite number, got {value}")
    return number


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 40 else text[:37] + "..."


def parse_configuration(value: Any, what: str = "joint_angles") -> tuple[float, ...]:
    """Seven finite joint angles as a tuple of floats; a :class:`PathError` saying what is wrong otherwise."""
    if not isinstance(value, (list, tuple)):
        raise PathError(f"{what} must be a list of {JOINT_COUNT} numbers (radians), got {_show(value)}")
    if len(value) != JOINT_COUNT:
        raise PathError(f"{what} has {len(value)} values; the arm has {JOINT_COUNT} joints, give one angle each")
    return tuple(_number(angle, f"{what}[{index}] (joint {index + 1})") for index, angle in enumerate(value))


def parse_waypoints(value: Any, what: str = "waypoints") -> tuple[tuple[float, ...], ...]:
    """A non-empty list of at most :data:`MAX_WAYPOINTS` configurations; a :class:`PathError` otherwise."""
    if not isinstance(value, (list, tuple)):
        raise PathError(f"{what} must be a list of configurations (lists of {JOINT_COUNT} numbers), got {_show(value)}")
    if not value:
        raise PathError(f"{what} is empty; start with the start configuration")
    if len(value) > MAX_WAYPOINTS:
        raise PathError(f"{what} has {len(value)} waypoints; the limit is {MAX_WAYPOINTS}")
    return tuple(parse_configuration(point, f"waypoint {index}") for index, point in enumerate(value))


def round_configuration(configuration: Sequence[float], digits: int = 4) -> tuple[float, ...]:
    """Each angle rounded to ``digits`` decimals, towards zero where rounding would leave the joint limits."""
    rounded = []
    for angle, high in zip(configuration, UPPER_LIMITS):
        value = round(angle, digits)
        if abs(value) > high:
            value = math.copysign(math.floor(high * 10**digits) / 10**digits, angle)
        rounded.append(value + 0.0)  # + 0.0 turns -0.0 into 0.0
    return tuple(rounded)


def limit_violations(configuration: Sequence[float]) -> list[tuple[int, float]]:
    """(joint index, angle) of every joint outside its limits."""
    return [
        (joint, angle)
        for joint, (angle, low, high) in enumerate(zip(configuration, LOWER_LIMITS, UPPER_LIMITS))
        if not low <= angle <= high
    ]


def describe_violations(configuration: Sequence[float], where: str) -> str | None:
    """A sentence naming every joint of ``configuration`` outside its limits, or ``None`` when all are within."""
    found = limit_violations(configuration)
    if not found:
        return None
    parts = [f"joint {joint + 1} = {angle:.4f} (limits ±{UPPER_LIMITS[joint]})" for joint, angle in found]
    return f"{where} is outside the joint limits: " + ", ".join(parts)


def segment_steps(start: Sequence[float], end: Sequence[float], resolution: float) -> int:
    """Interpolation steps of one segment: the fewest that move no joint more than ``resolution`` per step."""
    widest = max(abs(b - a) for a, b in zip(start, end))
    # the small slack keeps an exact multiple (0.2 / 0.02) from gaining a step through rounding
    return max(1, math.ceil(widest / resolution - 1e-9))


def segment_samples(start: Sequence[float], end: Sequence[float], resolution: float) -> Iterator[tuple[float, tuple]]:
    """(fraction, configuration) along one segment, its end included and its start excluded."""
    steps = segment_steps(start, end, resolution)
    deltas = [b - a for a, b in zip(start, end)]
    for step in range(1, steps):
        fraction = step / steps
        yield fraction, tuple(a + d * fraction for a, d in zip(start, deltas))
    yield 1.0, tuple(end)  # exactly the waypoint, not a rounded neighbour of it


def path_samples(waypoints: Sequence[Sequence[float]], resolution: float) -> Iterator[tuple[int, float, tuple]]:
    """Every configuration the path is checked at, in order, as (segment, fraction, configuration).

    The first waypoint comes as segment -1; a fraction of 1.0 on segment ``i`` is waypoint ``i + 1``.
    """
    yield -1, 1.0, tuple(waypoints[0])
    for index in range(len(waypoints) - 1):
        for fraction, configuration in segment_samples(waypoints[index], waypoints[index + 1], resolution):
            yield index, fraction, configuration


def sample_count(waypoints: Sequence[Sequence[float]], resolution: float) -> int:
    """How many configurations :func:`path_samples` yields."""
    return 1 + sum(segment_steps(a, b, resolution) for a, b in itertools.pairwise(waypoints))


def path_length(waypoints: Sequence[Sequence[float]]) -> float:
    """Joint-space length: the sum of the Euclidean lengths of the segments, in radians."""
    return sum(math.dist(a, b) for a, b in itertools.pairwise(waypoints))


class IdentityError(ValueError):
    """A task identity is missing a field or holds a malformed one."""


@attrs.frozen
class Box:
    """An axis-aligned box obstacle: centre and half-extents in metres."""

    center: tuple[float, float, float]
    half_extents: tuple[float, float, float]

    def to_json(self) -> dict:
        return {"center": list(self.center), "half_extents": list(self.half_extents)}


def _vector(value: Any, length: int, what: str) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or len(value) != length:
        raise IdentityError(f"{what} must be a list of {length} numbers")
    try:
        return tuple(_number(item, what) for item in value)
    except PathError as error:
        raise IdentityError(str(error)) from None


@attrs.frozen
class Task:
    """A task identity, parsed: what the tools, the reward, the interaction and the agent work from."""

    start: tuple[float, ...]
    target: tuple[float, float, float]
    tolerance: float
    obstacles: tuple[Box, ...]
    floor: bool
    resolution: float
    hidden_obstacles: bool
    budget: dict[str, int]
    witness: tuple[tuple[float, ...], ...] | None

    @property
    def scene(self) -> tuple[tuple[Box, ...], bool]:
        """The collision scene: a hashable key the simulator caches loaded bodies under."""
        return self.obstacles, self.floor

    @classmethod
    def from_identity(cls, identity: Any) -> Task:
        """Parse an identity; an :class:`IdentityError` when it is not one of this bootcamp's."""
        if not isinstance(identity, dict):
            raise IdentityError(f"the identity must be an object, got {type(identity).__name__}")
        try:
            start = parse_configuration(identity["start"], "start")
            obstacles = identity.get("obstacles") or []
            if not isinstance(obstacles, list):
                raise IdentityError("obstacles must be a list")
            boxes = []
            for index, item in enumerate(obstacles):
                if not isinstance(item, dict):
                    raise IdentityError(f"obstacle {index} must be an object")
                half = _vector(item.get("half_extents"), 3, f"obstacle {index} half_extents")
                if min(half) <= 0:
                    raise IdentityError(f"obstacle {index} has a half-extent <= 0")
                boxes.append(Box(_vector(item.get("center"), 3, f"obstacle {index} center"), half))
            tolerance = _number(identity["tolerance"], "tolerance")
            resolution = _number(identity["resolution"], "resolution")
            budget = identity.get("budget") or {}
            if not isinstance(budget, dict) or not all(
                isinstance(value, int) and not isinstance(value, bool) and value >= 0 for value in budget.values()
            ):
                raise IdentityError("budget must map tool names to call counts")
            witness = identity.get("witness")
            return cls(
                start=start,
                target=_vector(identity["target"], 3, "target"),  # type: ignore[arg-type]
                tolerance=tolerance,
                obstacles=tuple(boxes),
                floor=bool(identity.get("floor", True)),
                resolution=resolution,
                hidden_obstacles=bool(identity.get("hidden_obstacles", False)),
                budget=dict(budget),
                witness=parse_waypoints(witness, "witness") if witness is not None else None,
            )
        except KeyError as error:
            raise IdentityError(f"the identity has no {error.args[0]!r}") from None
        except PathError as error:
            raise IdentityError(str(error)) from None

    def __attrs_post_init__(self) -> None:
        if not (self.tolerance > 0 and 0 < self.resolution <= 0.5):
            raise IdentityError("tolerance must be > 0 and resolution in (0, 0.5] radians")
