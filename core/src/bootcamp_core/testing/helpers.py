"""Test helpers: generate a bootcamp's records, play them through the real rollout engine and evaluator, and find
plugins installed during a test."""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bootcamp_core.data.records import EpisodeResult, GeneratedSample
from bootcamp_core.episode.engine import PolicyTurn, RolloutLimits
from bootcamp_core.plugin.loader import Registry, get_registry

#: An assistant turn written by a test: (messages, tools, record, rng) -> one OpenAI-format assistant message.
ScriptedTurn = Callable[[list, list, GeneratedSample, random.Random], Awaitable[dict]]


def _instruction_config(namespace: str, registry: Registry, overrides: dict | None,
                        instruction_config: dict | str | os.PathLike | None) -> Any:
    from bootcamp_core.data.config import load_instruction_config, parse_instruction_config
    from bootcamp_core.data.generate import config_for_bootcamp

    if instruction_config is None:
        return config_for_bootcamp(namespace, registry, overrides=overrides)
    if isinstance(instruction_config, dict):
        return parse_instruction_config(instruction_config, name=namespace, namespace=namespace, overrides=overrides)
    return load_instruction_config(instruction_config, overrides=overrides)


def generate_records(namespace: str, registry: Registry | None = None, *, split: str = "test",
                     overrides: dict | None = None,
                     instruction_config: dict | str | os.PathLike | None = None) -> list[dict]:
    """The records of one split of a bootcamp's default instruction config, or of ``instruction_config`` (its data,
    or a YAML file).

    ``overrides`` are those of ``bootcamp generate``, e.g. ``{"split_samples": "test:20", "seed": 7}``.
    """
    from bootcamp_core.data.generate import iter_records

    registry = registry or get_registry()
    config = _instruction_config(namespace, registry, overrides, instruction_config)
    return list(iter_records(config, split, registry))


def generate_dataset(namespace: str, output_dir: str | os.PathLike, registry: Registry | None = None, *,
                     overrides: dict | None = None,
                     instruction_config: dict | str | os.PathLike | None = None) -> list[Path]:
    """``bootcamp generate --bootcamp NAMESPACE`` (or of ``instruction_config``) into ``output_dir``: the files
    written, each split's JSONL then its Parquet."""
    from bootcamp_core.data.generate import generate

    registry = registry or get_registry()
    config = _instruction_config(namespace, registry, overrides, instruction_config)
    return [Path(path) for path in generate(config, output_dir, registry=registry).files]


def reset_registry() -> None:
    """Forget the plugins this process found, so the next ``get_registry()`` finds the entry points again (after a
    test put a distribution on ``sys.path``)."""
    from bootcamp_core.plugin.loader import reset_registry as forget

    forget()


def scripted_policy(turn: ScriptedTurn) -> Callable[..., Awaitable[PolicyTurn]]:
    """A rollout policy from an async function that returns the next assistant message."""

    async def policy(messages: list, tools: list, record: GeneratedSample, rng: random.Random) -> PolicyTurn:
        return PolicyTurn(message=await turn(messages, tools, record, rng))

    return policy


def play_episodes(records: Sequence[dict], registry: Registry | None = None, *, policy: Any = None,
                  limits: RolloutLimits | None = None, **run_kwargs: Any) -> list[EpisodeResult]:
    """One episode per record, in order, through ``run_episode``: with the reference agents unless ``policy`` is given.

    With the reference agents, a record whose generator no agent plays is a ``ConfigError`` before any episode runs.
    """
    import anyio

    from bootcamp_core.episode.engine import run_episode
    from bootcamp_core.episode.policies import ReferencePolicy

    registry = registry or get_registry()
    if policy is None:
        policy = ReferencePolicy(registry)
        policy.check(records)
    kwargs = {"limits": limits, **run_kwargs} if limits is not None else run_kwargs

    async def episodes() -> list[EpisodeResult]:
        return [await run_episode(record, policy, registry=registry, **kwargs) for record in records]

    return anyio.run(episodes)


def evaluate_with_reference(dataset: str | os.PathLike, output_dir: str | os.PathLike,
                            registry: Registry | None = None, **config: Any) -> dict:
    """``bootcamp eval --policy reference`` of a dataset: the summary (``summary["results_path"]``: the results file).

    ``config`` holds more evaluation settings, e.g. ``max_concurrent=16, overwrite=True``.
    """
    from bootcamp_core.evaluate.config import EvalConfig
    from bootcamp_core.evaluate.run import run_evaluation

    evaluation = EvalConfig(dataset_path=dataset, output_dir=output_dir, policy="reference", **config)
    return run_evaluation(evaluation, registry=registry or get_registry(), progress=False)


def eval_refuses_component_config(namespace: str, tmp_path: str | os.PathLike, option: str, bad: str, good: str,
                                  key: str, registry: Registry | None = None, records: int = 2) -> None:
    """``bootcamp eval --policy reference`` of ``records`` fresh records, in a subprocess, with a component config
    file (``option``: ``--tool-config`` or ``--interaction-config``): with the YAML ``bad`` it must stop at start-up
    (exit 1, exactly one ``error:`` line naming ``key``, no results written); with ``good`` it must play every
    episode. Raises AssertionError otherwise."""
    import json
    import subprocess
    import sys

    tmp_path = Path(tmp_path)
    registry = registry or get_registry()
    [dataset] = [path for path in generate_dataset(namespace, tmp_path / "data", registry,
                                                   overrides={"split_samples": f"test:{records}", "gen_parquet": False})
                 if path.suffix == ".jsonl"]
    env = {**os.environ, "BOOTCAMP_LOAD_PLUGINS": namespace, "BOOTCAMP_STRICT_PLUGINS": "1"}
    env.pop("OPENAI_API_KEY", None)

    def run(text: str, out: Path) -> subprocess.CompletedProcess:
        config = out.with_suffix(".yaml")
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text, encoding="utf-8")
        command = [sys.executable, "-m", "bootcamp_core.cli.main", "eval", "--policy", "reference", "--dataset-path",
                   str(dataset), "--output-dir", str(out), "--quiet", option, str(config)]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)

    failed = run(bad, tmp_path / "bad")
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert failed.returncode == 1, failed.stderr
    assert len(errors) == 1 and key in errors[0], failed.stderr
    assert not (tmp_path / "bad" / "results.jsonl").exists()
    passed = run(good, tmp_path / "good")
    assert passed.returncode == 0, passed.stderr
    lines = (tmp_path / "good" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == records and all(json.loads(line)["success"] for line in lines), lines
