"""The match engine on pokerkit: chips, legality, positions, duplicate deals, determinism, illegal actions."""

from __future__ import annotations

import random

import pytest

from bootcamp_texas_holdem.bots import BOTS, Decision, RandomBot, make_bot
from bootcamp_texas_holdem.game import (
    ACTIONS,
    MATCH_OVER,
    IllegalAction,
    Match,
    MatchOver,
    MatchSettings,
    match_score,
)


def _random_action(decision: Decision, rng: random.Random) -> dict:
    """Any action a careless player might send: legal or not, amounts in range or not."""
    action = rng.choice(ACTIONS + ("raise", "call", "check"))
    arguments = {"action": action}
    if rng.random() < 0.6:
        low = decision.min_raise_to or decision.big_blind
        high = decision.max_raise_to or low * 3
        arguments["amount"] = rng.choice([rng.randint(low, high), rng.randint(1, low), high + rng.randint(1, 500),
                                          -5, 1.5, "300", None])
    return arguments


def _legal(decision: Decision, move: tuple[str, int | None]) -> bool:
    kind, amount = move
    if kind == "fold":
        return decision.to_call > 0 and decision.can_fold
    if kind == "raise":
        return decision.min_raise_to is not None and decision.min_raise_to <= amount <= decision.max_raise_to
    return kind == "check_call"


@pytest.mark.parametrize("opponent", sorted(BOTS))
def test_chips_are_conserved_and_every_move_is_legal_over_many_hands(opponent: str) -> None:
    """A careless hero through act() against each bot, 300 hands per style: chips conserved, refusals harmless."""
    rng = random.Random(opponent)
    hands = refused = accepted = 0
    for seed in range(4):
        settings = MatchSettings(seed=seed, hands=75, opponent=opponent)
        match = Match(settings)
        while not match.over:
            decision = match.hero_decision()
            before = (match.table_text(), match.results[:], match.actions)
            arguments = _random_action(decision, rng)
            try:
                match.act(arguments["action"], arguments.get("amount"))
                accepted += 1
            except IllegalAction:
                refused += 1
                assert (match.table_text(), match.results, match.actions) == before  # nothing changed
        hands += len(match.results)
        for hero, finished in zip(match.results, match.finished, strict=True):
            assert sum(finished.payoffs) == 0 and finished.payoffs[finished.hero] == hero
            assert abs(hero) <= settings.starting_stack
        assert match.chips_won == sum(match.results)
    assert hands == 300 and accepted > 300 and refused > 100


