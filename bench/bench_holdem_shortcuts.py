"""Hold'em shortcuts: the reference agent and every trivial strategy on each default level, in the duplicate format.

Each default level's first ``--tasks`` test-split tasks are played through ``run_episode`` with every deal played
from both seats (``mirror_seats``) by the reference agent (given the identity without its hidden fields) and by
always fold/check, always call, always min-raise, always all-in and uniformly random legal moves. Printed per level
and policy: mean score with its 95% interval, the share solved (score above the reward's ``solved_threshold``) and
the mean chips won per hand in big blinds, as a Markdown table (the README's), then the time taken.

Run: ``python bench/bench_holdem_shortcuts.py`` (``--tasks 20``, the tests' number, by default).
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import time
from importlib import resources

import yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="tasks per default level (default 20)")
    args = parser.parse_args()

    from bootcamp_core import RolloutLimits
    from bootcamp_core.testing import generate_records, play_episodes, registry_of, scripted_policy
    from bootcamp_texas_holdem.agent import EquityPlayer
    from bootcamp_texas_holdem.game import MATCH_OVER
    from bootcamp_texas_holdem.generator import HeadsUpGenerator
    from bootcamp_texas_holdem.reward import ChipsReward
    from bootcamp_texas_holdem.shortcuts import SHORTCUTS, shortcut_turn

    registry = registry_of("texas_holdem")
    default = yaml.safe_load((resources.files("bootcamp_texas_holdem") / "configs" / "default.yaml").read_text())

    async def reference(messages, tools, record, rng):
        visible = {key: value for key, value in record.identity.items() if key not in HeadsUpGenerator.hidden_fields}
        return await EquityPlayer().act(messages, tools, visible, rng)

    policies = {"reference": reference} | {name: shortcut_turn(name) for name in SHORTCUTS}
    limits = RolloutLimits(**HeadsUpGenerator.limits)
    started = time.perf_counter()
    print("| level | policy | mean score (95% interval) | solved | bb / hand |")
    print("|---|---|---|---|---|")
    for level, group in default["instruction_generators"].items():
        config = {**group, "config": {**group["config"], "mirror_seats": True}}
        data = {"instruction_generators": {level: config}, "global_config": default["global_config"]}
        records = generate_records("texas_holdem", registry, instruction_config=data,
                                   overrides={"split_samples": {"test": args.tasks}})
        for name, turn in policies.items():
            results = play_episodes(records, registry, policy=scripted_policy(turn), limits=limits)
            scores = [result.score for result in results]
            mean = statistics.fmean(scores)
            half = 1.96 * statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else float("nan")
            solved = sum(score >= ChipsReward.solved_threshold - 1e-9 for score in scores) / len(scores)
            per_hand = []
            for result in results:
                final = next(line for message in reversed(result.messages) if message["role"] == "tool"
                             for line in message["content"].splitlines() if line.startswith(MATCH_OVER + ":"))
                found = re.search(r"\(([-+0-9.e]+) big blinds\)", final)
                per_hand.append(float(found.group(1)) / result.ground_truth["hands"])
            print(f"| {level} | {name} | {mean:.3f} ({mean - half:.3f}-{mean + half:.3f}) | {solved:.0%} | "
                  f"{statistics.fmean(per_hand):+.2f} |", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
