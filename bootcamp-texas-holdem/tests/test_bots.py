"""The bots: determinism, their styles, legal moves, and the strong bot beating the weaker styles in duplicate."""

from __future__ import annotations

import random
import statistics

import pytest

from bootcamp_texas_holdem.bots import (
    BOTS,
    POSTFLOP_SAMPLES,
    STYLES,
    Decision,
    RandomBot,
    make_bot,
    pot_odds_action,
)
from bootcamp_texas_holdem.cards import parse_cards
from bootcamp_texas_holdem.game import Match, MatchSettings


def decision(hole: str, board: str = "", **overrides: object) -> Decision:
    fields = {"hole": parse_cards(hole), "board": parse_cards(board), "pot": 150, "to_call": 50, "can_fold": True,
              "min_raise_to": 200, "max_raise_to": 20_000, "my_bet": 50, "stack": 19_950, "big_blind": 100,
              "button": True}
    fields.update(overrides)
    return Decision(**fields)


def _decisions(count: int) -> list[Decision]:
    """Varied real decisions, collected from matches of the strong bot against itself."""
    found = []
    seed = 0
    while len(found) < count:
        match = Match(MatchSettings(seed=seed, hands=20, opponent="strong"))
        hero, rng = make_bot("strong"), random.Random(seed)
        while not match.over:
            found.append(match.hero_decision())
            match.play(hero.decide(found[-1], rng))
        seed += 1
    return found[:count]


DECISIONS = _decisions(300)


@pytest.mark.parametrize("style", sorted(BOTS))
def test_same_decision_and_seed_same_move(style: str) -> None:
    bot = make_bot(style)
    first = [bot.decide(item, random.Random(index)) for index, item in enumerate(DECISIONS)]
    again = [make_bot(style).decide(item, random.Random(index)) for index, item in enumerate(DECISIONS)]
    assert first == again


def test_random_bot_uses_every_legal_kind_and_the_whole_range() -> None:
    rng = random.Random(0)
    moves = [RandomBot().decide(decision("7c 2d"), rng) for _ in range(300)]
    assert {kind for kind, _ in moves} == {"fold", "check_call", "raise"}
    amounts = [amount for kind, amount in moves if kind == "raise"]
    assert min(amounts) < 5_000 and max(amounts) > 15_000 and all(200 <= amount <= 20_000 for amount in amounts)
    # no bet to face: folding is not among its moves
    free = [RandomBot().decide(decision("7c 2d", to_call=0, can_fold=False), rng)[0] for _ in range(100)]
    assert "fold" not in free


def test_styles_differ_as_described() -> None:
    """Over the same decisions: the loose-aggressive bot raises most and folds least, the tight-passive one the
    opposite, and the strong one in between on both counts."""
    rates = {}
    for style in ("loose_aggressive", "strong", "tight_passive"):
        bot = make_bot(style)
        moves = [bot.decide(item, random.Random(index)) for index, item in enumerate(DECISIONS)]
        facing = [move for move, item in zip(moves, DECISIONS) if item.to_call]
        rates[style] = (
            sum(kind == "raise" for kind, _ in moves) / len(moves),
            sum(kind == "fold" for kind, _ in facing) / len(facing),
        )
    assert rates["loose_aggressive"][0] > rates["strong"][0] > rates["tight_passive"][0]
    assert rates["loose_aggressive"][1] < rates["strong"][1] < rates["tight_passive"][1]


def test_pot_odds_rule() -> None:
    rng = random.Random(0)
    # the nuts: raise for value
    assert pot_odds_action(decision("As Ks", "Qs Js Ts 2c", to_call=0, can_fold=False), rng)[0] == "raise"
    # junk against a pot-sized bet on the river: fold
    assert pot_odds_action(decision("7c 2d", "As Ks 9h 4s 3c", pot=1_000, to_call=500), rng) == ("fold", None)
    # a flush draw is priced in against a tiny bet
    assert pot_odds_action(decision("8h 9h", "Ah Kh 2c", pot=2_000, to_call=100), rng) == ("check_call", None)
    # when raising is impossible a value hand calls
    assert pot_odds_action(decision("As Ad", min_raise_to=None, max_raise_to=None), rng) == ("check_call", None)


