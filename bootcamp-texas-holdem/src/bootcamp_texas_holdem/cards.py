"""Cards as small integers, hand strength through pokerkit's own lookup, and seeded Monte Carlo equity.

A card is its index in ``pokerkit.Deck.STANDARD`` (``2c 2d 2h 2s 3c ... As``), so ``card >> 2`` is its rank
(0 = deuce ... 12 = ace) and ``card & 3`` its suit. Strength is pokerkit's: the index of the best five-card
``StandardHighHand`` lookup entry. Every five-card shape is read from pokerkit's lookup once per process, and the best
of a hand that cannot hold a flush is memoised per rank multiset (suits cannot matter then), so bots can afford Monte
Carlo within a few milliseconds. Nothing here touches the global ``random`` module: every draw comes from the
``random.Random`` passed in.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from importlib import resources
from itertools import combinations, combinations_with_replacement

from pokerkit import Deck, StandardHighHand

__all__ = [
    "CARDS",
    "LABEL_FLOORS",
    "RANKS",
    "SUITS",
    "card_text",
    "cards_text",
    "equity",
    "hand_class",
    "hand_classes",
    "parse_cards",
    "preflop_equity",
    "preflop_table",
    "strength",
]

#: pokerkit's 52 cards in deck order; a card id indexes this tuple.
CARDS = tuple(Deck.STANDARD)
RANKS = "23456789TJQKA"
SUITS = "cdhs"
_TEXT = tuple(repr(card) for card in CARDS)
_IDS = {text: card for card, text in enumerate(_TEXT)}
_LOOKUP = StandardHighHand.lookup
if _TEXT[:4] != ("2c", "2d", "2h", "2s") or _TEXT[-1] != "As":  # the id arithmetic relies on this order
    raise ImportError(f"unexpected pokerkit deck order: {' '.join(_TEXT[:8])} ...")

# pokerkit's entry index of every five-card hand shape, filled once from its lookup on first use: by the sorted ranks
# of a hand without a flush (6,175 shapes) and of a flush (1,287). A best-of-seven is then 21 dictionary reads, and
# the answer per rank multiset of a hand that cannot hold a flush is memoised as well (at most 73,775 keys).
_PLAIN: dict[tuple[int, ...], int] = {}
_FLUSH: dict[tuple[int, ...], int] = {}
_BY_RANKS: dict[tuple[int, ...], int] = {}
#: The weakest strength of each pokerkit hand label ("One pair", "Two pair", ...), filled with the tables.
LABEL_FLOORS: dict[str, int] = {}


def card_text(card: int) -> str:
    """``"As"`` for the ace of spades."""
    return _TEXT[card]


def cards_text(cards: Iterable[int]) -> str:
    """Cards separated by spaces, e.g. ``"As Kd"``."""
    return " ".join(_TEXT[card] for card in cards)


def parse_cards(text: str) -> tuple[int, ...]:
    """Card ids from text such as ``"As Kd"`` or ``"AsKd"``; a clear ``ValueError`` for anything else."""
    compact = "".join(text.split())
    if len(compact) % 2:
        raise ValueError(f"cannot read cards from {text!r}")
    cards = []
    for start in range(0, len(compact), 2):
        token = compact[start].upper() + compact[start + 1].lower()
        if token not in _IDS:
            raise ValueError(f"{compact[start:start + 2]!r} is not a card (ranks {RANKS}, suits {SUITS})")
        cards.append(_IDS[token])
    if len(set(cards)) != len(cards):
        raise ValueError(f"duplicate cards in {text!r}")
    return tuple(cards)


def _fill_tables() -> None:
    """Ask pokerkit for the entry of every five-card shape (about 50 ms, once per process)."""
    for ranks in combinations_with_replacement(range(13), 5):
        if max(ranks.count(rank) for rank in ranks) > 4:
            continue
        # Equal ranks are adjacent, so cycling the suits gives them distinct suits and never five of one suit.
        cards = [CARDS[rank * 4 + index % 4] for index, rank in enumerate(ranks)]
        entries = [_LOOKUP.get_entry(cards)]
        _PLAIN[ranks] = entries[0].index
        if len(set(ranks)) == 5:
            entries.append(_LOOKUP.get_entry([CARDS[rank * 4] for rank in ranks]))
            _FLUSH[ranks] = entries[1].index
        for entry in entries:
            label = entry.label.value
            LABEL_FLOORS[label] = min(entry.index, LABEL_FLOORS.get(label, entry.index))


def strength(cards: Sequence[int]) -> int:
    """The strength of the best five-card hand among 5 to 7 cards: pokerkit's entry index, greater is stronger."""
    if not _PLAIN:
        _fill_tables()
    counts = [0, 0, 0, 0]
    for card in cards:
        counts[card & 3] += 1
    if max(counts) < 5:  # no flush possible: the ranks alone decide
        key = tuple(sorted([card >> 2 for card in cards]))
        value = _BY_RANKS.get(key)
        if value is None:
            plain = _PLAIN
            value = _BY_RANKS[key] = max([plain[five] for five in combinations(key, 5)])
        return value
    best = 0
    for five in combinations(sorted(cards), 5):
        suit = five[0] & 3
        ranks = tuple([card >> 2 for card in five])
        if five[1] & 3 == suit and five[2] & 3 == suit and five[3] & 3 == suit and five[4] & 3 == suit:
            value = _FLUSH[ranks]
        else:
            value = _PLAIN[ranks]
        best = max(best, value)
    return best


