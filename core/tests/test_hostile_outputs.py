"""Answers that cannot stall a run: the off-loop runner abandons overrunning calls, the engine ends their episodes as
``reward_timeout``, and the conformance kit's hostile-output check catches backtracking or crashing extraction."""

from __future__ import annotations

import re
import threading
import time
import types

import anyio
import pytest

from bootcamp_core import Interaction, Reward, TaskGenerator, hookimpl
from bootcamp_core.cli.check import Conformance, ConformanceError, hostile_outputs, within
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import RolloutLimits, run_episode
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.plugin.off_loop import OFF_LOOP_BATCH, OffLoopTimeout, run_coroutine_off_loop, run_off_loop
from bootcamp_core.testing import scripted_policy

HOSTILE = "HOSTILE"
#: set when a test ends, so the calls it left stuck in worker threads return
RELEASE = threading.Event()


@pytest.fixture(autouse=True)
def _release_stuck_calls():
    RELEASE.clear()
    yield
    RELEASE.set()


class Gen(TaskGenerator):
    name = "gen"
    reward = "stuck"

    def case_generator(self, rng):
        return {"answer": str(rng.randint(1, 9))}

    def prompt_func(self, identity, rng):
        return "Say the answer."


class TalkGen(Gen):
    name = "talk_gen"
    interaction = "talk"


class Stuck(Reward):
    """Scores an exact answer; on a hostile one its (sync) check never ends until the test releases it."""

    name = "stuck"

    def extract_output(self, output):
        return output.strip()

    def verify_correction(self, extracted, identity, **kwargs):
        if HOSTILE in extracted:
            RELEASE.wait(120)
        return float(extracted == identity["answer"])


class Talk(Interaction):
    """Ends the episode at once; its reply blocks (sync, inside the coroutine) on a hostile answer."""

    name = "talk"

    async def generate_response(self, instance_id, messages, **kwargs):
        text = messages[-1]["content"]
        if HOSTILE in text:
            RELEASE.wait(120)  # sync work that would block an event loop it ran on
        if text == "crash":
            raise AttributeError("'NoneType' object has no attribute 'group'")
        return True, "Thanks.", 1.0, {}


def plugin() -> types.ModuleType:
    module = types.ModuleType("hostile_test_plugin")
    hooks = {"bootcamp_register_task_generators": [Gen, TalkGen], "bootcamp_register_interactions": [Talk],
             "bootcamp_register_rewards": [Stuck]}
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
    registry.add_plugin(plugin(), "h", distribution="bootcamp-h", version="1.0")
    return registry


def record(index: int, answer: str, *, interaction: bool = False) -> dict:
    return GeneratedSample(
        data_source="bootcamp/h", prompt=[{"role": "user", "content": "Say the answer."}], identity={"answer": answer},
        index=index, split="test", generator_name="g", generator="h/talk_gen" if interaction else "h/gen",
        reward="h/stuck", tools=[], tool_names=[], interaction="h/talk" if interaction else None,
        versions={"bootcamp-h": "1.0"},
    ).to_record()


async def answer_from_record(messages, tools, sample, rng):
    """The policy: answers each record with the text stored in its identity under ``reply``, else its answer."""
    return {"role": "assistant", "content": sample.identity.get("reply", sample.identity["answer"])}


def run_all(records: list[dict], registry: Registry, limits: RolloutLimits) -> list:
    results: list = [None] * len(records)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for position, item in enumerate(records):
                async def one(position=position, item=item) -> None:
                    results[position] = await run_episode(item, scripted_policy(answer_from_record), registry=registry,
                                                          limits=limits)
                group.start_soon(one)

    anyio.run(main)
    return results


# ---------------------------------------------------------------------------------------------- the runner
def test_an_overrunning_call_is_abandoned_and_other_calls_keep_flowing():
    async def main() -> tuple[list, list]:
        outcomes: list = []
        order: list = []

        async def stuck() -> None:
            try:
                await run_off_loop(lambda: RELEASE.wait(120), timeout_s=0.3)
            except OffLoopTimeout as error:
                outcomes.append(str(error))

        async def quick(number: int) -> None:
            order.append(await run_off_loop(lambda: number * 2, timeout_s=0.3))

        async with anyio.create_task_group() as group:
            group.start_soon(stuck)
            await anyio.lowlevel.checkpoint()
            # more quick calls than one batch holds, queued behind the stuck one: all of them must still be answered
            for number in range(3 * OFF_LOOP_BATCH):
                group.start_soon(quick, number)
        return outcomes, order

    outcomes, order = anyio.run(main)
    assert outcomes == ["took longer than 0.3 s and was abandoned"]
    assert sorted(order) == [number * 2 for number in range(3 * OFF_LOOP_BATCH)]