@pytest.mark.slow
def test_bot_against_bot_thousands_of_hands_stay_legal_and_balanced() -> None:
    """Every bot's every move is legal in every pairing, and pokerkit's payoffs always sum to zero (3,200 hands)."""
    rng = random.Random(0)
    styles = sorted(BOTS)
    hands = 0
    for seed in range(64):  # every pairing of the styles at least once
        hero = make_bot(styles[seed % len(styles)])
        match = Match(MatchSettings(seed=seed, hands=50, opponent=styles[(seed // len(styles)) % len(styles)],
                                    starting_stack=rng.choice([500, 2_000, 20_000])))
        while not match.over:
            decision = match.hero_decision()
            move = hero.decide(decision, rng)
            assert _legal(decision, move), (decision, move)
            match.play(move)
        assert all(sum(finished.payoffs) == 0 for finished in match.finished)
        hands += len(match.results)
    assert hands == 3_200


def test_positions_alternate_and_blinds_are_posted() -> None:
    match = Match(MatchSettings(seed=3, hands=6, opponent="tight_passive"))
    while not match.over:
        hand = match.hand
        log = "\n".join(hand.log)
        assert ("you are the button (small blind)" in log) == (hand.number % 2 == 1)
        assert ("You post the small blind of 50." in log) == (hand.number % 2 == 1)
        assert ("You post the big blind of 100." in log) == (hand.number % 2 == 0)
        match.play(("check_call", None))
    # heads-up, pokerkit seats the button (small blind) as player 1
    assert [finished.hero for finished in match.finished] == [1, 0, 1, 0, 1, 0]


def test_duplicate_deals_are_played_from_both_seats() -> None:
    match = Match(MatchSettings(seed=11, hands=6, duplicate=True, opponent="random"))
    while not match.over:
        match.play(("check_call", None))
    hands = match.finished
    for first, second in zip(hands[0::2], hands[1::2]):
        assert first.deal == second.deal and first.hero != second.hero
        # the hero now holds the cards the bot held, in the bot's seat, on the same board
        assert second.holes[second.hero] == first.holes[second.hero]
        assert second.holes[first.hero] == first.holes[first.hero]
        assert first.board[:len(second.board)] == second.board[:len(first.board)]
    assert len({finished.deal for finished in hands}) == 3
    plain = Match(MatchSettings(seed=11, hands=4))
    while not plain.over:
        plain.play(("check_call", None))
    assert len({finished.deal for finished in plain.finished}) == 4


def _transcript(seed: int, opponent: str) -> list[str]:
    match = Match(MatchSettings(seed=seed, hands=6, opponent=opponent))
    texts = [match.table_text()]
    rng = random.Random(1)
    while not match.over:
        texts.append(match.play(RandomBot().decide(match.hero_decision(), rng)))
    return texts


@pytest.mark.parametrize("opponent", sorted(BOTS))
def test_same_seed_same_match(opponent: str) -> None:
    assert _transcript(5, opponent) == _transcript(5, opponent)
    assert _transcript(5, opponent) != _transcript(6, opponent)


def test_leaves_the_global_random_module_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    before = random.getstate()

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the global random module must not be used")

    for function in ("random", "randint", "randrange", "choice", "choices", "uniform", "getrandbits", "sample"):
        monkeypatch.setattr(random, function, forbidden)
    for opponent in sorted(BOTS):
        _transcript(2, opponent)
    monkeypatch.undo()
    # pokerkit shuffles its own (unused) deck with the global generator; the match puts its state back
    assert random.getstate() == before


@pytest.mark.parametrize(
    ("action", "amount", "message"),
    [
        ("check", None, "you cannot check: you face a bet of 50"),
        ("bet", 300, "use raise"),
        ("raise", None, "raise needs an amount"),
        ("raise", 150, "out of range"),
        ("raise", 20_001, "from 200 to 20000"),
        ("raise", 250.5, "whole number"),
        ("raise", "lots", "whole number"),
        ("raise", True, "whole number"),
        ("fold", 100, "takes no amount"),
        ("call", 999, "takes no amount"),
        ("dance", None, "unknown action 'dance'"),
        (7, None, "action must be a string"),
        ("raise", "9" * 5000, r"whole number of chips, got '9999.*\.\.\.9*'$"),  # echoed, but cut short
    ],
)
def test_illegal_actions_are_refused_and_change_nothing(action: object, amount: object, message: str) -> None:
    match = Match(MatchSettings(seed=1, hands=3))
    before = match.table_text()
    with pytest.raises(IllegalAction, match=message):
        match.act(action, amount)
    assert match.table_text() == before and match.actions == 0


def test_postflop_action_names_and_amount_forms() -> None:
    match = Match(MatchSettings(seed=2, hands=2, opponent="tight_passive"))
    match.act("call", "50")  # a call may name its own cost
    while match.hero_decision() is not None and not match.hand.board:
        match.act("check" if not match.hero_decision().to_call else "call")
    decision = match.hero_decision()
    if decision is not None and match.hand.number == 1 and not decision.to_call:
        with pytest.raises(IllegalAction, match="use bet"):
            match.act("raise", 200)
        with pytest.raises(IllegalAction, match="nothing to call"):
            match.act("fold")
        text = match.act("BET", " 1,00 ")  # spacing, case and separators are forgiven; the amount is 100
        assert "You bet 100." in text


def test_all_in_and_short_stacks() -> None:
    match = Match(MatchSettings(seed=4, hands=2, opponent="random", starting_stack=1_000))
    with pytest.raises(IllegalAction, match="all_in takes no amount"):
        match.act("all_in", 900)
    text = match.act("all-in", 1_000)  # naming the exact total is fine
    assert "You raise to 1000 (all-in)." in text
    assert "Hand 1 is over" in text
    assert "Hand 2 of 2 begins" in text or MATCH_OVER in text


def test_match_end_and_later_actions() -> None:
    match = Match(MatchSettings(seed=9, hands=2, opponent="random"))
    while not match.over:
        decision = match.hero_decision()
        match.act("fold" if decision.to_call else "check")
    assert match.hero_decision() is None
    assert match.decision_text().startswith(MATCH_OVER)
    assert match.table_text().splitlines()[-1].startswith(MATCH_OVER + ":")
    with pytest.raises(MatchOver, match="No more actions"):
        match.act("check")
    assert len(match.results) == 2


def test_forfeit_counts_the_rest_as_folded_and_changes_nothing() -> None:
    match = Match(MatchSettings(seed=21, hands=6, opponent="loose_aggressive"))
    match.act("call")
    before = match.table_text()
    forfeit = match.forfeit_chips()
    assert match.table_text() == before and len(match.results) <= 1
    twin = Match(MatchSettings(seed=21, hands=6, opponent="loose_aggressive"))
    twin.act("call")
    while not twin.over:
        decision = twin.hero_decision()
        twin.act("fold" if decision.to_call else "check")
    assert forfeit == twin.chips_won
    assert match.score() == match_score(forfeit, match.settings.score_scale)
    # scoring did not advance the bot's generator: the match goes on exactly like its twin would
    replay = Match(MatchSettings(seed=21, hands=6, opponent="loose_aggressive"))
    replay.act("call")
    assert match.act("fold" if match.hero_decision().to_call else "check") == replay.act(
        "fold" if replay.hero_decision().to_call else "check"
    )


def test_match_score_squashes_chips_around_one_half() -> None:
    assert match_score(0, 5_000) == 0.5
    assert match_score(5_000, 5_000) == pytest.approx(0.5 + 0.5 * 0.7615941559557649)
    assert match_score(-5_000, 5_000) == pytest.approx(1 - match_score(5_000, 5_000))
    values = [match_score(chips, 5_000) for chips in (-40_000, -1_000, 0, 1_000, 40_000)]
    assert values == sorted(values) and all(0.0 <= value <= 1.0 for value in values)


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        ({}, "no seed"),
        ({"seed": "7"}, "seed must be an integer"),
        ({"seed": 1, "hands": 0}, "hands must be between"),
        ({"seed": 1, "hands": 3, "duplicate": True}, "even number"),
        ({"seed": 1, "small_blind": 200}, "small_blind <= big_blind"),
        ({"seed": 1, "starting_stack": 100}, "must exceed the big blind"),
        ({"seed": 1, "opponent": "shark"}, "unknown opponent style 'shark'"),
        ({"seed": 1, "score_scale": 0}, "score_scale"),
        ({"seed": 1, "reveal_opponent": "yes"}, "true or false"),
        ({"seed": 1, "deck": "stacked"}, "unknown identity field"),
        ([1, 2], "must be a dict"),
    ],
)
def test_bad_settings_are_clear_errors(identity: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MatchSettings.from_identity(identity)