def test_raise_sizes_stay_in_the_legal_range() -> None:
    item = decision("As Ad", pot=10_000, to_call=5_000, min_raise_to=10_000, max_raise_to=12_000, my_bet=0)
    assert item.raise_to(1.0) == 12_000
    assert decision("As Ad").raise_to(0.0) == 200
    assert decision("As Ad", min_raise_to=None, max_raise_to=None).raise_to(1.0) is None
    assert decision("As Ad", to_call=100, pot=300).pot_odds == 0.25


def test_descriptions_and_unknown_styles() -> None:
    assert set(STYLES) == {"random", "loose_aggressive", "tight_passive", "strong", "adaptive", "adaptive_aggressive"}
    assert all(text.startswith(("a ", "an ")) and "bot" in text for text in STYLES.values())
    assert POSTFLOP_SAMPLES <= 50
    with pytest.raises(ValueError, match="unknown opponent style 'shark'; choose from random"):
        make_bot("shark")


def _duplicate_results(opponent: str, matches: int, hands: int) -> list[int]:
    results = []
    for seed in range(matches):
        match = Match(MatchSettings(seed=seed, hands=hands, duplicate=True, opponent=opponent))
        hero, rng = make_bot("strong"), random.Random(f"strong:{seed}")
        while not match.over:
            match.play(hero.decide(match.hero_decision(), rng))
        results.append(match.chips_won)
    return results


@pytest.mark.slow
@pytest.mark.parametrize(("opponent", "matches"), [("loose_aggressive", 20), ("tight_passive", 40)])
def test_strong_bot_beats_the_weaker_styles_in_duplicate_matches(opponent: str, matches: int) -> None:
    """Seeded duplicate matches of 100 hands at the default 200-big-blind stacks: every deal is played from both
    seats, so the cards' luck largely cancels. The tight-passive bot loses slowly (it gives little away), so it gets
    more matches for the same confidence."""
    results = _duplicate_results(opponent, matches, 100)
    mean = statistics.mean(results)
    standard_error = statistics.stdev(results) / len(results) ** 0.5
    per_hand = 100 * 100  # chips per match -> big blinds per hand
    print(f"strong vs {opponent}: {mean / per_hand:+.2f} bb/hand over {len(results)} matches, "
          f"{sum(chips > 0 for chips in results)} won, standard error {standard_error / per_hand:.2f} bb/hand")
    assert mean > 3 * standard_error > 0
    assert sum(chips > 0 for chips in results) >= 0.7 * matches


def test_adaptive_bots_call_lighter_against_a_player_who_always_raises() -> None:
    """The same shove to call: often folded against a normal raiser (whose shove means a good hand), always called
    against one who raises every time (whose shove means nothing)."""
    facing = {"hole": parse_cards("Jc 4d"), "board": (), "pot": 10_100, "to_call": 9_900, "can_fold": True,
              "min_raise_to": None, "max_raise_to": None, "my_bet": 100, "stack": 9_900, "big_blind": 100,
              "button": False, "opponent_aggression": 1}
    for style in ("adaptive", "adaptive_aggressive"):
        bot = make_bot(style)
        normal = [bot.decide(Decision(**facing, opponent_decisions=40, opponent_raises=8), random.Random(seed))[0]
                  for seed in range(40)]
        maniac = [bot.decide(Decision(**facing, opponent_decisions=40, opponent_raises=40), random.Random(seed))[0]
                  for seed in range(40)]
        assert normal.count("fold") >= 5 and "fold" not in maniac, (style, normal.count("fold"))


def test_adaptive_bots_reraise_strong_hands_and_mix_their_moves() -> None:
    bot = make_bot("adaptive")
    moves = [bot.decide(decision("As Ad", to_call=200, pot=400, opponent_aggression=1), random.Random(seed))[0]
             for seed in range(20)]
    assert set(moves) == {"raise"}
    first_in = [bot.decide(decision("Kc 9d", to_call=50, pot=150), random.Random(seed))[0] for seed in range(60)]
    assert {"raise", "check_call"} <= set(first_in)  # a mixed frequency, not one fixed answer
