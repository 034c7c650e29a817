"""The table and act tools through their async lifecycle: one shared match, refusals, replays, scores."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import outputs, run_tool_calls
from bootcamp_texas_holdem.game import MATCH_OVER, match_score
from bootcamp_texas_holdem.tools import _MATCHES, ActTool, TableTool

IDENTITY = {"seed": 123, "hands": 4, "duplicate": False, "small_blind": 50, "big_blind": 100,
            "starting_stack": 20_000, "opponent": "tight_passive", "reveal_opponent": True, "score_scale": 2_000.0}


@pytest.fixture
def tools(registry: Registry) -> tuple[TableTool, ActTool]:
    return registry.component("tool", "texas_holdem/table"), registry.component("tool", "texas_holdem/act")


async def _open(tools: tuple[TableTool, ActTool], instance_id: str | None = None, identity: dict = IDENTITY) -> str:
    table, act = tools
    instance_id = await table.create(instance_id, identity=identity)
    assert await act.create(instance_id, identity=identity) == instance_id
    return instance_id


async def _close(tools: tuple[TableTool, ActTool], instance_id: str) -> None:
    for tool in tools:
        await tool.release(instance_id)


def _decide(text: str) -> dict:
    """A simple legal action read from the text: call or check."""
    return {"action": "call"} if '{"action": "call"}' in text else {"action": "check"}


def test_both_tools_share_one_match(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode() -> None:
        instance_id = await _open(tools, "shared")
        view = (await table.execute(instance_id, {}))[0]
        assert "Your cards:" in view and "Your legal actions:" in view and "tight-passive" in view
        text, step, metrics = await act.execute(instance_id, _decide(view))
        assert step == 0.0 and metrics["actions"] == 1 and metrics["match_over"] is False
        assert text.splitlines()[0] in (await table.execute(instance_id, {}))[0]  # the table shows the new state
        await table.release(instance_id)
        assert instance_id in _MATCHES  # still held by act
        await act.execute(instance_id, {"action": "fold"})  # may be refused: nothing to call; the match is still there
        await act.release(instance_id)
        assert instance_id not in _MATCHES and instance_id not in act.instances

    asyncio.run(episode())


def test_full_match_through_the_tools(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode() -> tuple[list[str], float, float]:
        instance_id = await _open(tools)
        texts = [(await table.execute(instance_id, {}))[0]]
        while MATCH_OVER not in texts[-1]:
            texts.append((await act.execute(instance_id, _decide(texts[-1])))[0])
        scores = await table.calc_reward(instance_id), await act.calc_reward(instance_id)
        await _close(tools, instance_id)
        return texts, *scores

    texts, table_score, act_score = asyncio.run(episode())
    assert table_score == act_score
    final = texts[-1].splitlines()[-1]
    assert final.startswith(MATCH_OVER + ": all 4 hands have been played.")
    chips = int(final.split(" chips in total")[0].rsplit(" ", 1)[1]) * (1 if " won " in final else -1)
    assert act_score == match_score(chips, IDENTITY["score_scale"])
    joined = "\n".join(texts)
    for number in range(1, 5):
        assert f"Hand {number} of 4 begins" in joined and f"Hand {number} is over" in joined


def test_concurrent_episodes_each_play_their_own_match_and_leave_nothing_behind(
    tools: tuple[TableTool, ActTool],
) -> None:
    table, act = tools

    async def play(instance_id: str | None) -> list[str]:
        instance_id = await _open(tools, instance_id)
        texts = [(await table.execute(instance_id, {}))[0]]
        for _ in range(5):
            if MATCH_OVER in texts[-1]:
                break
            texts.append((await act.execute(instance_id, _decide(texts[-1])))[0])
        await _close(tools, instance_id)
        return texts

    async def together() -> list[list[str]]:
        return await asyncio.gather(*(play(None) for _ in range(6)))

    runs = asyncio.run(together())
    assert all(run == runs[0] for run in runs)
    assert not _MATCHES


def test_no_replays(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode() -> None:
        instance_id = await _open(tools)
        before = (await table.execute(instance_id, {}))[0]
        for word in ("new_match", "restart", "Reset", "redeal", "new game"):
            text, step, metrics = await act.execute(instance_id, {"action": word})
            assert text.startswith("Refused: this episode owns exactly one match")
            assert "Your legal actions:" in text and step == -0.1
        assert (await table.execute(instance_id, {}))[0] == before
        assert metrics["illegal_actions"] == 5 and metrics["actions"] == 0
        # after the last hand nothing more can be played, and no new match starts
        text = before
        while MATCH_OVER not in text:
            text = (await act.execute(instance_id, _decide(text)))[0]
        score = await act.calc_reward(instance_id)
        for call in ({"action": "check"}, {"action": "new_match"}):
            text, step, _ = await act.execute(instance_id, call)
            assert (MATCH_OVER in text or "Refused" in text) and step < 0
        assert "another cannot be started" in (await act.execute(instance_id, {"action": "call"}))[0]
        assert await act.calc_reward(instance_id) == score
        await _close(tools, instance_id)

    asyncio.run(episode())


def test_creating_the_tools_again_joins_the_match_and_never_redeals(tools: tuple[TableTool, ActTool]) -> None:
    """A runner may create an episode's tools more than once (verl per trajectory, a tool server on a repeated
    create): the match, its progress and its count of refused calls go on, and nothing is dealt again."""
    table, act = tools

    async def episode() -> None:
        instance_id = await _open(tools)
        start = (await table.execute(instance_id, {}))[0]
        played = (await act.execute(instance_id, _decide(start)))[0]
        await act.execute(instance_id, {"action": "restart"})
        for tool in (act, table, act):
            assert await tool.create(instance_id, identity=IDENTITY) == instance_id
        view = (await table.execute(instance_id, {}))[0]
        assert view != start and played.splitlines()[0] in view
        _, _, metrics = await act.execute(instance_id, {"action": "redeal"})
        assert (metrics["actions"], metrics["illegal_actions"]) == (1, 2)
        await _close(tools, instance_id)
        assert instance_id not in _MATCHES
        # a fresh episode, once every tool has released it, deals the same first view again
        fresh = await _open(tools, instance_id)
        assert (await table.execute(fresh, {}))[0] == start
        await _close(tools, fresh)

    asyncio.run(episode())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "check"}, "Illegal action: you cannot check: you face a bet of 50 more to call. Nothing changed."),
        ({"action": "raise", "amount": 20_500}, "must be from 200 to 20000"),
        ({"action": "raise"}, "raise needs an amount"),
        ({"action": "bet", "amount": 300}, "use raise"),
        ({"action": "fly"}, "unknown action 'fly'"),
        ({}, "missing action"),
        ({"action": "call", "size": 3}, "unknown argument(s) 'size'"),
    ],
)
def test_illegal_calls_are_clear_and_change_nothing(tools: tuple[TableTool, ActTool], arguments: dict,
                                                    message: str) -> None:
    table, act = tools
    (refused, after), score = run_tool_calls(act, IDENTITY, [arguments, {"action": "call"}])
    (untouched,), fresh_score = run_tool_calls(act, IDENTITY, [{"action": "call"}])
    text, step, metrics = refused
    assert message in text and step == -0.1
    assert (metrics["illegal_actions"], metrics["actions"]) == (1, 0)
    assert after[0] == untouched[0] and score == fresh_score  # the match went on as if the call never came
    if "Illegal action" in text:  # the legal options follow, as the table shows them
        (view,) = outputs(run_tool_calls(table, IDENTITY, [{}])[0])
        assert text.endswith(view[view.index("Hand 1 of 4, pre-flop"):])


def test_arguments_that_are_not_an_object(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode() -> list[tuple[str, float, dict]]:
        instance_id = await _open(tools)
        results = [await act.execute(instance_id, arguments)  # type: ignore[arg-type]
                   for arguments in ("not json", [1], '{"action": "call"}')]
        results += [await table.execute(instance_id, arguments)  # type: ignore[arg-type]
                    for arguments in ({"verbose": True}, "")]
        await _close(tools, instance_id)
        return results

    bad_json, listed, played, refused, shown = asyncio.run(episode())
    assert "arguments are not valid JSON" in bad_json[0] and "arguments must be a JSON object" in listed[0]
    assert bad_json[1] == listed[1] == refused[1] == -0.1
    assert played[0].startswith("You call 50.") and played[1] == 0.0  # JSON text arguments are read
    assert refused[0] == "Error: unknown argument(s) 'verbose'; this tool takes: none. Nothing changed."
    assert "Your cards:" in shown[0]


def test_unfinished_match_scores_as_folded(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode(actions: int) -> float:
        instance_id = await _open(tools)
        text = (await table.execute(instance_id, {}))[0]
        for _ in range(actions):
            text = (await act.execute(instance_id, _decide(text)))[0]
        score = await act.calc_reward(instance_id)
        assert await table.calc_reward(instance_id) == score  # asked twice: the same, nothing replayed
        await _close(tools, instance_id)
        return score

    async def folded_to_the_end() -> float:
        instance_id = await _open(tools)
        text = (await table.execute(instance_id, {}))[0]
        while MATCH_OVER not in text:
            text = (await act.execute(instance_id, {"action": "fold" if '"fold"' in text else "check"}))[0]
        score = await act.calc_reward(instance_id)
        await _close(tools, instance_id)
        return score

    untouched = asyncio.run(episode(0))
    assert untouched == asyncio.run(folded_to_the_end()) < 0.5
    assert 0.0 <= asyncio.run(episode(3)) <= 1.0


def test_bad_identity_is_a_clear_error_and_stores_nothing(tools: tuple[TableTool, ActTool]) -> None:
    table, _ = tools
    with pytest.raises(ValueError, match="unknown opponent style 'shark'"):
        asyncio.run(table.create("bad", identity={**IDENTITY, "opponent": "shark"}))
    with pytest.raises(ValueError, match="no seed"):
        asyncio.run(table.create("bad", identity={}))
    assert "bad" not in table.instances and "bad" not in _MATCHES


def test_one_episode_id_cannot_hold_two_matches(tools: tuple[TableTool, ActTool]) -> None:
    table, act = tools

    async def episode() -> None:
        await table.create("twice", identity=IDENTITY)
        with pytest.raises(ValueError, match="already plays a match of another identity"):
            await act.create("twice", identity={**IDENTITY, "seed": 124})
        assert "twice" not in act.instances
        await table.release("twice")
        await table.release("twice")  # twice is harmless
        assert "twice" not in _MATCHES

    asyncio.run(episode())


def test_unknown_episode_is_a_clear_error(tools: tuple[TableTool, ActTool]) -> None:
    with pytest.raises(KeyError, match="create"):
        asyncio.run(tools[1].execute("never-created", {"action": "call"}))


def test_schemas() -> None:
    validator = jsonschema.Draft202012Validator(ActTool.parameters)
    assert validator.is_valid({"action": "raise", "amount": 300})
    assert validator.is_valid({"action": "all_in"})
    assert not validator.is_valid({"action": "raise", "amount": 2.5})
    assert not validator.is_valid({"amount": 300})
    assert not validator.is_valid({"action": "new_match"})
    assert jsonschema.Draft202012Validator(TableTool.parameters).is_valid({})
    assert TableTool.parallel_safe and not ActTool.parallel_safe
