"""A reward that returns a score instead of raising reports a model-side error kind for the answer with
``report_error``: the episode ends as at the engine's own reward limit (``error_kind`` that kind, score 0, never
re-run), per scoring call, so concurrent episodes never see each other's reports; a kind that is not model-side is
the plugin author's error, loud in tests and the conformance kit, never a crash of a run."""

from __future__ import annotations

import json
import threading
import types

import anyio
import pytest

from bootcamp_core import PluginError, Reward, TaskGenerator, hookimpl, report_error
from bootcamp_core.cli.check import ConformanceError
from bootcamp_core.data.io import write_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import run_episode
from bootcamp_core.episode.scoring import score_and_report, score_trajectory
from bootcamp_core.evaluate.config import EvalConfig
from bootcamp_core.evaluate.run import run_evaluation
from bootcamp_core.plugin.errors import ERROR_KINDS, MODEL_ERROR_KINDS
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing import Reply, ScriptedChatServer, scripted_policy

#: what the test policy answers for the verifier to run past its own limit
SLOW = "slow"
#: the two scoring calls of the cross-thread test meet here, so both are inside verify_score at once
MEETING = threading.Barrier(2, timeout=30)


class Gen(TaskGenerator):
    name = "gen"
    reward = "own_limit"

    def case_generator(self, rng):
        return {"answer": str(rng.randint(1, 9))}

    def prompt_func(self, identity, rng):
        return "Say the answer."


class OwnLimit(Reward):
    """A verifier with a time limit of its own: an answer it cannot finish is reported and scores 0, never raised."""

    name = "own_limit"

    def extract_output(self, output):
        return output.strip() or None

    def verify_correction(self, extracted, identity, **kwargs):
        if identity.get("meet"):
            if extracted == SLOW:
                report_error("reward_timeout", "the verifier ran past its own 0.1 s")
            MEETING.wait()  # the report above is made while the other episode's call is in its own verify_score
        if extracted == SLOW:
            report_error("reward_timeout", "the verifier ran past its own 0.1 s")
            report_error("model_error", "a second report of the same call")  # the first counts
            return 0.0
        return float(extracted == identity["answer"])


class Generous(OwnLimit):
    """Reports and still returns a full score: the report decides, the episode scores 0."""

    name = "generous"

    def verify_correction(self, extracted, identity, **kwargs):
        if extracted == SLOW:
            report_error("reward_timeout", "ran past its limit")
        return 1.0


class Misreporting(OwnLimit):
    """Reports a kind no reward may report: an infrastructure kind, or none at all."""

    name = "misreporting"

    def verify_correction(self, extracted, identity, **kwargs):
        report_error(identity.get("kind", "timeout"), "not a model-side kind")
        return 1.0


def plugin() -> types.ModuleType:
    module = types.ModuleType("reward_reports_test_plugin")
    hooks = {"bootcamp_register_task_generators": [Gen], "bootcamp_register_rewards": [OwnLimit, Generous,
                                                                                        Misreporting]}
    for hook_name, classes in hooks.items():
        def hook(register, classes=classes):
            for cls in classes:
                register(cls)
        hook.__name__ = hook_name
        setattr(module, hook_name, hookimpl(hook))
    return module


@pytest.fixture(scope="module")
def registry() -> Registry:
    registry = Registry(strict=True)
    registry.add_plugin(plugin(), "r", distribution="bootcamp-r", version="1.0")
    return registry


def record(index: int, reply: str, *, reward: str = "own_limit", **identity) -> dict:
    return GeneratedSample(
        data_source="bootcamp/r", prompt=[{"role": "user", "content": "Say the answer."}],
        identity={"answer": "7", "reply": reply, **identity}, index=index, split="test", generator_name="g",
        generator="r/gen", reward=f"r/{reward}", tools=[], tool_names=[], interaction=None,
        versions={"bootcamp-r": "1.0"},
    ).to_record()


