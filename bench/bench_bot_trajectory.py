"""bootcamp-bot-trajectory benchmark: collision checks/s, 50-waypoint paths checked/s, planning time per task.

Every number is printed next to a naive baseline measured in the same run, on the same scenes and configurations:

- collision checks: ours (one ``resetJointStatesMultiDof``, ``performCollisionDetection``, contacts filtered to real
  penetration) vs a naive check (seven ``resetJointState`` calls, then ``getClosestPoints`` against every obstacle);
- path checks (50 waypoints, at the task's 0.02 rad resolution): the judge on this thread's cached client vs the
  naive shape of a stateless server (a fresh client per request: connect, load the arm and the boxes, check every
  configuration with the naive check), plus the naive check on a warm client, so setup and checking show apart;
- planning: the reference agent's planner (RRT-Connect to several IK goals, straight-line try, shortcuts, the judge's
  confirmation) vs a plain single-tree RRT with 10% goal bias to one IK goal, same checker and resolution, per task.

Run: ``python bench/bench_bot_trajectory.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time


def level_tasks(level: str, count: int, seed: int) -> list:
    """``count`` tasks of one group of the default config."""
    from importlib import resources

    import yaml

    from bootcamp_bot_trajectory.generator import TrajectoryGenerator
    from bootcamp_bot_trajectory.robot import Task

    levels = yaml.safe_load((resources.files("bootcamp_bot_trajectory") / "configs" / "default.yaml").read_text())
    generator = TrajectoryGenerator(**levels["instruction_generators"][level]["config"])
    rng = random.Random(seed)
    return [Task.from_identity(generator.case_generator(rng)) for _ in range(count)]


class NaiveChecker:
    """A collision check written the obvious way: joint by joint, then closest points to each obstacle."""

    def __init__(self, task) -> None:
        from bootcamp_bot_trajectory.simulator import FLOOR_HALF_EXTENTS, ROBOT_URDF, import_pybullet

        pybullet, pybullet_data = import_pybullet()
        self.pybullet = pybullet
        self.client = pybullet.connect(pybullet.DIRECT)
        self.robot = pybullet.loadURDF(os.path.join(pybullet_data.getDataPath(), ROBOT_URDF), useFixedBase=True,
                                       physicsClientId=self.client)
        boxes = [(box.center, box.half_extents) for box in task.obstacles]
        self.floor = None
        if task.floor:
            boxes.append(((0.0, 0.0, -FLOOR_HALF_EXTENTS[2]), FLOOR_HALF_EXTENTS))
        self.bodies = []
        for center, half in boxes:
            shape = pybullet.createCollisionShape(pybullet.GEOM_BOX, halfExtents=list(half),
                                                  physicsClientId=self.client)
            self.bodies.append(pybullet.createMultiBody(0, shape, basePosition=list(center),
                                                        physicsClientId=self.client))
        if task.floor:
            self.floor = self.bodies[-1]

    def collides(self, configuration) -> bool:
        pybullet, client, robot = self.pybullet, self.client, self.robot
        for joint, angle in enumerate(configuration):
            pybullet.resetJointState(robot, joint, angle, physicsClientId=client)
        hit = False
        for body in self.bodies:
            for point in pybullet.getClosestPoints(robot, body, 0.0, physicsClientId=client):
                if point[8] < 0 and not (body == self.floor and point[3] == -1):
                    hit = True
        return hit

    def close(self) -> None:
        self.pybullet.disconnect(physicsClientId=self.client)


def rate(function, items: list, repeats: int = 3) -> float:
    """Best-of-``repeats`` calls per second of ``function`` over ``items``."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        for item in items:
            function(item)
        best = min(best, time.perf_counter() - started)
    return len(items) / best


def collision_checks(tasks: list, configurations: int) -> None:
    from bootcamp_bot_trajectory.robot import UPPER_LIMITS
    from bootcamp_bot_trajectory.simulator import simulator

    rng = random.Random(0)
    draws = [tuple(rng.uniform(-limit, limit) for limit in UPPER_LIMITS) for _ in range(configurations)]
    sim = simulator()
    ours_rates, naive_rates, disagreements, hits = [], [], 0, 0
    for task in tasks:
        sim.load(task.scene)
        naive = NaiveChecker(task)
        disagreements += sum(sim.collides(q) != naive.collides(q) for q in draws)
        hits += sum(sim.collides(q) for q in draws)
        ours_rates.append(rate(sim.collides, draws))
        naive_rates.append(rate(naive.collides, draws))
        naive.close()
    ours, naive = statistics.median(ours_rates), statistics.median(naive_rates)
    obstacles = statistics.mean(len(task.obstacles) for task in tasks)
    print(f"\n== collision checks, random configurations, {len(tasks)} level-4 scenes "
          f"({obstacles:.1f} boxes + floor on average), {configurations:,} configurations each ==")
    print(f"baseline (7 resetJointState + getClosestPoints per box) : {naive:>9,.0f} checks/s")
    print(f"ours (resetJointStatesMultiDof + contact detection)     : {ours:>9,.0f} checks/s   "
          f"ratio {ours / naive:.2f}x   ({1e6 / ours:.0f} µs each)")
    total = len(tasks) * len(draws)
    print(f"verdicts agree on {total - disagreements:,} of {total:,} configurations ({hits / total:.0%} collide; the "
          "baseline does not check self-collision)")


def fifty_waypoints(task, rng: random.Random) -> list[tuple]:
    """The witness cut into 50 waypoints: a collision-free path the judge walks end to end."""
    from bootcamp_bot_trajectory.robot import path_samples

    dense = [configuration for _, _, configuration in path_samples(task.witness, task.resolution)]
    picks = sorted(rng.sample(range(1, len(dense) - 1), 48))
    return [dense[0], *(dense[index] for index in picks), dense[-1]]


