"""The generators come from reasoning-gym's registry, and the exclusion list is exact."""

from __future__ import annotations

import inspect
import random
import re

import numpy as np
import pytest
from bootcamp_reasoning_gym import datasets
from bootcamp_reasoning_gym.answer import format_answer

VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
EVALUATES = re.compile(r"(?<!literal_)eval\(|parse_expr|sympify")


def reason_of(name):
    return datasets.EXCLUDED.get(name)


def test_every_registered_dataset_is_a_generator_or_excluded(registry):
    names = set(datasets.registry())
    assert set(datasets.EXCLUDED) <= names
    expected = {f"reasoning_gym/{name}" for name in names - set(datasets.EXCLUDED)}
    assert set(registry.ids("generator", "reasoning_gym")) == expected
    assert all(VALID_ID.fullmatch(name) for name in names)


def test_verifiers_that_evaluate_model_text_are_exactly_the_sandboxed_ones():
    evaluating = {name for name, (cls, _) in datasets.registry().items()
                  if EVALUATES.search(inspect.getsource(cls.score_answer))}
    assert evaluating == set(datasets.SANDBOXED)
    assert not set(datasets.SANDBOXED) & set(datasets.EXCLUDED)
    assert {name for name in datasets.registry() if datasets.evaluates_model_text(name)} == evaluating


@pytest.mark.parametrize("name", sorted(n for n, r in datasets.EXCLUDED.items() if r == datasets._OWN_ANSWER))
def test_excluded_for_their_own_answer_do_not_score_it(name):
    dataset = datasets._factory().create_dataset(name, seed=0, size=10)
    scores = []
    for index in range(3):
        entry = datasets.normalise(dataset[index])
        scores.append(dataset.score_answer(entry["answer"], entry))
    assert min(scores) < 1.0


def test_excluded_for_global_random_state_use_it():
    factory = datasets._factory()
    first = factory.create_dataset("list_functions", seed=0, size=10)
    second = factory.create_dataset("list_functions", seed=0, size=10)
    assert [first[i] for i in range(3)] != [second[i] for i in range(3)]
    pool = factory.create_dataset("pool_matrix", seed=0, size=10)
    state = np.random.get_state()[1].copy()
    pool[0]
    assert (np.random.get_state()[1] != state).any()
    assert reason_of("list_functions") == reason_of("pool_matrix") == datasets._GLOBAL_RNG


def test_codeio_runs_code_samples_that_use_the_global_random_module():
    import gzip
    import json

    from reasoning_gym.code import codeio

    dataset = datasets._factory().create_dataset("codeio", seed=0, size=10)
    with gzip.open(dataset._data_path, "rt", encoding="utf-8") as lines:
        samples = [json.loads(line) for line in lines]
    global_random = re.compile(r"\brandom\.(?:rand|choice|shuffle|sample|uniform|gauss)")
    assert sum(bool(global_random.search(s["code_sample"] + s["input_generator"])) for s in samples) > 100
    assert "exec(" in inspect.getsource(codeio.CodeIODataset._generate_io_pair)
    assert "global random" in reason_of("codeio")


def test_word_ladder_cannot_be_built_at_the_size_entries_are_drawn_from():
    with pytest.raises(ValueError):
        datasets._factory().create_dataset("word_ladder", seed=0, size=datasets.SIZE)
    with pytest.raises(AssertionError):
        datasets._factory().create_dataset("composite", seed=0, size=10)
    assert "acre" in datasets.registry() and reason_of("acre")


@pytest.fixture(scope="module")
def played(registry):
    """Two records of every generator, each drawn twice, with the reference agent's answer and its score."""
    import asyncio

    reward = registry.component("reward", "reasoning_gym")
    agent = registry.component("reference_agent", "reasoning_gym/entry_answer")
    results = {}
    for name in datasets.dataset_names():
        generator = registry.component("generator", f"reasoning_gym/{name}", {})
        state = np.random.get_state()[1].copy()
        rows = []
        for seed in (0, 1):
            identity = generator.case_generator(random.Random(seed))
            again = generator.case_generator(random.Random(seed))
            prompt = generator.prompt_func(identity, random.Random(seed))
            message = asyncio.run(agent.act([{"role": "user", "content": prompt}], [], identity, random.Random(0)))
            rows.append((identity, again, message["content"], reward.verify_score(message["content"], identity)))
        results[name] = (rows, bool((np.random.get_state()[1] != state).any()))
    return results


def test_reference_agent_solves_two_records_of_every_generator(played):
    failed = {name: [row[3] for row in rows] for name, (rows, _) in played.items() if any(row[3] < 1.0 for row in rows)}
    assert failed == {}
    assert len(played) == len(datasets.registry()) - len(datasets.EXCLUDED)


def test_records_are_pure_and_leave_the_global_generators_alone(played):
    assert [name for name, (rows, _) in played.items() if any(row[0] != row[1] for row in rows)] == []
    assert [name for name, (_, touched) in played.items() if touched] == []


def test_reward_agrees_with_reasoning_gym_on_right_wrong_and_empty_answers(registry, played):
    reward = registry.component("reward", "reasoning_gym")
    for name in datasets.dataset_names()[::4]:
        identity = played[name][0][0][0]
        dataset = datasets.build(name, {})
        entry = identity["entry"]
        for answer in (str(entry["answer"]), "definitely wrong 0", ""):
            ours = reward.verify_score(format_answer(answer), identity)
            expected = float(dataset.score_answer(answer.strip(), entry) or 0.0)
            assert ours == pytest.approx(min(1.0, max(0.0, expected))), (name, answer)
        assert reward.verify_score("no box here", identity) == 0.0
