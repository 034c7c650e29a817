"""The reference agent through the real rollout engine: it beats the random bot, finishes every group's match,
reads only the tool output, and an episode cut short scores as if the rest were folded; a player who only folds
scores low."""

from __future__ import annotations

import asyncio
import json
import random
import re
from importlib import resources

import pytest
import yaml

from bootcamp_core import EpisodeResult, Registry, RolloutLimits, tool_call_message
from bootcamp_core.testing import generate_records, play_episodes, scripted_policy
from bootcamp_texas_holdem.agent import EquityPlayer, parse_decision
from bootcamp_texas_holdem.cards import parse_cards
from bootcamp_texas_holdem.game import MATCH_OVER, Match, MatchSettings

GROUPS = yaml.safe_load((resources.files("bootcamp_texas_holdem") / "configs" / "default.yaml").read_text())[
    "instruction_generators"]
#: Ten-hand matches against the older bots (the default levels are in test_shortcuts.py).
SHORT = {name: {"config": {"opponents": {name[3:]: 1}, "hands": 10, "starting_stack": 20_000}, "generation_ratio": 1}
         for name in ("vs_random", "vs_loose_aggressive", "vs_tight_passive")}
#: Enough turns for a whole match (the engine's defaults of 10 / 20 stop it after a few hands).
MATCH_LIMITS = RolloutLimits(max_assistant_turns=800, max_user_turns=1600)


def records(registry: Registry, groups: list[str], count: int, seed: int = 42) -> list[dict]:
    data = {"instruction_generators": {name: {**GROUPS, **SHORT}[name] for name in groups},
            "global_config": {"class_name": "texas_holdem/heads_up", "default_seed": seed}}
    return generate_records("texas_holdem", registry, instruction_config=data,
                            overrides={"split_samples": {"test": count}})


def chips(result: EpisodeResult) -> int:
    final = next(line for message in reversed(result.messages) if message["role"] == "tool"
                 for line in message["content"].splitlines() if line.startswith(MATCH_OVER + ":"))
    found = re.search(r"You (won|lost) (\d+) chips in total", final)
    return int(found.group(2)) * (1 if found.group(1) == "won" else -1)


@pytest.fixture(scope="module")
def against_random(registry: Registry) -> list[EpisodeResult]:
    """24 seeded 10-hand matches against the random bot."""
    return play_episodes(records(registry, ["vs_random"], 24), registry, limits=MATCH_LIMITS)


def test_beats_the_random_bot_clearly(against_random: list[EpisodeResult]) -> None:
    won = [chips(result) for result in against_random]
    scores = [result.score for result in against_random]
    assert all(result.ground_truth["opponent"] == "random" for result in against_random)
    assert sum(won) > 24 * 10 * 100 * 5  # more than 5 big blinds per hand over 240 hands
    assert sum(chips > 0 for chips in won) > 12  # most matches (the random bot's wild all-ins swing a few)
    assert sum(scores) / len(scores) > 0.6


def test_plays_whole_matches_through_the_tools(against_random: list[EpisodeResult]) -> None:
    for result in against_random:
        assert (result.success, result.error_type, result.finish_reason) == (True, None, "terminated")
        assert result.tool_calls[0].name == "table" and {call.name for call in result.tool_calls[1:]} == {"act"}
        assert result.turn_record["model_errors"] == 0
        assert result.tool_scores["act"] == result.tool_scores["table"] == result.score
        assert result.messages[-1]["role"] == "assistant" and MATCH_OVER in result.messages[-1]["content"]
        assert result.turn_scores[-1] == result.score  # the interaction read the same result from the text


def test_every_default_group_plays_to_the_end(registry: Registry) -> None:
    results = play_episodes(records(registry, sorted(GROUPS), 4, seed=7), registry, limits=MATCH_LIMITS)
    assert {result.generator_name for result in results} == set(GROUPS)
    for result in results:
        assert result.finish_reason == "terminated" and result.success
        assert 0.0 <= result.score <= 1.0
        assert result.score == result.tool_scores["act"]
        assert sum(message["content"].count(" is over (") for message in result.messages
                   if message["role"] == "tool") == 40