def _class_name(first: int, second: int) -> str:
    high, low = (first, second) if first >> 2 >= second >> 2 else (second, first)
    if high >> 2 == low >> 2:
        return RANKS[high >> 2] * 2
    return f"{RANKS[high >> 2]}{RANKS[low >> 2]}{'s' if high & 3 == low & 3 else 'o'}"


_CLASS_NAMES = [[_class_name(first, second) for second in range(52)] for first in range(52)]


def hand_class(first: int, second: int) -> str:
    """The pre-flop class of two hole cards: ``"AA"``, ``"AKs"`` (suited) or ``"AKo"`` (offsuit)."""
    return _CLASS_NAMES[first][second]


def hand_classes() -> list[str]:
    """The 169 pre-flop classes, pairs first, then suited and offsuit hands, strongest ranks first."""
    pairs = [rank * 2 for rank in reversed(RANKS)]
    unpaired = [(high, low) for high in reversed(range(13)) for low in reversed(range(high))]
    suited = [f"{RANKS[high]}{RANKS[low]}s" for high, low in unpaired]
    offsuit = [f"{RANKS[high]}{RANKS[low]}o" for high, low in unpaired]
    return pairs + suited + offsuit


@cache
def preflop_table() -> dict[str, float]:
    """The shipped table: each class's equity against one uniformly random hand (see :mod:`.preflop`)."""
    text = (resources.files("bootcamp_texas_holdem") / "data" / "preflop_equity.json").read_text(encoding="utf-8")
    return dict(json.loads(text)["equity"])


def preflop_equity(first: int, second: int) -> float:
    """Equity of two hole cards against a random hand, from the shipped table."""
    return preflop_table()[hand_class(first, second)]


@lru_cache(maxsize=2048)
def _range(board: tuple[int, ...], floor: float, made: int) -> tuple[tuple[int, int], ...]:
    """The holdings off ``board`` whose pre-flop equity is at least ``floor`` and that make at least strength
    ``made`` with it, in deck order (both players of a hand ask for the same ranges on a street)."""
    table = preflop_table()
    dead = set(board)
    return tuple(
        pair for pair in combinations([card for card in range(52) if card not in dead], 2)
        if table[hand_class(*pair)] >= floor and (not made or strength([*pair, *board]) >= made)
    )


def equity(
    hole: Sequence[int],
    board: Sequence[int],
    rng: random.Random,
    samples: int,
    opponent_floor: float = 0.0,
    opponent_made: str | None = None,
) -> float:
    """Share of pots won (ties count half) against the opponent's range over ``samples`` random run-outs.

    The range is every hand the opponent can hold, narrowed to those whose pre-flop equity is at least
    ``opponent_floor`` and that already make at least ``opponent_made`` (a pokerkit label such as ``"Two pair"``)
    with the board; when nothing is left it stays wide.
    """
    if not _PLAIN:
        _fill_tables()
    dead = set(hole) | set(board)
    live = [card for card in range(52) if card not in dead]
    missing = 5 - len(board)
    hole, board = list(hole), list(board)
    known = strength(hole + board) if missing == 0 else None
    holdings = None
    if opponent_floor > 0 or (opponent_made and board):
        made = LABEL_FLOORS[opponent_made] if opponent_made and board else 0
        mine_cards = set(hole)
        holdings = [pair for pair in _range(tuple(board), opponent_floor, made)
                    if pair[0] not in mine_cards and pair[1] not in mine_cards] or None
    won = 0.0
    for _ in range(samples):
        if holdings is None:
            drawn = rng.sample(live, missing + 2)
            theirs_hole, runout = drawn[:2], board + drawn[2:]
        else:
            theirs_hole = holdings[rng.randrange(len(holdings))]
            drawn = rng.sample(live, missing + 2)
            runout = board + [card for card in drawn if card not in theirs_hole][:missing]
        mine = known if known is not None else strength(hole + runout)
        theirs = strength([*theirs_hole, *runout])
        won += 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
    return won / samples if samples else 0.5
