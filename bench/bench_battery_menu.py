"""bootcamp-battery-design shortcut benchmark: the best fixed menu of designs, and what every policy scores.

1. ``menu``: 256 Latin-hypercube points of the normalised design window (seeded, 3 decimals; each task maps them
   into its own manufacturing window) are simulated under the conditions of 40 train-split tasks of the default
   config; a design covers a task when it meets every
   target of the task (areal-capacity band, energy, peak temperature). Greedy set cover picks 8 designs (each the one covering the most tasks not yet covered): the
   best fixed menu of 8, printed as Python for ``tests/test_shortcuts.py``. Its first pick is the best constant
   design (the one that meets the most tasks alone).
   With ``--capacity-aware`` the points are of the three other variables (positive porosity, negative porosity,
   N/P ratio), each at the positive thickness that puts it at the centre of the task's areal-capacity band (what
   ``tests/test_shortcuts.py``'s ``at_capacity`` replays): the capacity-aware menu, printed as ``CAPACITY_MENU``.
2. ``table``: every policy of ``tests/test_shortcuts.py`` (the replayed menu, the constant design, the reference
   agent with the oracle removed from what it receives) on N test-split tasks per default level through
   ``run_episode``: mean score and solved share per level, as a Markdown table for the README.

Run: ``python bench/bench_battery_menu.py menu`` (``--designs``, ``--tasks``, ``--workers``; ``--matrix FILE`` keeps
the simulated matrix, every reported quantity of each design, keyed by the task's conditions and window, so a rerun
with another target rule costs no design solve; ``--set KEY=VALUE`` draws the tasks under another generator config,
which simulates only the oracles again as long as the conditions and windows stay those of the matrix) and ``python bench/bench_battery_menu.py table``
(``--per-level``). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ["PYBAMM_DISABLE_TELEMETRY"] = "true"

ROOT = Path(__file__).resolve().parent.parent


def latin_hypercube(count: int, seed: int, dimensions: int = 4) -> list[tuple[float, ...]]:
    """``count`` points in normalised window coordinates (0 = the window's low edge, 1 = its high edge) of
    ``dimensions`` variables, one per stratum of every variable, each coordinate rounded to 3 decimals."""
    rng = random.Random(seed)
    columns = []
    for _ in range(dimensions):
        strata = list(range(count))
        rng.shuffle(strata)
        columns.append([round((stratum + rng.random()) / count, 3) for stratum in strata])
    return [tuple(row) for row in zip(*columns)]


def _shortcuts() -> Any:
    """The shortcut tests' module (its menus and its mapping of window points to designs)."""
    sys.path.insert(0, str(ROOT / "bootcamp-battery-design" / "tests"))
    import test_shortcuts

    return test_shortcuts


def design_of(identity: dict, point: tuple[float, ...]) -> tuple[float, ...]:
    """The design a menu point stands for in this task: the window point itself (4 coordinates), or, for a
    capacity-aware menu (3 coordinates: porosity, negative porosity, N/P ratio), that point with the positive
    thickness that puts it at the centre of the task's areal-capacity band, exactly as the shortcut tests replay it."""
    from bootcamp_battery_design.agent import Task

    if len(point) == 3:
        return _shortcuts().at_capacity(identity, point)
    return Task.from_identity(identity).design(point)


def _results(job: tuple[dict, list[tuple[float, ...]]]) -> list[list[float] | None]:
    """Every reported quantity of every design under one task's conditions (:data:`ROW`); None where it failed."""
    from bootcamp_battery_design.cell import CellDesign, Conditions
    from bootcamp_battery_design.simulator import SimulationError, get_simulator

    identity, designs = job
    conditions = Conditions.from_identity(identity)
    rows: list[list[float] | None] = []
    for point in designs:
        try:
            result = get_simulator().simulate(CellDesign(*design_of(identity, point)), conditions)
            rows.append([getattr(result, name) for name in ROW])
        except SimulationError:
            rows.append(None)
    return rows


#: What a matrix row keeps of each simulated design, in this order (a rule on any of them needs no new solve).
ROW = ("specific_energy_Wh_kg", "peak_temperature_K", "discharge_time_s", "energy_Wh", "mass_kg",
       "nominal_capacity_Ah", "delivered_capacity_Ah")


def _instruction_config(settings: list[str]) -> dict | None:
    """The default instruction config with ``KEY=VALUE`` (VALUE as JSON) set in every level's generator config."""
    if not settings:
        return None
    import yaml

    from bootcamp_battery_design import generator

    config = yaml.safe_load((Path(generator.__file__).parent / "configs" / "default.yaml").read_text())
    for setting in settings:
        key, _, value = setting.partition("=")
        for level in config["instruction_generators"].values():
            level.setdefault("config", {})[key] = json.loads(value)
    return config


def _records(split: str, count: int, settings: list[str] = (), workers: int = 2) -> list[dict]:
    from bootcamp_core.testing import generate_records, registry_of

    return generate_records("battery_design", registry_of("battery_design"), split=split,
                            overrides={"split_samples": f"{split}:{count}"},
                            instruction_config=_instruction_config(settings), max_workers=workers)


def meets(row: list[float] | None, identity: dict, point: tuple[float, ...]) -> bool:
    """Whether the design at window point ``point``, with simulated ``row``, meets every target of ``identity``."""
    from bootcamp_battery_design.cell import CellDesign, areal_capacity

    if row is None:
        return False
    targets = identity["targets"]
    if row[0] < targets["min_specific_energy_Wh_kg"] or row[1] > targets["max_peak_temperature_K"]:
        return False
    band = targets.get("areal_capacity_mAh_cm2")
    if band is None:
        return True
    design = CellDesign(*design_of(identity, point))
    return band[0] <= areal_capacity(design.thickness_m, design.porosity) <= band[1]


def menu(args: argparse.Namespace) -> None:
    from multiprocessing import get_context

    started = time.perf_counter()
    records = _records("train", args.tasks, args.set, args.workers)
    identities = [record["reward_model"]["ground_truth"] for record in records]
    if args.identities:
        Path(args.identities).write_text(json.dumps(identities))
    designs = latin_hypercube(args.designs, args.seed, 3 if args.capacity_aware else 4)
    print(f"{len(identities)} train tasks generated in {time.perf_counter() - started:.0f} s", flush=True)
    matrix_path = Path(args.matrix) if args.matrix else None
    cached = json.loads(matrix_path.read_text()) if matrix_path and matrix_path.exists() else {}
    keys = [json.dumps([identity["conditions"], identity["bounds"], args.designs, args.seed]
                       + ([identity["targets"]["areal_capacity_mAh_cm2"]] if args.capacity_aware else []),
                       sort_keys=True)
            for identity in identities]
    levels = [record["extra_info"]["generator_name"] for record in records]
    todo = [] if args.cached_only else [(key, identity) for key, identity in zip(keys, identities) if key not in cached]
    if args.cached_only:  # the tasks whose matrix rows an earlier (perhaps interrupted) run kept
        kept = [index for index, key in enumerate(keys) if key in cached]
        identities, keys = [identities[index] for index in kept], [keys[index] for index in kept]
        levels = [levels[index] for index in kept]
    started = time.perf_counter()
    with get_context("fork").Pool(args.workers) as pool:
        for done, (key, rows) in enumerate(zip((key for key, _ in todo),
                                               pool.imap(_results, [(identity, designs) for _, identity in todo])), 1):
            cached[key] = rows
            if matrix_path:
                matrix_path.write_text(json.dumps(cached))
            print(f"  task {done}/{len(todo)}: {time.perf_counter() - started:.0f} s", flush=True)
    solves = len(todo) * len(designs)
    print(f"{solves} solves in {time.perf_counter() - started:.0f} s", flush=True)

    covers = [{task for task, (key, identity) in enumerate(zip(keys, identities))
               if meets(cached[key][index], identity, designs[index])}
              for index in range(len(designs))]
    chosen: list[int] = []
    covered: set[int] = set()
    for _ in range(args.size):
        # most tasks not yet covered; ties (and nothing left to cover): most tasks in all, then the earlier design
        best = max((index for index in range(len(designs)) if index not in chosen),
                   key=lambda index: (len(covers[index] - covered), len(covers[index]), -index))
        chosen.append(best)
        covered |= covers[best]
    print(f"best constant design meets {len(covers[chosen[0]])}/{len(identities)} train tasks; "
          f"the menu of {args.size} covers {len(covered)}/{len(identities)}")
    for level in dict.fromkeys(levels):
        tasks = {task for task, name in enumerate(levels) if name == level}
        print(f"  {level}: constant {len(covers[chosen[0]] & tasks)}/{len(tasks)}, "
              f"menu {len(covered & tasks)}/{len(tasks)}")
    print(("CAPACITY_MENU" if args.capacity_aware else "MENU") + " = (")
    for index in chosen:
        print(f"    {tuple(designs[index])!r},")
    print(")")


def table(args: argparse.Namespace) -> None:
    shortcuts = _shortcuts()

    from bootcamp_core.testing import play_episodes, registry_of, scripted_policy

    registry = registry_of("battery_design")
    records = _records("test", len(shortcuts.LEVELS) * args.per_level)
    by_level = {level: [record for record in records if record["extra_info"]["generator_name"] == level]
                for level in shortcuts.LEVELS}
    rows = []
    for name, turn in shortcuts.POLICIES.items():
        cells = []
        for level in shortcuts.LEVELS:
            started = time.perf_counter()
            results = play_episodes(by_level[level], registry, policy=scripted_policy(turn), limits=shortcuts.LIMITS)
            mean = sum(result.score for result in results) / len(results)
            solved = sum(result.solved for result in results) / len(results)
            calls = sum(result.turn_record["tool_calls"] for result in results) / len(results)
            cells.append(f"{mean:.2f} / {solved:.0%} ({calls:.1f} calls)")
            print(f"{name} {level}: mean {mean:.2f}, solved {solved:.0%}, {calls:.1f} calls per task, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{args.per_level} test-split tasks per level; mean score / solved share (simulator calls per task)\n")
    print("| policy | " + " | ".join(shortcuts.LEVELS) + " |")
    print("|---|" + "---|" * len(shortcuts.LEVELS))
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    chooser = commands.add_parser("menu", help="choose the best fixed menu by greedy set cover")
    chooser.add_argument("--designs", type=int, default=256)
    chooser.add_argument("--tasks", type=int, default=40)
    chooser.add_argument("--size", type=int, default=8)
    chooser.add_argument("--seed", type=int, default=2026)
    chooser.add_argument("--workers", type=int, default=2)
    chooser.add_argument("--matrix", default="", help="JSON file keeping the simulated matrix between runs")
    chooser.add_argument("--identities", default="", help="JSON file to write the train tasks' identities to")
    chooser.add_argument("--cached-only", action="store_true", help="cover only the tasks the matrix file holds")
    chooser.add_argument("--capacity-aware", action="store_true",
                         help="choose the capacity-aware menu: points of (porosity, negative porosity, N/P ratio), "
                              "each at the thickness that gives the centre of the task's capacity band")
    chooser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                         help="generator config for every level (VALUE as JSON), to try a target rule")
    scorer = commands.add_parser("table", help="every policy of the shortcut tests, per default level")
    scorer.add_argument("--per-level", type=int, default=20)
    args = parser.parse_args()
    {"menu": menu, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