def test_a_match_cut_short_scores_as_folded(registry: Registry) -> None:
    (item,) = records(registry, ["vs_tight_passive"], 1)
    (result,) = play_episodes([item], registry, limits=RolloutLimits())  # the defaults: 10 assistant turns
    assert result.finish_reason in ("max_assistant_turns", "max_user_turns") and result.success
    # the tools scored what was played plus folding from there on, exactly as a fresh match would replay it
    match = Match(MatchSettings.from_identity(result.ground_truth))
    for call in result.tool_calls:
        if call.name == "act":
            match.act(**json.loads(call.arguments))
    assert not match.over
    assert result.score == result.tool_scores["act"] == match.score()


async def _folder(messages: list[dict], tools: list[dict], record: object, rng: random.Random) -> dict:
    """Folds whenever it may, checks otherwise; looks at the table only to start."""
    outputs = [message["content"] for message in messages if message["role"] == "tool"]
    if not outputs:
        return tool_call_message(messages, ("table", {}))
    if MATCH_OVER in outputs[-1]:
        return {"role": "assistant", "content": "Result: I folded."}
    return tool_call_message(messages, ("act", {"action": "fold" if '{"action": "fold"}' in outputs[-1] else "check"}))


def test_a_player_who_only_folds_scores_below_break_even_and_below_the_reference_agent(registry: Registry) -> None:
    """It gives up its blinds. (Duplicate groups are left out: there the score is relative to a par, which may lose
    more than the blinds.)"""
    items = records(registry, ["vs_random", "vs_loose_aggressive"], 12, seed=11)
    folded = play_episodes(items, registry, policy=scripted_policy(_folder), limits=MATCH_LIMITS)
    played = play_episodes(items, registry, limits=MATCH_LIMITS)
    assert all(result.finish_reason == "terminated" for result in folded)
    assert all(result.score < 0.5 for result in folded)
    assert sum(result.score for result in played) > sum(result.score for result in folded)


def test_first_move_is_the_table_and_the_identity_is_never_read() -> None:
    agent = EquityPlayer()
    message = asyncio.run(agent.act([{"role": "user", "content": "Play."}], [], {}, random.Random(0)))
    assert message["tool_calls"][0]["function"] == {"name": "table", "arguments": "{}"}
    match = Match(MatchSettings(seed=3, hands=2))
    messages = [{"role": "user", "content": "Play."}, message,
                {"role": "tool", "tool_call_id": "call_0", "content": match.table_text()}]
    reply = asyncio.run(agent.act(messages, [], {}, random.Random(0)))
    assert reply["tool_calls"][0]["function"]["name"] == "act"
    over = [*messages, {"role": "tool", "content": f"You fold.\n{MATCH_OVER}: all 2 hands have been played. "
                                                   "You lost 150 chips in total (-1.5 big blinds)."}]
    final = asyncio.run(agent.act(over, [], {}, random.Random(0)))
    assert "tool_calls" not in final and final["content"].startswith("Result: " + MATCH_OVER)


def test_parse_decision_reads_the_view() -> None:
    match = Match(MatchSettings(seed=5, hands=2, opponent="tight_passive"))
    match.act("call")
    text = match.table_text()
    decision, bet_name = parse_decision(text, "\n".join(match.hand.log))
    assert decision == match.hero_decision()
    assert bet_name == ("raise" if match.hand.street_has_bet else "bet")
    assert parse_decision("Illegal action: no.") is None
    assert parse_decision(text.replace("Your cards: ", "Your cards: Zz ")) is None
    assert decision.hole == parse_cards(re.search(r"^Your cards: (.+)$", text, re.MULTILINE).group(1))
