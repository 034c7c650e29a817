"""bootcamp-bot-trajectory shortcut table: the reference agent and every shortcut policy on each default level.

Plays the policies of ``bootcamp-bot-trajectory/tests/test_shortcuts.py`` (the reference agent without the
identity's hidden fields, the obstacle-blind retry planner, the start-goal teleport, the goal-only answer) through
``run_episode`` on generated test-split tasks of every default level, and prints one Markdown table per level: mean
score and solved share of each policy, as in the bootcamp's README.

Run: ``python bench/bench_bot_shortcuts.py`` (``--tasks N`` per level, default 20). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

SHORTCUTS = Path(__file__).resolve().parents[1] / "bootcamp-bot-trajectory" / "tests" / "test_shortcuts.py"


def load_policies():
    spec = importlib.util.spec_from_file_location("bot_trajectory_shortcuts", SHORTCUTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="tasks per default level")
    args = parser.parse_args()

    from bootcamp_core.testing import play_episodes, scripted_policy

    shortcuts = load_policies()
    order = ["reference", "blind_retry", "teleport", "goal_only"]
    for level in shortcuts.LEVELS:
        records = shortcuts.level_records(level, args.tasks)
        print(f"\n{level} ({len(records)} test-split tasks)\n")
        print("| policy | mean score | solved | seconds |")
        print("|---|---|---|---|")
        for name in order:
            began = time.perf_counter()
            results = play_episodes(records, policy=scripted_policy(shortcuts.POLICIES[name]))
            elapsed = time.perf_counter() - began
            mean = statistics.fmean(result.score for result in results)
            solved = sum(result.solved for result in results) / len(results)
            print(f"| {name} | {mean:.2f} | {solved:.0%} | {elapsed:.1f} |", flush=True)


if __name__ == "__main__":
    main()
