"""PyBullet in DIRECT mode: the KUKA iiwa, the floor and box obstacles. One physics client per thread, never shared.

:func:`simulator` hands each thread (and each forked process) its own :class:`Simulator`. A client costs about 35 MB,
so the slow work (path checks, planning, the reward's judgement) runs on a few threads of this module's own
(:func:`on_simulation_thread`, :func:`simulate`) rather than on however many worker threads an evaluation starts;
quick forward kinematics runs on the event loop's thread with that thread's client. PyBullet is imported on first use,
with its build banner (printed by the C library past Python's streams) sent to /dev/null.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
import attrs

from bootcamp_bot_trajectory.robot import JOINT_COUNT, LOWER_LIMITS, UPPER_LIMITS, Box, link_name

__all__ = ["ROBOT_URDF", "Contact", "Simulator", "import_pybullet", "on_simulation_thread", "simulate", "simulator"]

ROBOT_URDF = "kuka_iiwa/model.urdf"
END_EFFECTOR_LINK = JOINT_COUNT - 1
#: Link pairs whose convex hulls overlap at legal joint angles (the forearm, link 5, and the flange, link 7, at a
#: wrist bend past about 90°): not real self-collisions, so never checked.
IGNORED_SELF_PAIRS = ((4, 6),)
FLOOR_HALF_EXTENTS = (4.0, 4.0, 0.05)
#: Scenes whose bodies a client keeps loaded (parked out of reach when inactive), least recently used dropped.
SCENE_CACHE = 32
#: Where parked obstacles wait: far from the arm and from each other, so they never enter a collision query.
PARKING = (1000.0, 0.0, -1000.0)
#: Box shapes a client makes before it is rebuilt. PyBullet never frees a collision shape (``removeCollisionShape``
#: only warns "TODO: dealloc"), about 3 KB each, so a client that sees ever new scenes would grow without end;
#: disconnecting frees them all, and rebuilding takes about 0.1 s.
SHAPE_LIMIT = 10_000
#: Threads of :func:`on_simulation_thread`: PyBullet holds the GIL, so more would only add clients, not speed; a few
#: keep a long planning job from holding up the path checks of other episodes.
SIMULATION_THREADS = 4

_import_lock = threading.Lock()
_modules: tuple[Any, Any] | None = None


def import_pybullet() -> tuple[Any, Any]:
    """(pybullet, pybullet_data), imported once per process with the build banner kept out of stdout."""
    global _modules
    with _import_lock:
        if _modules is None:
            _modules = _quiet_import()
        return _modules


def _quiet_import() -> tuple[Any, Any]:
    # The banner is written by C code straight to a file descriptor (stderr in 3.2.7, stdout in some builds) at
    # import time, past sys.stdout/sys.stderr and pytest's capsys: both descriptors point at /dev/null meanwhile.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    saved: dict[int, int] = {}
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for descriptor in (1, 2):
            try:
                saved[descriptor] = os.dup(descriptor)
            except OSError:  # not open at all: nothing to protect
                continue
            os.dup2(devnull, descriptor)
        import pybullet
        import pybullet_data
    finally:
        _flush_c_stdio()  # on a pipe the banner may still sit in C's stdio buffer: out it goes, to /dev/null
        for descriptor, copy in saved.items():
            os.dup2(copy, descriptor)
            os.close(copy)
        os.close(devnull)
    return pybullet, pybullet_data


def _flush_c_stdio() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library to reach (e.g. Windows): the banner may show
        pass


@attrs.frozen
class Contact:
    """A penetration between a link of the arm and something else; ``depth`` is positive, in metres."""

    link: int  # PyBullet link index of the arm (-1 is the base)
    other: str  # "obstacle 3", "the floor", or a link of the arm itself
    obstacle: int | None  # the obstacle's index in the task, when it is one
    depth: float
    position: tuple[float, float, float]  # on the arm's surface

    def describe(self) -> str:
        """One clause for a message: what touched what, how deep and where."""
        x, y, z = self.position
        return (
            f"{link_name(self.link)} penetrates {self.other} by {self.depth:.4f} m "
            f"at ({x:.3f}, {y:.3f}, {z:.3f})"
        )


class Simulator:
    """One PyBullet client with the arm, the floor and a cache of obstacle scenes. Use it from one thread only."""

    def __init__(self, scene_cache: int = SCENE_CACHE, shape_limit: int = SHAPE_LIMIT) -> None:
        self.pybullet, self._data = import_pybullet()
        self.scene_cache = max(1, scene_cache)
        self.shape_limit = shape_limit
        self.pid = os.getpid()
        self.rebuilds = 0
        self._connect()

    def _connect(self) -> None:
        """A fresh client with the arm and the floor (every earlier body and shape gone with the old one)."""
        pybullet = self.pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        self._finalizer = weakref.finalize(self, _disconnect, pybullet, self.client, self.pid)
        self._loose: set[int] = set()  # bodies made by add_box and not removed yet
        self.shapes = 0
        client = self.client
        self.robot = pybullet.loadURDF(
            os.path.join(self._data.getDataPath(), ROBOT_URDF),
            useFixedBase=True,
            flags=pybullet.URDF_USE_SELF_COLLISION,
            physicsClientId=client,
        )
        for first, second in IGNORED_SELF_PAIRS:
            pybullet.setCollisionFilterPair(self.robot, self.robot, first, second, 0, physicsClientId=client)
        self.floor = self._create_box(Box((0.0, 0.0, -FLOOR_HALF_EXTENTS[2]), FLOOR_HALF_EXTENTS))
        # the base stands on the floor by design; only the moving links can hit it
        pybullet.setCollisionFilterPair(self.robot, self.floor, -1, -1, 0, physicsClientId=client)
        self._joints = list(range(JOINT_COUNT))
        empty = ((), True)
        self._scenes: collections.OrderedDict[tuple, list[int]] = collections.OrderedDict({empty: []})
        self._scene: tuple = empty
        self._names: dict[int, tuple[str, int | None]] = {self.floor: ("the floor", None)}
        self._floor_on = True
        self.shapes = 0  # obstacle shapes made by this client (the floor's is not counted)

    # ----------------------------------------------------------------------------------------------- scenes
    def _create_box(self, box: Box) -> int:
        pybullet, client = self.pybullet, self.client
        self.shapes += 1
        shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=list(box.half_extents),
                                              physicsClientId=client)
        return pybullet.createMultiBody(baseMass=0, baseCollisionShapeIndex=shape, basePosition=list(box.center),
                                        physicsClientId=client)

    def _move(self, body: int, position: Sequence[float]) -> None:
        self.pybullet.resetBasePositionAndOrientation(body, list(position), [0, 0, 0, 1], physicsClientId=self.client)

    def load(self, scene: tuple[tuple[Box, ...], bool]) -> None:
        """Make ``scene`` (obstacles, floor) the one collisions are checked against; cheap when it is cached.

        Body ids from before a call may be stale after it: a client past its shape limit is rebuilt here.
        """
        if self.shapes >= self.shape_limit and not self._loose:
            self._finalizer()
            self.rebuilds += 1
            self._connect()
        if scene == self._scene:
            return
        obstacles, floor = scene
        for body in self._scenes[self._scene]:
            self._move(body, PARKING)
        bodies = self._scenes.get(scene)
        if bodies is None:
            bodies = [self._create_box(box) for box in obstacles]
            self._scenes[scene] = bodies
            while len(self._scenes) > self.scene_cache:
                _, dropped = self._scenes.popitem(last=False)
                for body in dropped:
                    self.pybullet.removeBody(body, physicsClientId=self.client)
        else:
            self._scenes.move_to_end(scene)
            for body, box in zip(bodies, obstacles):
                self._move(body, box.center)
        if floor != self._floor_on:
            self._move(self.floor, (0.0, 0.0, -FLOOR_HALF_EXTENTS[2]) if floor else PARKING)
            self._floor_on = floor
        self._names = {self.floor: ("the floor", None)}
        self._names.update({body: (f"obstacle {index}", index) for index, body in enumerate(bodies)})
        self._scene = scene

    def add_box(self, box: Box) -> int:
        """A box outside any scene (for generation): a body id to pass to :meth:`near` and :meth:`remove`."""
        body = self._create_box(box)
        self._loose.add(body)
        return body

    def remove(self, body: int) -> None:
        """Remove a body made by :meth:`add_box`."""
        self._loose.discard(body)
        self.pybullet.removeBody(body, physicsClientId=self.client)

    # ---------------------------------------------------------------------------------------------- queries
    def set_configuration(self, configuration: Sequence[float]) -> None:
        """Put the arm in ``configuration`` (seven angles, radians)."""
        self.pybullet.resetJointStatesMultiDof(
            self.robot, self._joints, [[angle] for angle in configuration], physicsClientId=self.client
        )

    def end_effector(self, configuration: Sequence[float]) -> tuple[float, float, float]:
        """World position of the end effector (link 7's frame origin) in ``configuration``."""
        self.set_configuration(configuration)
        state = self.pybullet.getLinkState(self.robot, END_EFFECTOR_LINK, computeForwardKinematics=True,
                                           physicsClientId=self.client)
        return tuple(state[4])  # type: ignore[return-value]

    def link_positions(self, configuration: Sequence[float]) -> list[tuple[float, float, float]]:
        """World positions of the frame origins of links 1..7 in ``configuration``."""
        self.set_configuration(configuration)
        states = self.pybullet.getLinkStates(self.robot, self._joints, computeForwardKinematics=True,
                                             physicsClientId=self.client)
        return [tuple(state[4]) for state in states]  # type: ignore[misc]

    def link_bounds(self, configuration: Sequence[float]) -> list[tuple[tuple, tuple]]:
        """Axis-aligned bounding boxes (lower corner, upper corner) of the base and links 1..7 in ``configuration``.

        Each holds its link's collision shape (plus PyBullet's small collision margin), so a body outside all of
        them is clear of the arm.
        """
        pybullet, client, robot = self.pybullet, self.client, self.robot
        self.set_configuration(configuration)
        return [pybullet.getAABB(robot, link, physicsClientId=client) for link in range(-1, JOINT_COUNT)]

    def _penetrations(self, configuration: Sequence[float]) -> list:
        pybullet, client = self.pybullet, self.client
        self.set_configuration(configuration)
        pybullet.performCollisionDetection(physicsClientId=client)
        # contact points also list near misses (distance >= 0): only a real penetration counts
        return [point for point in pybullet.getContactPoints(bodyA=self.robot, physicsClientId=client)
                if point[8] < 0.0]

    def collides(self, configuration: Sequence[float]) -> bool:
        """Whether the arm penetrates an obstacle, the floor or itself in ``configuration``."""
        return bool(self._penetrations(configuration))

    def contacts(self, configuration: Sequence[float]) -> list[Contact]:
        """Every penetration in ``configuration``, deepest first."""
        found = []
        for point in self._penetrations(configuration):
            body, link, position = point[2], point[3], point[5]
            if body == self.robot:
                # named from the link further out (the one that moved into the other), as "link 5 ... its base"
                inner, link = sorted((link, point[4]))
                if link != point[3]:
                    position = point[6]
                other, obstacle = f"{link_name(inner)} of the arm itself", None
            else:
                other, obstacle = self._names.get(body, (f"body {body}", None))
            found.append(Contact(link=link, other=other, obstacle=obstacle, depth=-point[8], position=tuple(position)))
        found.sort(key=lambda contact: -contact.depth)
        return found

    def near(self, configuration: Sequence[float], bodies: Iterable[int], margin: float) -> bool:
        """Whether the arm comes within ``margin`` metres of one of ``bodies`` in ``configuration``.

        The base counts too, except against the floor it stands on.
        """
        pybullet, client, robot = self.pybullet, self.client, self.robot
        self.set_configuration(configuration)
        for body in bodies:
            for point in pybullet.getClosestPoints(robot, body, margin, physicsClientId=client):
                if point[3] != -1 or body != self.floor:
                    return True
        return False

    def inverse_kinematics(self, target: Sequence[float], seed: Sequence[float], iterations: int = 100
                           ) -> tuple[float, ...]:
        """A configuration placing the end effector at ``target``, searched from ``seed``, clamped to the limits."""
        self.set_configuration(seed)
        ranges = [high - low for low, high in zip(LOWER_LIMITS, UPPER_LIMITS)]
        solution = self.pybullet.calculateInverseKinematics(
            self.robot, END_EFFECTOR_LINK, list(target), lowerLimits=list(LOWER_LIMITS),
            upperLimits=list(UPPER_LIMITS), jointRanges=ranges, restPoses=list(seed),
            maxNumIterations=iterations, residualThreshold=1e-6, physicsClientId=self.client,
        )
        return tuple(min(high, max(low, angle)) for angle, low, high in zip(solution, LOWER_LIMITS, UPPER_LIMITS))

    def close(self) -> None:
        """Disconnect the client (also done when the simulator is garbage-collected)."""
        self._finalizer()

    @property
    def connected(self) -> bool:
        """Whether the client is still open."""
        return self._finalizer.alive


def _disconnect(pybullet: Any, client: int, pid: int) -> None:
    # a forked child holds a copy of its parent's client: that one is the parent's to close
    if os.getpid() == pid and pybullet.isConnected(physicsClientId=client):
        pybullet.disconnect(physicsClientId=client)


_local = threading.local()


def simulator() -> Simulator:
    """This thread's simulator, made on first use (again in a forked child, which must not use its parent's)."""
    current = getattr(_local, "simulator", None)
    if current is None or current.pid != os.getpid():
        current = _local.simulator = Simulator()
    return current


Result = TypeVar("Result")
_executor_lock = threading.Lock()
_executor: tuple[int, ThreadPoolExecutor] | None = None


def _mark_simulation_thread() -> None:
    _local.simulation_thread = True


def _simulation_threads() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        # a forked child has the executor object but none of its threads: it needs its own
        if _executor is None or _executor[0] != os.getpid():
            _executor = (os.getpid(), ThreadPoolExecutor(SIMULATION_THREADS, thread_name_prefix="bot-trajectory",
                                                         initializer=_mark_simulation_thread))
        return _executor[1]


def on_simulation_thread(function: Callable[..., Result], *args: Any) -> Result:
    """``function(*args)`` on one of the few simulation threads, waiting for it (directly when already on one)."""
    if getattr(_local, "simulation_thread", False):
        return function(*args)
    return _simulation_threads().submit(function, *args).result()


async def simulate(function: Callable[..., Result], *args: Any) -> Result:
    """:func:`on_simulation_thread` from async code, without blocking the event loop."""
    return await anyio.to_thread.run_sync(on_simulation_thread, function, *args)
