"""The reference agent through the real rollout engine: its mean score on the default tasks, its use of the
consistency tool, and that it reads only the conversation."""

from __future__ import annotations

import asyncio
import json
import random
import statistics

import pytest

from bootcamp_core import EpisodeResult, Registry
from bootcamp_core.testing import (
    evaluate_with_reference,
    generate_dataset,
    generate_records,
    play_episodes,
    scripted_policy,
)
from bootcamp_financial_prediction.agent import DriverModelAnalyst
from bootcamp_financial_prediction.answer import format_answer, parse_answer
from bootcamp_financial_prediction.generator import read_prompt_data

#: Records of the default config's test split (seed 42) that the mean score is measured on.
EPISODES = 60


@pytest.fixture(scope="module")
def records(registry: Registry) -> list[dict]:
    return generate_records("financial_prediction", registry, overrides={"split_samples": f"test:{EPISODES}"})


@pytest.fixture(scope="module")
def episodes(records: list[dict], registry: Registry) -> list[EpisodeResult]:
    return play_episodes(records, registry)


def test_mean_score_on_the_default_tasks_is_at_least_0_7(episodes: list[EpisodeResult]) -> None:
    scores = [result.score for result in episodes]
    assert len(scores) == EPISODES
    assert statistics.mean(scores) >= 0.7
    by_level: dict[str, list[float]] = {}
    for result in episodes:
        by_level.setdefault(result.generator_name, []).append(result.score)
    assert set(by_level) == {"full_guidance", "standard", "sparse_guidance"}
    assert all(statistics.mean(values) >= 0.7 for values in by_level.values()), by_level
    assert min(scores) > 0.4  # never a closed gate or a broken answer


def test_checks_consistency_once_then_answers(episodes: list[EpisodeResult]) -> None:
    for result in episodes:
        assert (result.success, result.error_type, result.finish_reason) == (True, None, "terminated")
        assert [call.name for call in result.tool_calls] == ["check_consistency"]
        report = json.loads(result.tool_calls[0].output)
        assert report["consistent"] is True and report["policy_and_outlook_breaches"] == []
        final = result.messages[-1]
        assert final["role"] == "assistant" and "all identities and policies hold" in final["content"]
        parsed = parse_answer(final["content"])
        assert parsed is not None and parsed.complete
        assert result.turn_record["assistant_turns"] == 2


def test_copying_the_last_visible_year_scores_clearly_below(
    records: list[dict], registry: Registry, episodes: list[EpisodeResult]
) -> None:
    async def copy_last_year(messages, tools, record, rng) -> dict:
        data = read_prompt_data(messages[0]["content"])
        return {"role": "assistant", "content": format_answer(data["statements"][-1])}

    copied = play_episodes(records, registry, policy=scripted_policy(copy_last_year))
    assert all(result.finish_reason == "terminated" for result in copied)
    assert statistics.mean(result.score for result in copied) == 0.0
    assert statistics.mean(result.score for result in episodes) > 0.7


def test_reads_only_the_conversation(records: list[dict]) -> None:
    record = records[0]
    identity = record["reward_model"]["ground_truth"]
    messages = list(record["prompt"])
    tools = [{"type": "function", "function": {"name": "check_consistency"}}]
    agent = DriverModelAnalyst()

    def act(identity_given: dict) -> dict:
        return asyncio.run(agent.act(list(messages), tools, identity_given, random.Random(0)))

    first = act(identity)
    assert first == act({}) == act({"hidden": {"statements": {"revenue": 1}}})
    assert first["tool_calls"][0]["function"]["name"] == "check_consistency"
    # without the tool on offer it answers at once, with the same forecast
    answer = asyncio.run(agent.act(list(messages), [], {}, random.Random(0)))
    sent = json.loads(first["tool_calls"][0]["function"]["arguments"])["statements"]
    assert parse_answer(answer["content"]).values == {key: float(value) for key, value in sent.items()}


def test_a_prompt_without_figures_gives_no_answer(registry: Registry) -> None:
    message = asyncio.run(DriverModelAnalyst().act([{"role": "user", "content": "Forecast!"}], [], {}, random.Random(0)))
    reward = registry.component("reward", "financial_prediction/forecast")
    assert reward.extract_output(message["content"]) is None


@pytest.mark.slow
def test_evaluation_of_the_default_config_end_to_end(registry: Registry, tmp_path) -> None:
    dataset = generate_dataset("financial_prediction", tmp_path / "data", registry,
                               overrides={"split_samples": "test:300"})[0]
    summary = evaluate_with_reference(dataset, tmp_path / "eval", registry, max_concurrent=16, overwrite=True)
    overall = summary["overall"]
    assert (overall["count"], overall["successes"], overall["infrastructure_errors"]) == (300, 300, 0)
    assert overall["mean_score"] >= 0.7 and overall["finish_reasons"] == {"terminated": 300}
    by_level: dict[str, list[float]] = {}
    with open(summary["results_path"], encoding="utf-8") as results:
        for line in results:
            result = json.loads(line)
            by_level.setdefault(result["generator_name"], []).append(result["score"])
    assert {level: len(scores) for level, scores in by_level.items()} == {
        "full_guidance": 75, "standard": 150, "sparse_guidance": 75
    }
    assert all(statistics.mean(scores) >= 0.7 for scores in by_level.values())


def test_the_analyst_never_uses_the_simulator() -> None:
    # it forecasts from what the prompt shows: no import of the simulator or the generator's internals
    import ast
    import inspect

    from bootcamp_financial_prediction import agent, forecast

    for module in (agent, forecast):
        tree = ast.parse(inspect.getsource(module))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "bootcamp_financial_prediction.simulator" not in imported, module.__name__
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert not names & {"next_year", "draw_company", "predictability", "scenario_drivers"}, module.__name__