async def reply_from_identity(messages, tools, sample, rng):
    return {"role": "assistant", "content": sample.identity["reply"]}


def play(registry: Registry, records: list[dict]) -> list:
    """Every record's episode at once on one event loop."""
    results: list = [None] * len(records)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for position, item in enumerate(records):
                async def one(position=position, item=item) -> None:
                    results[position] = await run_episode(item, scripted_policy(reply_from_identity),
                                                          registry=registry)
                group.start_soon(one)

    anyio.run(main)
    return results


def outcome(result) -> tuple:
    return result.score, result.solved, result.success, result.error_type, result.error_kind, result.finish_reason


REPORTED = (0.0, False, True, "model", "reward_timeout", "error")
FINE = (1.0, True, True, None, None, "answered")


# ------------------------------------------------------------------------------------------- the engine
def test_a_reported_overrun_ends_the_episode_as_a_model_side_reward_timeout(registry):
    slow, fine = play(registry, [record(0, SLOW), record(1, "7")])
    assert outcome(slow) == REPORTED
    assert slow.error == "own_limit.verify_score: the verifier ran past its own 0.1 s"
    assert slow.extracted_output == SLOW and slow.messages[-1]["content"] == SLOW  # the trajectory is kept
    assert outcome(fine) == FINE and fine.error is None
    assert "reward_timeout" in MODEL_ERROR_KINDS and set(MODEL_ERROR_KINDS) <= set(ERROR_KINDS)


def test_the_report_decides_whatever_score_the_reward_returns(registry):
    [result] = play(registry, [record(0, SLOW, reward="generous")])
    assert outcome(result) == REPORTED and result.error == "generous.verify_score: ran past its limit"
    [result] = play(registry, [record(1, "anything", reward="generous")])
    assert outcome(result) == FINE


def test_batched_episodes_keep_their_reports_apart(registry):
    # forty at once on one loop: the scoring calls run several to a worker thread, one after the other
    records = [record(index, SLOW if index % 3 == 0 else "7") for index in range(40)]
    results = play(registry, records)
    assert [outcome(result) for result in results] == [REPORTED if index % 3 == 0 else FINE for index in range(40)]


