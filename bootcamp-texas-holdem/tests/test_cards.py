"""Cards, pokerkit-backed hand strength and seeded equity."""

from __future__ import annotations

import random

import pytest
from pokerkit import StandardHighHand

from bootcamp_texas_holdem.cards import (
    CARDS,
    cards_text,
    equity,
    hand_class,
    hand_classes,
    parse_cards,
    strength,
)


def _pokerkit(hole: list[int], board: list[int]) -> StandardHighHand:
    return StandardHighHand.from_game([CARDS[card] for card in hole], [CARDS[card] for card in board])


def _deals(count: int, seed: int) -> list[list[int]]:
    """Random 9-card deals (two holes and a board), every other one rich in one suit so flushes are common."""
    rng = random.Random(seed)
    deals = []
    for index in range(count):
        if index % 2:
            suit = rng.randrange(4)
            cards = rng.sample([c for c in range(52) if c & 3 == suit], 6)
            cards += rng.sample([c for c in range(52) if c & 3 != suit], 3)
            rng.shuffle(cards)
        else:
            cards = rng.sample(range(52), 9)
        deals.append(cards)
    return deals


@pytest.mark.parametrize("board_size", [3, 4, 5])
def test_strength_orders_hands_exactly_like_pokerkit(board_size: int) -> None:
    for cards in _deals(400, board_size):
        board = cards[4:4 + board_size]
        first, second = cards[:2], cards[2:4]
        ours = (strength(first + board), strength(second + board))
        theirs = (_pokerkit(first, board), _pokerkit(second, board))
        assert (ours[0] > ours[1]) == (theirs[0] > theirs[1]), cards_text(cards)
        assert (ours[0] == ours[1]) == (theirs[0] == theirs[1]), cards_text(cards)


def test_strength_of_known_hands() -> None:
    royal = strength(parse_cards("As Ks Qs Js Ts 2c 3d"))
    quads = strength(parse_cards("Ac Ad Ah As Kc 2c 3d"))
    wheel = strength(parse_cards("Ac 2d 3h 4s 5c 9d Jd"))
    pair = strength(parse_cards("Ac Ad 3h 4s 9c Td Jd"))
    assert royal > quads > wheel > pair
    # the board plays: both players split
    board = parse_cards("As Ks Qs Js Ts")
    assert strength(parse_cards("2c 3d") + board) == strength(parse_cards("4c 5d") + board)


def test_card_text_round_trip_and_errors() -> None:
    assert [cards_text([card]) for card in (0, 1, 51)] == ["2c", "2d", "As"]
    assert parse_cards("As Kd") == parse_cards("asKD") == (51, 45)
    assert cards_text(parse_cards("Th 9c")) == "Th 9c"
    for bad in ("Xs", "A", "As As", "1c"):
        with pytest.raises(ValueError):
            parse_cards(bad)


def test_hand_classes() -> None:
    classes = hand_classes()
    assert len(classes) == len(set(classes)) == 169
    assert sum(len(name) == 2 for name in classes) == 13
    assert sum(name.endswith("s") for name in classes) == sum(name.endswith("o") for name in classes) == 78
    assert hand_class(*parse_cards("As Ad")) == "AA"
    assert hand_class(*parse_cards("Kh Ah")) == "AKs"
    assert hand_class(*parse_cards("2c 7d")) == "72o"
    # every one of the 1,326 starting hands falls in a listed class, with the right number of combinations
    counts: dict[str, int] = {}
    for first in range(52):
        for second in range(first + 1, 52):
            name = hand_class(first, second)
            counts[name] = counts.get(name, 0) + 1
    assert set(counts) == set(classes)
    assert {counts["AA"], counts["AKs"], counts["AKo"]} == {6, 4, 12}


def test_equity_is_seeded_and_sensible() -> None:
    hole, flop = parse_cards("Ah Kh"), parse_cards("Kd 7c 2s")
    first = equity(hole, flop, random.Random(3), 400)
    assert first == equity(hole, flop, random.Random(3), 400)
    assert 0.84 <= first <= 0.95  # top pair, top kicker on a dry flop (~0.89 against a random hand)
    # on the river the result is exact up to sampling of the opponent only
    nuts = parse_cards("As Ks Qs Js Ts")
    assert equity(parse_cards("2c 3d"), nuts, random.Random(0), 50) == 0.5  # the board plays: always a split
    assert equity(parse_cards("9s 2c"), parse_cards("Ks Qs Js Ts 3d"), random.Random(0), 50) == 1.0


def test_opponent_ranges_lower_equity() -> None:
    hole, board = parse_cards("Qh Jd"), parse_cards("Qc 8s 3d 2h")
    wide = equity(hole, board, random.Random(1), 400)
    strong = equity(hole, board, random.Random(1), 400, opponent_made="Two pair")
    premium = equity(parse_cards("7h 6h"), (), random.Random(1), 400, opponent_floor=0.6)
    assert strong < wide - 0.3
    assert premium < 0.4 < equity(parse_cards("7h 6h"), (), random.Random(1), 400)


def test_never_touches_the_global_random_module() -> None:
    before = random.getstate()
    equity(parse_cards("Ah Kh"), parse_cards("Kd 7c 2s"), random.Random(3), 50, opponent_floor=0.5)
    strength(parse_cards("Ac Ad Ah As Kc 2c 3d"))
    assert random.getstate() == before
