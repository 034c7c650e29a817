"""Financial-prediction shortcuts against the reference analyst: mean score and solved share per default level.

Every policy plays the same test-split tasks of the default config through ``run_episode``: the reference analyst
(handed the identity without its hidden fields) and the four shortcut forecasters of
``bootcamp_financial_prediction.baselines`` (midpoint of every guided range, top of every range, last year rolled
forward, consistent zero growth). "Solved" is the reward's ``solved_threshold``. Prints a Markdown table per level,
as the bootcamp's README shows it.

Run: ``python bench/bench_finance_shortcuts.py`` (``--tasks N``, default 400; ``--seed``). Never part of the test
suite. Needs bootcamp-financial-prediction installed beside bootcamp-core.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400, help="test-split records of the default config")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    from bootcamp_core.testing import generate_records, play_episodes, registry_of, scripted_policy
    from bootcamp_financial_prediction.agent import DriverModelAnalyst
    from bootcamp_financial_prediction.answer import format_answer
    from bootcamp_financial_prediction.baselines import SHORTCUTS, shortcut_forecast
    from bootcamp_financial_prediction.generator import ForecastGenerator, read_prompt_data
    from bootcamp_financial_prediction.reward import ForecastReward

    registry = registry_of("financial_prediction")
    records = generate_records("financial_prediction", registry,
                               overrides={"split_samples": f"test:{args.tasks}", "seed": args.seed})
    agent = DriverModelAnalyst()

    async def reference(messages, tools, record, rng) -> dict:
        public = {key: value for key, value in record.identity.items() if key not in ForecastGenerator.hidden_fields}
        return await agent.act(messages, tools, public, rng)

    def shortcut(name: str):
        async def play(messages, tools, record, rng) -> dict:
            public = read_prompt_data(messages[0]["content"])
            return {"role": "assistant", "content": format_answer(shortcut_forecast(name, public))}
        return play

    policies = {"reference analyst": reference, **{name: shortcut(name) for name in SHORTCUTS}}
    table: dict[str, dict[str, tuple[float, float, int]]] = {}
    start = time.perf_counter()
    for name, turn in policies.items():
        results = play_episodes(records, registry, policy=scripted_policy(turn))
        levels: dict[str, list[float]] = {}
        for result in results:
            levels.setdefault(result.generator_name, []).append(result.score)
        for level, scores in levels.items():
            solved = sum(score >= ForecastReward.solved_threshold - 1e-9 for score in scores) / len(scores)
            table.setdefault(level, {})[name] = (statistics.mean(scores), solved, len(scores))
    elapsed = time.perf_counter() - start
    print(f"{len(records)} test tasks (seed {args.seed}), {len(policies)} policies, {elapsed:.1f} s\n")
    for level, rows in table.items():
        count = next(iter(rows.values()))[2]
        print(f"**{level}** ({count} tasks)\n")
        print("| policy | mean score | solved |")
        print("|---|---:|---:|")
        for name, (mean, solved, _) in rows.items():
            print(f"| {name} | {mean:.3f} | {solved:.0%} |")
        print()


if __name__ == "__main__":
    main()