def test_calls_behind_a_stuck_one_in_its_batch_are_run_once_each():
    runs: list[int] = []
    lock = threading.Lock()

    def counted(number: int) -> int:
        with lock:
            runs.append(number)
        return number

    async def main() -> list:
        results: list = []

        async def stuck() -> None:
            with pytest.raises(OffLoopTimeout):
                await run_off_loop(lambda: RELEASE.wait(120), timeout_s=0.2)

        async def one(number: int) -> None:
            results.append(await run_off_loop(lambda: counted(number), timeout_s=0.2))

        async with anyio.create_task_group() as group:
            for number in range(OFF_LOOP_BATCH * 10):  # every worker slot busy, so batches fill up behind the stuck one
                group.start_soon(one, number)
                if number == 3:
                    group.start_soon(stuck)
        return results

    results = anyio.run(main)
    RELEASE.set()
    assert sorted(results) == list(range(OFF_LOOP_BATCH * 10))
    assert sorted(runs) == list(range(OFF_LOOP_BATCH * 10))  # none ran twice


def _threads_of_calls_made_together(count: int, call_s: float) -> set[int]:
    """The worker threads that ``count`` calls made at the same moment ran in, each taking ``call_s``; one such call
    runs first, so the runner has seen how long they take."""
    def call() -> int:
        if call_s:  # a quick call does not sleep: time.sleep(0) yields the processor, maybe for milliseconds
            time.sleep(call_s)
        return threading.get_ident()

    async def main() -> list[int]:
        await run_off_loop(call)
        threads: list[int] = []

        async def one() -> None:
            threads.append(await run_off_loop(call))

        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(one)
        return threads

    threads = anyio.run(main)
    assert len(threads) == count
    return set(threads)


def test_quick_calls_made_together_share_one_thread_hop():
    # gathered: the first caller lets the others queue theirs before it takes its batch. The runner goes by how long
    # the last batch took on the clock, and on a loaded machine the system may set its thread aside for milliseconds,
    # making the next batch ungathered; so one of three tries must share one thread (ungathered, each of the calls
    # drives a batch of its own: eight threads every time)
    spreads = []
    while len(spreads) < 3 and 1 not in spreads:
        spreads.append(len(_threads_of_calls_made_together(OFF_LOOP_BATCH, 0.0)))
    assert spreads[-1] == 1, f"threads used by {OFF_LOOP_BATCH} quick calls made together, try by try: {spreads}"


def _quick_calls_made_while_a_gathered_batch_runs() -> list[bool]:
    """Ten quick calls made while a gathered batch's call waits for a gate, which opens once they are all made: for
    each, whether the gate was open when it ran."""
    gate = threading.Event()

    async def main() -> list[bool]:
        await run_off_loop(lambda: None)  # the runner has seen quick calls: the next batch is gathered
        seen: list[bool] = []
        made = 0

        async def one() -> None:
            nonlocal made
            made += 1
            seen.append(await run_off_loop(gate.is_set))

        async with anyio.create_task_group() as group:
            group.start_soon(run_off_loop, lambda: gate.wait(5))
            await anyio.sleep(0.01)  # its batch is running
            for _ in range(10):
                group.start_soon(one)
            while made < 10:
                await anyio.lowlevel.checkpoint()
            await anyio.sleep(0.005)  # a driver of their own, if any, has taken them by now
            gate.set()
        return seen

    return anyio.run(main)


def test_quick_calls_made_while_a_gathered_batch_runs_wait_for_the_next_one():
    # after the running batch, not in hops of their own beside it (how many hops they then take depends on the gated
    # call, which took long on the clock). A gathered batch running past its budget (0.1 s: a loaded machine may set
    # the test aside that long) lets them go elsewhere, so one of three tries must show it
    tries = []
    while len(tries) < 3 and (not tries or tries[-1] != 10):
        seen = _quick_calls_made_while_a_gathered_batch_runs()
        assert len(seen) == 10
        tries.append(sum(seen))
    assert tries[-1] == 10, f"of 10 quick calls, those run once the running batch was done, try by try: {tries}"


