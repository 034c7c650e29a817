"""The conformance kit: base test classes a bootcamp subclasses by setting a few attributes.

In a bootcamp's ``tests/test_conformance.py``::

    from bootcamp_core.testing import BootcampConformance

    class TestConformance(BootcampConformance):
        namespace = "my_task"

        def solution(self, identity):          # optional: a final answer that solves the task
            return f"The answer is {identity['answer']}"

``bootcamp check NAMESPACE`` runs the same class against any installed bootcamp without a test file. Needs the
``bootcamp-core[testing]`` extra (pytest, hypothesis, jsonschema).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import pickle
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import attrs

from bootcamp_core.data.config import InstructionConfig, parse_instruction_config
from bootcamp_core.plugin.loader import Registry

from bootcamp_core.testing.fixtures import (
    _GENERATE_IN_A_PROCESS,
    CALL_TIMEOUT_S,
    TOOL_NAME,
    _run,
    episode_kwargs,
    example_arguments,
)


class BootcampConformance:
    """Checks every component of one installed bootcamp against the plugin contract."""

    #: The bootcamp's namespace (its entry-point name). Required.
    namespace: ClassVar[str]
    #: Seeds used for the identities the checks run on.
    seeds: ClassVar[tuple[int, ...]] = (0, 1, 2)
    #: Records generated per split for the determinism checks.
    samples: ClassVar[int] = 12
    #: Unanswered turns an interaction may take before it must have ended the episode.
    interaction_turn_limit: ClassVar[int] = 20

    _registry: ClassVar[Registry | None] = None

    # ------------------------------------------------------------------------------------- overridable
    def solution(self, identity: dict) -> str | None:
        """A final assistant message that solves ``identity`` (None: the solved-path checks only run garbage)."""
        return None

    def tool_arguments(self, tool_name: str, identity: dict) -> dict | None:
        """Arguments for a valid call of ``tool_name`` (None: minimal arguments from its schema, errors allowed)."""
        return None

    def instruction_config(self, registry: Registry) -> InstructionConfig:
        """The config the checks generate from: the bootcamp's default, small and seeded."""
        from bootcamp_core.data.generate import default_config_for

        data, path = default_config_for(self.namespace, registry)
        return parse_instruction_config(
            data, path=path, name=self.namespace, namespace=self.namespace,
            overrides={"split_samples": {"train": self.samples, "test": max(2, self.samples // 4)},
                       "gen_parquet": False, "shuffle": False},
        )

    # ---------------------------------------------------------------------------------------- helpers
    @property
    def registry(self) -> Registry:
        cls = type(self)
        if cls._registry is None:
            cls._registry = Registry.from_entry_points()
        return cls._registry

    def plans(self):
        from bootcamp_core.data.generate import plan_groups

        return plan_groups(self.instruction_config(self.registry), self.registry)

    def ids(self, kind: str) -> list[str]:
        return [cid for cid in self.registry.ids(kind) if cid.split("/", 1)[0] == self.namespace]

    def cases(self) -> Iterator[tuple[Any, dict, Any]]:
        """(plan, identity, prompt) for every group and seed."""
        for plan in self.plans():
            generator = self.registry.component("generator", plan.generator, plan.config)
            for seed in self.seeds:
                rng = random.Random(seed)
                identity = generator.case_generator(rng)
                yield plan, identity, generator.prompt_func(identity, rng)

    # ------------------------------------------------------------------------------------------ checks
    def test_plugin_loads_and_registers_a_generator(self):
        info = self.registry.namespace_plugin(self.namespace)
        assert info.error is None, info.error
        assert self.ids("generator"), f'bootcamp "{self.namespace}" registers no generator'

    def test_generators_draw_only_from_the_rng_passed_in(self, monkeypatch):
        """DESIGN.md: generators draw only from the rng given; the global random module is never touched."""
        expected = list(self.cases())  # once freely first: libraries imported on first use may seed themselves
        before = random.getstate()

        def forbidden(*args, **kwargs):
            raise AssertionError("a generator used the global random module; draw from the rng passed in")

        for function in ("random", "randint", "randrange", "choice", "choices", "sample", "uniform", "gauss",
                         "getrandbits", "shuffle"):
            monkeypatch.setattr(random, function, forbidden)
        cases = list(self.cases())
        monkeypatch.undo()
        assert cases == expected and random.getstate() == before

    def test_generation_is_deterministic(self, tmp_path):
        from bootcamp_core.data.generate import generate

        config = self.instruction_config(self.registry)
        first = generate(config, tmp_path / "a", registry=self.registry)
        again = generate(config, tmp_path / "b", registry=self.registry)
        for left, right in zip(first.files, again.files, strict=True):
            assert left.read_bytes() == right.read_bytes(), f"{left.name}: same seed, different bytes"
        other = generate(attrs.evolve(config, seed=config.seed + 1), tmp_path / "c", registry=self.registry)
        assert any(
            left.read_bytes() != right.read_bytes() for left, right in zip(first.files, other.files, strict=True)
        ), "a different seed gave the same records"
        # other processes, other string hashes: set iteration order, id() or hash() must not leak into records
        payload = tmp_path / "config.pickle"
        payload.write_bytes(pickle.dumps(config))
        for hash_seed in ("1", "2"):
            folder = tmp_path / f"process-{hash_seed}"
            subprocess.run(
                [sys.executable, "-c", _GENERATE_IN_A_PROCESS, str(payload), str(folder)],
                env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True, timeout=600,
            )
            for path in first.files:
                assert (folder / path.name).read_bytes() == path.read_bytes(), (
                    f"{path.name}: another process (PYTHONHASHSEED={hash_seed}) gave different bytes for the same seed"
                )

    def test_identity_survives_a_json_round_trip(self):
        for plan, identity, _ in self.cases():
            assert isinstance(identity, dict), f"{plan.generator}: identity is {type(identity).__name__}, not a dict"
            text = json.dumps(identity, allow_nan=False)
            assert json.loads(text) == identity, f"{plan.generator}: identity changes through JSON (tuples? keys?)"

    def test_prompts_are_not_empty(self):
        for plan, _, prompt in self.cases():
            if isinstance(prompt, str):
                assert prompt.strip(), f"{plan.generator}: empty prompt"
            else:
                assert isinstance(prompt, list) and prompt, f"{plan.generator}: prompt must be a str or content parts"
                for part in prompt:
                    assert part.get("type") in {"text", "image_url"}, f"{plan.generator}: bad content part {part!r}"

    def test_tool_parameters_are_valid_json_schema(self):
        from jsonschema import Draft202012Validator

        for tool_id in self.ids("tool"):
            cls = self.registry.get_class("tool", tool_id)
            assert TOOL_NAME.match(cls.name), f"{tool_id}: tool name {cls.name!r} is not a valid function name"
            assert isinstance(getattr(cls, "description", None), str) and cls.description.strip(), (
                f"{tool_id}: no description"
            )
            Draft202012Validator.check_schema(cls.parameters)
            assert cls.parameters.get("type") == "object", f"{tool_id}: parameters must be an object schema"
            json.dumps(cls.openai_schema())

    def test_tool_lifecycle(self):
        cases = list(self.cases())
        for plan in {case[0].generator: case[0] for case in cases}.values():
            identities = [identity for case_plan, identity, _ in cases if case_plan.generator == plan.generator]
            for tool_id, tool_name in zip(plan.tools, plan.tool_names):
                tool = self.registry.component("tool", tool_id)
                _run(self._check_tool, tool, tool_name, identities[0], identities[-1])

    async def _check_tool(self, tool, tool_name: str, identity: dict, other_identity: dict) -> None:
        first = await tool.create("conformance-a", identity=identity)
        assert first == "conformance-a", "create must return the instance id it was given"
        generated = await tool.create(None, identity=other_identity)
        assert isinstance(generated, str) and generated and generated != first, "create(None) must make a new id"
        arguments = self.tool_arguments(tool_name, identity)
        call = arguments if arguments is not None else example_arguments(tool.parameters)
        try:
            result = await tool.execute(first, dict(call))
        except Exception:
            if arguments is not None:
                raise
            result = None  # minimal arguments from the schema may be refused by raising: the engine reports it
        if result is not None:
            _check_execute_result(result)
            first_score = await tool.calc_reward(first)
            for _ in range(2):
                await tool.execute(first, dict(call))
            # a fresh episode with the same identity must not see what the first one did
            fresh = await tool.create("conformance-b", identity=identity)
            again = await tool.execute(fresh, dict(call))
            _check_execute_result(again)
            assert again[0] == result[0], (
                "the same call on a fresh episode answered differently: state leaks between instance ids "
                f"({result[0]!r:.80} then {again[0]!r:.80})"
            )
            assert await tool.calc_reward(fresh) == first_score, "calc_reward of a fresh episode depends on another"
            await tool.release(fresh)
        await tool.release(first)
        score = await tool.calc_reward(generated)
        assert isinstance(score, (int, float)) and math.isfinite(score), "calc_reward must return a finite number"
        await tool.release(generated)
        await tool.release(generated)  # twice is harmless
        assert not {first, generated} & set(getattr(tool, "instances", {})), "release must drop the episode's state"

    def test_rewards_stay_in_range_and_never_raise_on_garbage(self):
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        cases = list(self.cases())
        garbage = st.one_of(
            st.text(max_size=300),
            st.sampled_from(['{"result": }', "```json\n{", "NaN", "inf", "-1e309", "\x00", "[" * 50, '{"a": [1, {}]}']),
        )

        def check_in_range(reward, identity):
            @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
            @given(output=garbage)
            def scores_in_range(output):
                score = reward.verify_score(output, identity, **episode_kwargs())
                assert isinstance(score, float) and 0.0 <= score <= 1.0, f"score {score!r} for {output!r}"

            return scores_in_range

        for plan, identity, _ in {case[0].reward: case for case in cases}.values():
            reward = self.registry.component("reward", plan.reward)
            scores_in_range = check_in_range(reward, identity)
            scores_in_range()
            for output in (None, "", 123):
                assert 0.0 <= reward.verify_score(output, identity, **episode_kwargs()) <= 1.0

    def test_solution_scores_one(self):
        for plan, identity, prompt in self.cases():
            answer = self.solution(identity)
            reward = self.registry.component("reward", plan.reward)
            if answer is None:
                assert reward.verify_score("", identity, **episode_kwargs()) == 0.0, "an empty answer must score 0"
                continue
            messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
            assert reward.verify_score(answer, identity, **episode_kwargs(messages)) == 1.0, (
                f"{plan.reward}: the solution does not score 1 for {identity!r}"
            )

    def test_interactions_terminate(self):
        for plan, identity, prompt in self.cases():
            if not plan.interaction:
                continue
            interaction = self.registry.component("interaction", plan.interaction)
            _run(self._check_interaction, interaction, identity, prompt)

    async def _check_interaction(self, interaction, identity: dict, prompt: Any) -> None:
        instance_id = await interaction.start_interaction(None, identity=identity)
        assert isinstance(instance_id, str) and instance_id
        messages: list[dict] = [{"role": "user", "content": prompt}]
        limit = self.interaction_turn_limit
        terminated = False
        for turn in range(limit):
            messages.append({"role": "assistant", "content": f"I am not sure ({turn})."})
            result = await interaction.generate_response(instance_id, list(messages))
            assert isinstance(result, tuple) and len(result) == 4, "generate_response returns 4 values"
            terminated, feedback, score, extra = result
            assert isinstance(terminated, bool) and isinstance(feedback, str) and isinstance(extra, dict)
            assert isinstance(score, (int, float)) and math.isfinite(score)
            if terminated:
                break
            messages.append({"role": "user", "content": feedback})
        assert terminated, f"the interaction did not end the episode within {limit} unanswered turns"
        await interaction.finalize_interaction(instance_id)
        answer = self.solution(identity)
        if answer is None:
            return
        instance_id = await interaction.start_interaction(None, identity=identity)
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
        terminated, _, score, _ = await interaction.generate_response(instance_id, messages)
        assert terminated, "the interaction must end the episode on a correct answer"
        assert await interaction.calculate_score(instance_id) >= score >= 0.0
        await interaction.finalize_interaction(instance_id)
        await interaction.finalize_interaction(instance_id)


def _check_execute_result(result: Any) -> None:
    assert isinstance(result, tuple) and len(result) == 3, "execute returns (text, step reward, metrics)"
    text, step_reward, metrics = result
    assert isinstance(text, str), "execute's text must be a str"
    assert isinstance(step_reward, (int, float)) and math.isfinite(step_reward), "step reward must be finite"
    assert isinstance(metrics, dict), "execute's metrics must be a dict"


def check_bootcamp(namespace: str, pytest_args: list[str] | None = None) -> int:
    """Run :class:`BootcampConformance` against an installed bootcamp; returns pytest's exit code."""
    try:
        import pytest  # noqa: F401
    except ImportError:
        from bootcamp_core.plugin.errors import BootcampError

        raise BootcampError('`bootcamp check` needs the testing extra: pip install "bootcamp-core[testing]"') from None
    from bootcamp_core.plugin.loader import get_registry

    get_registry().namespace_plugin(namespace)  # a clear error for an unknown or broken namespace
    with tempfile.TemporaryDirectory(prefix="bootcamp-check-") as folder:
        root = Path(folder)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        test_file = root / f"test_{namespace}_conformance.py"
        test_file.write_text(
            "from bootcamp_core.testing import BootcampConformance\n\n\n"
            f"class TestConformance(BootcampConformance):\n    namespace = {namespace!r}\n",
            encoding="utf-8",
        )
        command = [sys.executable, "-m", "pytest", str(test_file), "-c", str(root / "pytest.ini"), "--rootdir", folder,
                   "-p", "no:cacheprovider", "-q", *(pytest_args or [])]
        return subprocess.run(command, check=False).returncode
