"""Financial-prediction benchmark: tasks generated/s, rewards scored/s, reference episodes/s.

Every number is printed next to a baseline measured in the same run:

(a) tasks/s of ``financial_prediction/forecast`` (identity and prompt), whose predictability scales simulate the
    hidden year under 256 driver scenarios in one vectorised pass, next to the same generator with the scenarios run
    one at a time through the scalar simulator (the obvious way to write it). Both give the same scales, which the
    run checks; the ratio is the vectorisation's speed-up;
(b) rewards scored/s of the forecast reward on reference answers (parse, identities, outlook, 21 item scores) next
    to a floor that only parses the answer's JSON block and checks the 21 keys: the ratio is what the accounting
    checks and scoring cost on top of reading the answer;
(c) informational: records/s written to JSONL through ``bootcamp_core.data.generate`` and reference-agent episodes/s
    through ``run_episode`` (generation, two tool calls' worth of work, interaction and reward per episode).

Run: ``python bench/bench_financial_prediction.py`` (``--quick`` for a smaller run). Never part of the test suite.
Needs bootcamp-financial-prediction installed beside bootcamp-core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path


def rate(function, count: int, repeats: int = 3) -> float:
    """Best items/s of ``repeats`` runs of ``function()``, which handles ``count`` items."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return count / best


def scalar_predictability(company, seed: int, count: int) -> dict[str, float]:
    """The baseline: the same scenarios, each run alone through the scalar simulator."""
    import numpy as np

    from bootcamp_financial_prediction.items import ITEM_KEYS
    from bootcamp_financial_prediction.simulator import next_year, scale_floor, scenario_drivers, spread

    drivers = scenario_drivers(company, seed, count)
    last_visible = company.years[-2]
    columns = []
    for index in range(count):
        one = {key: values[index].item() for key, values in drivers.items()}
        year = next_year(last_visible, one, company.policies)
        columns.append([year[key] for key in ITEM_KEYS])
    values = np.asarray(columns, dtype=float).T
    return dict(zip(ITEM_KEYS, spread(values, scale_floor(last_visible))))


def generation(count: int) -> None:
    from bootcamp_financial_prediction import generator as module
    from bootcamp_financial_prediction.generator import ForecastGenerator

    task = ForecastGenerator()

    def make(seeds: range) -> list[tuple[dict, str]]:
        made = []
        for seed in seeds:
            rng = random.Random(seed)
            identity = task.case_generator(rng)
            made.append((identity, task.prompt_func(identity, rng)))
        return made

    ours = make(range(count))
    vectorised = rate(lambda: make(range(count)), count)
    original = module.predictability
    module.predictability = scalar_predictability
    try:
        baseline_tasks = make(range(count))
        looped = rate(lambda: make(range(count)), count)
    finally:
        module.predictability = original
    same = json.dumps(ours) == json.dumps(baseline_tasks)
    print(f"(a) tasks/s: vectorised scenarios {vectorised:,.0f}, scenario-by-scenario baseline {looped:,.0f}, "
          f"ratio {vectorised / looped:.1f}x (identical tasks: {same})")
    if not same:
        raise SystemExit("the two ways of computing the predictability scales disagree")


def scoring(count: int) -> None:
    from bootcamp_core.answers import last_fenced_block
    from bootcamp_financial_prediction.answer import format_answer
    from bootcamp_financial_prediction.forecast import forecast_statements
    from bootcamp_financial_prediction.generator import ForecastGenerator
    from bootcamp_financial_prediction.items import ITEM_KEYS
    from bootcamp_financial_prediction.outlook import public_view
    from bootcamp_financial_prediction.reward import ForecastReward

    task = ForecastGenerator()
    identities = [task.case_generator(random.Random(seed)) for seed in range(200)]
    answers = [format_answer(forecast_statements(public_view(identity))) for identity in identities]
    pairs = [(answers[index % 200], identities[index % 200]) for index in range(count)]
    reward = ForecastReward()

    def score_all() -> None:
        for answer, identity in pairs:
            reward.verify_score(answer, identity)

    def parse_only() -> None:
        for answer, _ in pairs:
            data = json.loads(last_fenced_block(answer, "json"))
            all(key in data for key in ITEM_KEYS)

    scores = [reward.verify_score(answer, identity) for answer, identity in pairs[:200]]
    full, floor = rate(score_all, count), rate(parse_only, count)
    print(f"(b) rewards/s: full score {full:,.0f}, parse-only floor {floor:,.0f}, "
          f"ratio {full / floor:.2f} (mean reference score {sum(scores) / len(scores):.3f})")


def end_to_end(count: int) -> None:
    import anyio

    from bootcamp_core.data.generate import config_for_bootcamp, generate, iter_records
    from bootcamp_core.episode.engine import run_episode
    from bootcamp_core.episode.policies import ReferencePolicy
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    config = config_for_bootcamp("financial_prediction", registry, overrides={"split_samples": f"test:{count}"})
    with tempfile.TemporaryDirectory(prefix="bootcamp-bench-") as folder:
        start = time.perf_counter()
        generate(config, Path(folder), registry=registry)
        written = count / (time.perf_counter() - start)
    records = list(iter_records(config, "test", registry))
    policy = ReferencePolicy(registry)

    async def play() -> list:
        return [await run_episode(record, policy, registry=registry) for record in records]

    start = time.perf_counter()
    results = anyio.run(play)
    episodes = count / (time.perf_counter() - start)
    mean = sum(result.score for result in results) / count
    print(f"(c) records/s to JSONL {written:,.0f}; reference episodes/s {episodes:,.0f} "
          f"(mean score {mean:.3f} over {count} default tasks)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=400, help="tasks per generation run")
    parser.add_argument("--rewards", type=int, default=5000, help="answers per scoring run")
    parser.add_argument("--episodes", type=int, default=400, help="records for the end-to-end run")
    parser.add_argument("--quick", action="store_true", help="a small run (numbers are noisier)")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.rewards, args.episodes = 60, 1000, 100
    print(f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    generation(args.tasks)
    scoring(args.rewards)
    end_to_end(args.episodes)


if __name__ == "__main__":
    main()