def test_slow_calls_made_together_are_spread_over_the_threads():
    # not gathered once the runner has seen they take long: a batch runs its calls one after the other
    assert len(_threads_of_calls_made_together(4, 0.05)) == 4


def test_a_slow_call_among_quick_ones_gives_back_the_calls_behind_it():
    # gathered with quick calls, a call that waits for the others holds its batch past the budget: the calls behind it
    # go back to the queue and run in another thread, so it can see them done (else it times out, and they wait)
    done: list[str] = []

    async def main() -> None:
        await run_off_loop(lambda: None)  # the runner has seen quick calls: the next ones are gathered

        async def quick(number: int) -> None:
            await run_off_loop(lambda: None)
            done.append(f"quick {number}")
            if len(done) == 20:
                RELEASE.set()

        async def slow() -> None:
            waited = await run_off_loop(lambda: RELEASE.wait(5), timeout_s=10)
            done.append(f"slow, released: {waited}")

        async with anyio.create_task_group() as group:
            for number in range(20):
                if number == 3:
                    group.start_soon(slow)
                group.start_soon(quick, number)

    anyio.run(main)
    assert len(done) == 21
    assert done[-1] == "slow, released: True"


def test_a_coroutine_off_the_loop_cannot_block_it():
    async def blocking() -> str:
        RELEASE.wait(120)
        return "never"

    async def main() -> tuple[int, str]:
        ticks = 0
        outcome = ""

        async def ticker() -> None:
            nonlocal ticks
            while not outcome:
                ticks += 1
                await anyio.sleep(0.01)

        async def call() -> None:
            nonlocal outcome
            try:
                await run_coroutine_off_loop(blocking, timeout_s=0.5)
            except OffLoopTimeout:
                outcome = "abandoned"

        async with anyio.create_task_group() as group:
            group.start_soon(ticker)
            group.start_soon(call)
        return ticks, outcome

    ticks, outcome = anyio.run(main)
    assert outcome == "abandoned"
    assert ticks > 5  # the loop went on while the coroutine's sync work blocked its worker


# ---------------------------------------------------------------------------------------------- the engine
def test_twenty_healthy_episodes_finish_beside_two_hostile_ones(registry):
    records = [record(index, str(index % 10)) for index in range(20)]
    for index in range(20):
        if index % 3 == 0:  # some wrong answers, so the scores are not all alike
            records[index]["reward_model"]["ground_truth"]["reply"] = "no"
    hostile = [record(100, "1"), record(101, "2", interaction=True)]
    for item in hostile:
        item["reward_model"]["ground_truth"]["reply"] = f"{HOSTILE} " + " " * 30_000
    results = run_all([*records[:10], hostile[0], *records[10:], hostile[1]], registry,
                      RolloutLimits(reward_timeout_s=0.5))
    healthy = [result for result in results if HOSTILE not in result.messages[-1]["content"]]
    stalled = [result for result in results if HOSTILE in result.messages[-1]["content"]]
    assert len(healthy) == 20 and len(stalled) == 2
    for result in healthy:
        identity = result.ground_truth
        expected = 1.0 if identity.get("reply", identity["answer"]) == identity["answer"] else 0.0
        assert (result.score, result.success, result.error_kind, result.finish_reason) == (expected, True, None,
                                                                                          "answered")
    assert sum(result.score for result in healthy) == 13.0
    for result in stalled:
        assert (result.score, result.success, result.error_type, result.error_kind, result.finish_reason) == (
            0.0, True, "model", "reward_timeout", "error")
    assert "verify_score took longer than 0.5 s" in stalled[0].error
    assert "talk.generate_response took longer than 0.5 s" in stalled[1].error


def test_an_interaction_crash_on_the_answer_is_a_model_error_scored_0(registry):
    item = record(7, "crash", interaction=True)
    [result] = run_all([item], registry, RolloutLimits())
    assert (result.score, result.success, result.error_type, result.error_kind, result.finish_reason) == (
        0.0, True, "model", "model_error", "error")
    assert "AttributeError" in result.error and "talk.generate_response" in result.error


