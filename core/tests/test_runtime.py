"""How `bootcamp eval` sets up its process: the episodes run on uvloop (the standard library's loop on request), and
the garbage collector leaves alone what was alive before them, which goes back to it when the run ends."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path

import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.episode.policies import ReferencePolicy
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.run import evaluate, run_evaluation
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.plugin.runtime import EVENT_LOOP_ENV, event_loop_options, frozen_heap

pytestmark = pytest.mark.usefixtures("only_example")


class Watching:
    """The reference agents, noting for every turn the event loop it ran on and how many objects were frozen."""

    def __init__(self, registry) -> None:
        self.agents = ReferencePolicy(registry)
        self.seen: list[tuple[str, int]] = []

    async def __call__(self, messages, tools, record, rng):
        self.seen.append((type(asyncio.get_running_loop()).__module__, gc.get_freeze_count()))
        return await self.agents(messages, tools, record, rng)

    async def aclose(self) -> None:
        """Nothing to close."""


def dataset(registry, folder: Path, count: int = 6) -> Path:
    config = config_for_bootcamp("example", registry, {"split_samples": {"test": count}}, name="example")
    generate(config, folder, registry=registry)
    return folder / "example_test.jsonl"


def scores(out: Path) -> list[float]:
    return [json.loads(line)["score"] for line in (out / "results.jsonl").read_text().splitlines()]


def test_episodes_run_on_uvloop_in_a_frozen_heap_given_back_at_the_end(example_registry, tmp_path):
    pytest.importorskip("uvloop", reason="bootcamp-core installs uvloop except on Windows")
    data = dataset(example_registry, tmp_path / "data")
    policy = Watching(example_registry)
    assert gc.get_freeze_count() == 0
    summary = run_evaluation(EvalConfig(dataset_path=data, output_dir=tmp_path / "out", max_concurrent=3),
                             registry=example_registry, policy=policy, progress=False)
    assert summary["overall"]["count"] == 6 and scores(tmp_path / "out") == [1.0] * 6
    assert len(policy.seen) >= 6
    assert {module for module, _ in policy.seen} == {"uvloop"}
    # the modules, the registry and the policy: far more than the episodes themselves ever hold at once
    assert min(frozen for _, frozen in policy.seen) > 10_000
    assert gc.get_freeze_count() == 0  # nothing stays out of the collector's reach after the run


def test_the_standard_loop_on_request_and_a_wrong_choice_named(example_registry, tmp_path, monkeypatch, capsys):
    data = dataset(example_registry, tmp_path / "data", 3)
    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")
    assert event_loop_options() == {}
    policy = Watching(example_registry)
    run_evaluation(EvalConfig(dataset_path=data, output_dir=tmp_path / "std"), registry=example_registry,
                   policy=policy, progress=False)
    assert scores(tmp_path / "std") == [1.0] * 3
    assert {module.split(".")[0] for module, _ in policy.seen} == {"asyncio"}
    monkeypatch.setenv(EVENT_LOOP_ENV, "tokio")
    with pytest.raises(ConfigError, match=f"{EVENT_LOOP_ENV} must be uvloop or asyncio, not 'tokio'"):
        event_loop_options()
    code = main(["eval", "--dataset-path", str(data), "--output-dir", str(tmp_path / "bad"), "--policy", "reference"])
    err = capsys.readouterr().err
    assert code != 0 and f"{EVENT_LOOP_ENV} must be uvloop or asyncio" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad" / "results.jsonl").exists()


def test_evaluate_in_a_loop_of_the_callers_freezes_the_heap_too(example_registry, tmp_path):
    data = dataset(example_registry, tmp_path / "data", 3)
    policy = Watching(example_registry)

    async def run() -> dict:
        return await evaluate(EvalConfig(dataset_path=data, output_dir=tmp_path / "out"), registry=example_registry,
                              policy=policy, progress=False)

    asyncio.run(run())
    assert {module.split(".")[0] for module, _ in policy.seen} == {"asyncio"}  # the caller's loop, untouched
    assert min(frozen for _, frozen in policy.seen) > 10_000 and gc.get_freeze_count() == 0


def test_frozen_heaps_nest_and_the_outermost_gives_the_objects_back_even_on_error():
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError, match="inner"), frozen_heap():
        assert gc.get_freeze_count() > 10_000
        with frozen_heap():
            assert gc.get_freeze_count() > 10_000
        assert gc.get_freeze_count() > 10_000  # the inner block's end gives nothing back
        with frozen_heap():
            raise RuntimeError("inner")
    assert gc.get_freeze_count() == 0