def path_checks(tasks: list, repeats: int) -> None:
    from bootcamp_bot_trajectory.judge import judge_path
    from bootcamp_bot_trajectory.robot import path_samples, sample_count
    from bootcamp_bot_trajectory.simulator import simulator

    rng = random.Random(1)
    paths = [(task, fifty_waypoints(task, rng)) for task in tasks]
    configurations = statistics.mean(sample_count(path, task.resolution) for task, path in paths)
    sim = simulator()
    assert all(judge_path(task, path, sim).solved for task, path in paths)

    def naive_cold(item) -> bool:
        task, path = item
        checker = NaiveChecker(task)
        try:
            return any(checker.collides(q) for _, _, q in path_samples(path, task.resolution))
        finally:
            checker.close()

    warm = {id(task): NaiveChecker(task) for task, _ in paths}

    def naive_warm(item) -> bool:
        task, path = item
        return any(warm[id(task)].collides(q) for _, _, q in path_samples(path, task.resolution))

    ours = rate(lambda item: judge_path(item[0], item[1], sim), paths * repeats)
    cold = rate(naive_cold, paths, repeats=1)
    hot = rate(naive_warm, paths * repeats)
    for checker in warm.values():
        checker.close()
    print(f"\n== path checks, 50 waypoints, collision-free (all {configurations:.0f} configurations checked on "
          f"average), {len(paths)} scenes ==")
    print(f"baseline, fresh client per request (stateless server) : {cold:>8.1f} paths/s")
    print(f"baseline, warm client, naive checks                   : {hot:>8.1f} paths/s")
    print(f"ours, the judge on the thread's cached client         : {ours:>8.1f} paths/s   "
          f"ratio {ours / cold:.1f}x vs fresh, {ours / hot:.2f}x vs warm")


def naive_rrt(planner, goal, max_iterations: int, goal_bias: float = 0.1):
    """Single-tree RRT from the start with goal bias, the textbook baseline; no shortcutting."""
    nodes, parents = [tuple(planner.task.start)], [-1]
    step = planner.settings.step
    for _ in range(max_iterations):
        toward = goal if planner.rng.random() < goal_bias else planner.random_configuration()
        near = min(range(len(nodes)), key=lambda index: math.dist(nodes[index], toward))
        distance = math.dist(nodes[near], toward)
        new = toward if distance <= step else tuple(
            a + (b - a) * step / distance for a, b in zip(nodes[near], toward))
        if not planner.segment_free(nodes[near], new):
            continue
        nodes.append(new)
        parents.append(near)
        if new == goal:
            path, index = [], len(nodes) - 1
            while index != -1:
                path.append(nodes[index])
                index = parents[index]
            return path[::-1]
    return None


def planning(tasks: list, max_iterations: int) -> None:
    from bootcamp_bot_trajectory.agent import plan_waypoints
    from bootcamp_bot_trajectory.judge import judge_path
    from bootcamp_bot_trajectory.planner import Planner, PlannerSettings

    ours_times, naive_times, ours_solved, naive_solved = [], [], 0, 0
    for index, task in enumerate(tasks):
        started = time.perf_counter()
        waypoints = plan_waypoints(task, random.Random(index))
        ours_times.append(time.perf_counter() - started)
        ours_solved += waypoints is not None and judge_path(task, waypoints).solved

        started = time.perf_counter()
        planner = Planner(task, random.Random(index), PlannerSettings(goals=1))
        planner.sim.load(task.scene)
        goals = planner.goals()
        path = naive_rrt(planner, goals[0], max_iterations) if goals else None
        naive_times.append(time.perf_counter() - started)
        naive_solved += path is not None and judge_path(task, path).solved
    ours, naive = statistics.median(ours_times), statistics.median(naive_times)
    print(f"\n== planning per task, {len(tasks)} tasks of levels 3, 4 and hidden (baseline capped at "
          f"{max_iterations:,} iterations) ==")
    print(f"baseline (RRT, goal bias 0.1, one IK goal)  : median {naive * 1e3:8.1f} ms, mean "
          f"{statistics.mean(naive_times) * 1e3:8.1f} ms, max {max(naive_times) * 1e3:8.1f} ms, "
          f"solved {naive_solved}/{len(tasks)}")
    print(f"ours (RRT-Connect, IK goals, shortcuts,     : median {ours * 1e3:8.1f} ms, mean "
          f"{statistics.mean(ours_times) * 1e3:8.1f} ms, max {max(ours_times) * 1e3:8.1f} ms, "
          f"solved {ours_solved}/{len(tasks)}")
    print(f"      rounding and the judge's confirmation) : median ratio {naive / ours:.1f}x faster, mean ratio "
          f"{statistics.mean(naive_times) / statistics.mean(ours_times):.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=int, default=6, help="level-4 scenes for the collision and path checks")
    parser.add_argument("--configurations", type=int, default=2000, help="configurations per scene")
    parser.add_argument("--tasks", type=int, default=10, help="tasks per group for the planning comparison")
    parser.add_argument("--baseline-iterations", type=int, default=4000, help="cap of the baseline RRT")
    parser.add_argument("--quick", action="store_true", help="a small run (numbers are noisier)")
    args = parser.parse_args()
    if args.quick:
        args.scenes, args.configurations, args.tasks, args.baseline_iterations = 3, 500, 4, 2000
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    scenes = level_tasks("level_4", args.scenes, seed=1)
    collision_checks(scenes, args.configurations)
    path_checks(scenes, repeats=5 if not args.quick else 2)
    tasks = [task for level in ("level_3", "level_4", "hidden") for task in level_tasks(level, args.tasks, seed=2)]
    planning(tasks, args.baseline_iterations)


if __name__ == "__main__":
    main()
