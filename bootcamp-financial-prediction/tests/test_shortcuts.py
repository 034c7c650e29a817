"""Shortcuts that skip the analysis score far below the reference analyst on the default tasks.

Every policy plays the same generated test-split tasks of the default config through the real rollout engine:
the four shortcut forecasters of :mod:`bootcamp_financial_prediction.baselines` (consistent statements that follow
every policy and announcement, with drivers chosen without reading the history or the guidance track record) and
the reference analyst, handed the identity without its hidden fields so it cannot read the answer.
"""

from __future__ import annotations

import statistics

import pytest

from bootcamp_core import EpisodeResult, Registry
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy
from bootcamp_financial_prediction.agent import DriverModelAnalyst
from bootcamp_financial_prediction.answer import format_answer
from bootcamp_financial_prediction.baselines import SHORTCUTS, shortcut_forecast
from bootcamp_financial_prediction.generator import ForecastGenerator, read_prompt_data

#: Test-split records of the default config (levels weighted 1:2:1, so at least 25 per level).
TASKS = 100
LEVELS = ("full_guidance", "standard", "sparse_guidance")
#: The reference's mean score per level must reach this; every shortcut must stay at or below this share of it.
REFERENCE_FLOOR = 0.7
SHORTCUT_SHARE = 0.5


@pytest.fixture(scope="module")
def records(registry: Registry) -> list[dict]:
    return generate_records("financial_prediction", registry, overrides={"split_samples": f"test:{TASKS}"})


def _by_level(results: list[EpisodeResult]) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for result in results:
        scores.setdefault(result.generator_name, []).append(result.score)
    return {level: statistics.mean(values) for level, values in scores.items()}


@pytest.fixture(scope="module")
def reference(records: list[dict], registry: Registry) -> dict[str, float]:
    agent = DriverModelAnalyst()

    async def blind(messages, tools, record, rng) -> dict:
        public = {key: value for key, value in record.identity.items() if key not in ForecastGenerator.hidden_fields}
        return await agent.act(messages, tools, public, rng)

    results = play_episodes(records, registry, policy=scripted_policy(blind))
    assert all(result.success and result.finish_reason == "terminated" for result in results)
    return _by_level(results)


def test_there_are_at_least_20_tasks_per_default_level(records: list[dict]) -> None:
    counts = {level: sum(record["extra_info"]["generator_name"] == level for record in records) for level in LEVELS}
    assert min(counts.values()) >= 20, counts


def test_the_reference_analyst_reaches_its_floor_without_the_hidden_fields(reference: dict[str, float]) -> None:
    assert set(reference) == set(LEVELS)
    assert all(score >= REFERENCE_FLOOR for score in reference.values()), reference


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_a_shortcut_scores_at_most_half_the_reference(
    name: str, records: list[dict], registry: Registry, reference: dict[str, float]
) -> None:
    async def shortcut(messages, tools, record, rng) -> dict:
        public = read_prompt_data(messages[0]["content"])
        return {"role": "assistant", "content": format_answer(shortcut_forecast(name, public))}

    results = play_episodes(records, registry, policy=scripted_policy(shortcut))
    assert all(result.success and result.finish_reason == "terminated" for result in results)
    scores = _by_level(results)
    assert set(scores) == set(LEVELS)
    for level in LEVELS:
        assert scores[level] <= SHORTCUT_SHARE * reference[level], (name, level, scores, reference)