def test_two_episodes_scored_at_the_same_moment_in_two_threads_keep_their_reports_apart(registry):
    # each episode on an event loop of its own in its own thread, so its scoring runs in a worker of its own; both
    # calls meet inside verify_score, the slow one having reported before they meet
    results: dict = {}

    def episode(name: str, item: dict) -> None:
        results[name] = anyio.run(lambda: run_episode(item, scripted_policy(reply_from_identity), registry=registry))

    threads = [threading.Thread(target=episode, args=("slow", record(0, SLOW, meet=True))),
               threading.Thread(target=episode, args=("fine", record(1, "7", meet=True)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not MEETING.broken
    assert outcome(results["slow"]) == REPORTED
    assert outcome(results["fine"]) == FINE


def test_score_trajectory_binds_its_own_call_and_a_direct_call_records_nothing(registry):
    reward = registry.component("reward", "r/own_limit")
    kwargs = {"tool_rewards": [], "tool_scores": {}, "turn_scores": []}
    identity = {"answer": "7"}
    slow = [{"role": "assistant", "content": SLOW}]
    assert score_and_report(reward, identity, messages=slow, **kwargs) == (
        0.0, SLOW, ("reward_timeout", "the verifier ran past its own 0.1 s"))
    assert score_and_report(reward, identity, messages=[{"role": "assistant", "content": "7"}], **kwargs) == (
        1.0, "7", None)
    assert score_trajectory(reward, identity, messages=slow, **kwargs) == (0.0, SLOW)
    assert reward.verify_score(SLOW, identity) == 0.0  # outside a scoring call: nothing to report to, no error
    report_error("reward_timeout", "outside any call")  # records nothing, raises nothing


# ------------------------------------------------------------------------------- a kind no reward may report
@pytest.mark.parametrize("kind", ["timeout", "plugin_error", "no_such_kind", None])
def test_a_kind_that_is_not_model_side_is_the_plugin_authors_error(registry, kind):
    with pytest.raises(PluginError, match=r"^report_error: .* is not a model-side error kind; one of "
                                          r"request_rejected, tool_call, reward_timeout, model_error$"):
        report_error(kind, "message")
    reward = registry.component("reward", "r/misreporting")
    identity = {"answer": "7", "kind": kind}
    # verify_score never raises: a direct call scores 0 and keeps the error, where the conformance kit finds it
    before = len(reward.errors)
    assert reward.verify_score("7", identity) == 0.0
    assert "PluginError: report_error" in list(reward.errors)[before]
    # in a run it is a crash of the reward like any other: scored 0 and kept, never a crash of the run
    before = len(reward.errors)
    [result] = play(registry, [record(0, "7", reward="misreporting", kind=kind)])
    assert (result.score, result.success, result.error_kind) == (0.0, True, None)
    assert "PluginError: report_error" in list(reward.errors)[before]


def test_the_conformance_kit_catches_a_kind_that_is_not_model_side(registry):
    from bootcamp_core.cli.check import Conformance

    plan = types.SimpleNamespace(reward="r/misreporting", interaction=None)

    class Checks(Conformance):
        namespace = "r"

        def cases(self):
            yield plan, {"answer": "1"}, "Say the answer."

        def reward_cases(self):
            return [(plan, self.registry.component("reward", "r/misreporting"), {"answer": "1"})]

    Checks._registry = registry
    with pytest.raises(ConformanceError, match=r"broke the plugin contract on .*is not a model-side error kind"):
        Checks().check_rewards_stay_in_range_and_never_raise_on_garbage()
    with pytest.raises(ConformanceError,
                       match=r"r/misreporting: verify_score broke the plugin contract on .*is not a model-side"):
        Checks().check_rewards_and_interactions_survive_hostile_outputs()


# ------------------------------------------------------------------------------------------- an evaluation
def test_an_evaluation_counts_the_reported_kind_and_never_runs_it_again(registry, tmp_path):
    records = [record(index, str(index)) for index in range(4)]
    write_records(tmp_path / "data.jsonl", records)

    def script(request: dict) -> Reply:  # the model answers "slow" to the first episode it plays only
        return Reply.text(SLOW if len(server.requests) == 1 else "7")

    out = tmp_path / "out"
    with ScriptedChatServer(script) as server:
        config = EvalConfig(dataset_path=tmp_path / "data.jsonl", output_dir=out, api_url=server.base_url,
                            api_model="stub", max_concurrent=1)
        summary = run_evaluation(config, registry=registry, progress=False)
        answered = len(server.requests)
        resume = EvalConfig(dataset_path=tmp_path / "data.jsonl", output_dir=out, api_url=server.base_url,
                            api_model="stub", resume_from=out / "results.jsonl")
        again = run_evaluation(resume, registry=registry, progress=False)  # nothing left to run: a model-side kind
        assert len(server.requests) == answered == 4
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 4
    [slow] = [line for line in lines if line["error_kind"] is not None]
    assert (slow["score"], slow["success"], slow["error_type"], slow["error_kind"]) == (0.0, True, "model",
                                                                                          "reward_timeout")
    assert sum(line["score"] for line in lines) == 3.0
    assert summary["this_run"]["infrastructure_errors"] == 0 and summary["this_run"]["reruns"] == 0
    kinds = summary["overall"]["error_kinds"]
    assert list(kinds) == ["reward_timeout"] and kinds["reward_timeout"]["count"] == 1
    assert kinds["reward_timeout"]["example"] == "own_limit.verify_score: the verifier ran past its own 0.1 s"
    assert again["this_run"]["episodes"] == 0
    assert again["overall"]["error_kinds"]["reward_timeout"]["count"] == 1