# ---------------------------------------------------------------------------------------------- the check
class Backtracking(Reward):
    """The kind of extraction the check exists to catch: a pattern that backtracks over whitespace."""

    name = "backtracking"

    def extract_output(self, output):
        found = re.search(r'"\w+":\s*\s*(\S*)\s*\}', output)
        return found.group(1) if found else None

    def verify_correction(self, extracted, identity, **kwargs):
        return 1.0


class Linear(Reward):
    name = "linear"

    def extract_output(self, output):
        from bootcamp_core.answers import last_json_object

        return last_json_object(output)

    def verify_correction(self, extracted, identity, **kwargs):
        return 1.0


class OutOfRange(Linear):
    name = "out_of_range"

    def verify_score(self, output, identity, **kwargs):
        return 2.0


class Fragile(Interaction):
    name = "fragile"

    async def generate_response(self, instance_id, messages, **kwargs):
        return True, "", float(int(messages[-1]["content"][-5000:] or 0) > 0), {}


def checks_of(registry: Registry, reward: str | None, interaction: str | None) -> Conformance:
    plan = types.SimpleNamespace(reward=reward, interaction=interaction)

    class Checks(Conformance):
        namespace = "c"
        hostile_timeout_s = 2.0

        def cases(self):
            yield plan, {"answer": "1"}, "Say the answer."

        def reward_cases(self):
            return [(plan, self.registry.component("reward", reward), {"answer": "1"})] if reward else []

    Checks._registry = registry
    return Checks()


@pytest.fixture(scope="module")
def check_registry() -> Registry:
    module = types.ModuleType("hostile_check_plugin")
    for hook_name, classes in {"bootcamp_register_rewards": [Backtracking, Linear, OutOfRange],
                               "bootcamp_register_interactions": [Fragile, Talk]}.items():
        def hook(register, classes=classes):
            for cls in classes:
                register(cls)
        hook.__name__ = hook_name
        setattr(module, hook_name, hookimpl(hook))
    registry = Registry(strict=True)
    registry.add_plugin(module, "c", distribution="bootcamp-c", version="1.0")
    return registry


def test_the_hostile_check_passes_linear_extraction(check_registry):
    checks_of(check_registry, "c/linear", "c/talk").check_rewards_and_interactions_survive_hostile_outputs()


def test_the_hostile_check_catches_a_backtracking_pattern(check_registry):
    checks = checks_of(check_registry, "c/backtracking", None)
    with pytest.raises(ConformanceError, match=r"c/backtracking: verify_score on .*did not return within 2 s"):
        checks.check_rewards_and_interactions_survive_hostile_outputs()


def test_the_hostile_check_catches_a_crash_and_a_score_out_of_range(check_registry):
    with pytest.raises(ConformanceError, match=r"c/fragile: generate_response raised on .*ValueError"):
        checks_of(check_registry, None, "c/fragile").check_rewards_and_interactions_survive_hostile_outputs()
    with pytest.raises(ConformanceError, match=r"c/out_of_range: verify_score on .*score 2.0 is outside \[0, 1\]"):
        checks_of(check_registry, "c/out_of_range", None).check_rewards_and_interactions_survive_hostile_outputs()


def test_the_watchdog_stops_a_call_a_plugin_would_catch_exceptions_of():
    def swallowing() -> str:
        try:
            while True:
                time.sleep(0.01)
        except Exception:  # noqa: BLE001 - what plugins do, and what the watchdog must get past
            return "swallowed"

    with pytest.raises(TimeoutError, match="did not return within 0.2 s"):
        within(0.2, swallowing)


def test_hostile_outputs_cover_what_the_contract_names():
    labels = {}
    for label, output in hostile_outputs():
        labels[label] = len(output)
    assert labels["100k whitespace after '```'"] > 100_000 and labels["1 MB of backticks"] == 1_000_000
    assert labels["10^5-deep nesting of ["] > 100_000 and labels["1 MB of nesting of {"] == 1_000_000
    assert {"a 5,000-digit number", "lone surrogates", "NaN and Infinity", "1 MB of lone surrogates",
            "100k whitespace after '\"x\":'", "100k whitespace after '\\\\boxed{'"} <= set(labels)
