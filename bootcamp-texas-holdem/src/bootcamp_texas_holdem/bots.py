"""The opponents: random, loose-aggressive, tight-passive and strong bots, plus the equity-and-pot-odds rule.

Every bot sees only a :class:`Decision` (what a player at the table sees) and draws only from the ``random.Random``
passed in, so a match is a pure function of its seed. Pre-flop they read the shipped 169-class table; after the flop
they estimate equity from at most :data:`POSTFLOP_SAMPLES` seeded run-outs, which keeps a decision to a few
milliseconds.
"""

from __future__ import annotations

import random
from typing import ClassVar

import attrs

from bootcamp_texas_holdem.cards import equity, preflop_equity

__all__ = [
    "BOTS",
    "POSTFLOP_SAMPLES",
    "STYLES",
    "AdaptiveBot",
    "AggressiveAdaptiveBot",
    "Bot",
    "Decision",
    "LooseAggressiveBot",
    "RandomBot",
    "StrongBot",
    "TightPassiveBot",
    "make_bot",
    "pot_odds_action",
]

#: Most Monte Carlo run-outs a bot draws for one decision after the flop.
POSTFLOP_SAMPLES = 48

#: How a player acts: ``("fold", None)``, ``("check_call", None)`` or ``("raise", total_bet_on_this_street)``.
Action = tuple[str, "int | None"]


@attrs.frozen(kw_only=True)
class Decision:
    """What the player to act sees: cards, chips and the legal range of a bet or raise."""

    hole: tuple[int, ...]
    board: tuple[int, ...]
    pot: int  # every chip in the middle, this street's bets included
    to_call: int
    can_fold: bool
    min_raise_to: int | None  # None when betting or raising is not possible
    max_raise_to: int | None
    my_bet: int  # what this player has put in on this street
    stack: int  # chips behind
    big_blind: int
    button: bool  # on the button: acts first pre-flop, last after the flop
    opponent_aggression: int = 0  # bets and raises by the opponent in this hand (blinds excluded)
    opponent_postflop_aggression: int = 0  # those of them after the flop
    opponent_entered: bool = False  # the opponent put chips in before the flop by choice (a call or a raise)
    opponent_decisions: int = 0  # the opponent's decisions over the match so far (this hand included)
    opponent_raises: int = 0  # how many of them were bets or raises

    @property
    def opponent_raise_rate(self) -> float:
        """The share of the opponent's decisions this match that were bets or raises, shrunk towards 0.25 (a
        prior worth 8 decisions) so that a few hands do not swing it."""
        return (self.opponent_raises + 2.0) / (self.opponent_decisions + 8.0)

    @property
    def street(self) -> int:
        """0 pre-flop, 1 flop, 2 turn, 3 river."""
        return max(0, len(self.board) - 2)

    @property
    def pot_odds(self) -> float:
        """The share of the final pot a call costs: the equity a call needs to break even."""
        return self.to_call / (self.pot + self.to_call) if self.to_call else 0.0

    def raise_to(self, pot_fraction: float) -> int | None:
        """A legal raise-to amount that adds ``pot_fraction`` of the pot after calling; None when raising is illegal."""
        if self.min_raise_to is None or self.max_raise_to is None:
            return None
        target = self.my_bet + self.to_call + round(pot_fraction * (self.pot + self.to_call))
        return max(self.min_raise_to, min(self.max_raise_to, target))


def _raise_or_call(decision: Decision, pot_fraction: float) -> Action:
    amount = decision.raise_to(pot_fraction)
    return ("raise", amount) if amount is not None else ("check_call", None)


def _fold_or_check(decision: Decision) -> Action:
    return ("fold", None) if decision.to_call and decision.can_fold else ("check_call", None)


def _equity(
    decision: Decision, rng: random.Random, opponent_floor: float = 0.0, opponent_made: str | None = None
) -> float:
    if not decision.board and opponent_floor <= 0:
        return preflop_equity(*decision.hole)
    return equity(decision.hole, decision.board, rng, POSTFLOP_SAMPLES, opponent_floor, opponent_made)


def pot_odds_action(decision: Decision, rng: random.Random, value_threshold: float = 0.65) -> Action:
    """The plain equity-and-pot-odds rule: bet or raise for value, call when the price is right, else fold or check.

    Equity against a random hand; a call needs equity above the pot odds, a bet or raise needs ``value_threshold``.
    """
    hand_equity = _equity(decision, rng)
    if hand_equity >= value_threshold + 0.1 * decision.opponent_aggression:
        return _raise_or_call(decision, 0.75)
    if not decision.to_call or hand_equity >= decision.pot_odds:
        return ("check_call", None)
    return _fold_or_check(decision)


class Bot:
    """A deterministic opponent: its moves depend only on the decision and the rng it is given."""

    style: ClassVar[str]
    description: ClassVar[str]

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        """The bot's move."""
        raise NotImplementedError


class RandomBot(Bot):
    """Picks uniformly among the legal kinds of move; a bet or raise goes to a uniform amount in the legal range."""

    style = "random"
    description = "a random bot: it picks uniformly among its legal moves and bets random amounts"

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        kinds = ["check_call"]
        if decision.to_call and decision.can_fold:
            kinds.append("fold")
        if decision.min_raise_to is not None and decision.max_raise_to is not None:
            kinds.append("raise")
        kind = rng.choice(kinds)
        if kind == "raise":
            return "raise", rng.randint(decision.min_raise_to, decision.max_raise_to)  # type: ignore[arg-type]
        return kind, None


class LooseAggressiveBot(Bot):
    """Plays most hands and bets and raises pot-sized, often without the cards for it."""

    style = "loose_aggressive"
    description = (
        "a loose-aggressive bot: it plays most hands and bets and raises big and often, frequently as a bluff"
    )
    bluff_rate = 0.3

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        hand_equity = _equity(decision, rng)
        wants_to_raise = (
            hand_equity >= 0.6 or (hand_equity >= 0.45 and rng.random() < 0.5) or rng.random() < self.bluff_rate
        )
        if wants_to_raise and (decision.opponent_aggression < 3 or hand_equity >= 0.7):  # it stops a raising war
            return _raise_or_call(decision, 1.0)
        if not decision.to_call or hand_equity >= decision.pot_odds - 0.1 or (
            not decision.board and hand_equity >= 0.36
        ):
            return ("check_call", None)
        return _fold_or_check(decision)


class TightPassiveBot(Bot):
    """Plays only good hands and mostly checks and calls; it bets or raises only with very strong ones."""

    style = "tight_passive"
    description = (
        "a tight-passive bot: it plays only good hands and mostly checks and calls; it bets or raises only "
        "with very strong hands"
    )

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        hand_equity = _equity(decision, rng)
        if not decision.board:
            if hand_equity >= 0.72 and decision.opponent_aggression < 2:
                return _raise_or_call(decision, 0.5)
            if not decision.to_call or hand_equity >= 0.56:
                return ("check_call", None)
            return _fold_or_check(decision)
        if hand_equity >= 0.88 and rng.random() < 0.6:
            return _raise_or_call(decision, 0.5)
        if not decision.to_call or hand_equity >= decision.pot_odds + 0.1:
            return ("check_call", None)
        return _fold_or_check(decision)


class StrongBot(Bot):
    """Equity against the range the opponent's aggression suggests, pot odds and position."""

    style = "strong"
    description = (
        "a strong bot: it weighs its equity against the range your betting suggests, the pot odds and its position"
    )
    #: Pre-flop equity floor of the opponent's range after 0, 1, 2, 3+ bets or raises in the hand.
    range_floors: ClassVar[tuple[float, ...]] = (0.0, 0.5, 0.58, 0.64)
    #: Pre-flop equity floor of the opponent's range after the flop when it chose to play before the flop.
    entered_floor = 0.5
    #: The made hand the opponent's range holds at least after 0, 1, 2, 3+ bets or raises after the flop.
    made_floors: ClassVar[tuple[str | None, ...]] = (None, None, "One pair", "Two pair")
    open_equity = 0.45  # raise first in, or over a limp, from here
    reraise_equity = 0.66  # raise pre-flop over a raise from here
    preflop_call_margin = 0.08
    bet_equity = 0.62  # bet for value after the flop
    stab_equity = 0.5  # bet in position when checked to, half the time
    raise_equity = 0.8
    call_margin = 0.03

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        floor = self.range_floors[min(decision.opponent_aggression, len(self.range_floors) - 1)]
        if decision.board and decision.opponent_entered:
            floor = max(floor, self.entered_floor)
        made = self.made_floors[min(decision.opponent_postflop_aggression, len(self.made_floors) - 1)]
        hand_equity = _equity(decision, rng, floor, made)
        if not decision.board:
            return self._preflop(decision, hand_equity)
        if not decision.to_call:
            if hand_equity >= self.bet_equity:
                return _raise_or_call(decision, 0.66)
            if decision.button and hand_equity >= self.stab_equity and rng.random() < 0.5:
                return _raise_or_call(decision, 0.5)
            return ("check_call", None)
        if hand_equity >= self.raise_equity:
            return _raise_or_call(decision, 0.8)
        if hand_equity >= decision.pot_odds + self.call_margin:
            return ("check_call", None)
        return _fold_or_check(decision)

    def _preflop(self, decision: Decision, hand_equity: float) -> Action:
        unraised = decision.opponent_aggression == 0 and decision.to_call <= decision.big_blind
        if hand_equity >= self.reraise_equity or (unraised and hand_equity >= self.open_equity):
            return _raise_or_call(decision, 0.75 if unraised else 1.0)
        if not decision.to_call or hand_equity >= decision.pot_odds + self.preflop_call_margin:
            return ("check_call", None)
        return _fold_or_check(decision)


class AdaptiveBot(Bot):
    """Equity-aware with mixed frequencies: it weighs its equity against the range the opponent's betting suggests,
    re-raises strong hands, bluffs now and then, and reads the opponent's betting over the whole match, so it calls
    down lighter against an opponent who bets or raises all the time.

    Subclasses tune the frequencies; every choice is drawn from the rng passed in.
    """

    style = "adaptive"
    description = (
        "an adaptive equity bot: it weighs its equity against the range your betting suggests, mixes raises, calls "
        "and folds, re-raises strong hands, bluffs sometimes and calls down lighter if you bet or raise a lot"
    )
    #: Pre-flop equity floor of a normal opponent's range after 0, 1, 2, 3+ bets or raises in the hand (it reads the
    #: range loosely: it never assumes a made hand after the flop, so it pays off value bets).
    range_floors: ClassVar[tuple[float, ...]] = (0.0, 0.3, 0.38, 0.45)
    open_equity = 0.5  # raise first in from here (a share of the time below value_equity)
    open_rate = 0.8
    value_equity = 0.64  # bet or raise for value from here
    reraise_equity = 0.72  # re-raise a raise from here
    call_margin = -0.08  # it calls light: a price for the chance the bet is a bluff
    bluff_rate = 0.12  # bet a weak hand when checked to
    #: Raise rate of the opponent above which its bets say less and less about its cards (fully nothing at +0.3).
    maniac_rate = 0.35

    def _discount(self, decision: Decision) -> float:
        """1 against an opponent who bets like a normal player, falling to 0 against one who always bets."""
        excess = (decision.opponent_raise_rate - self.maniac_rate) / 0.3
        return 1.0 - min(1.0, max(0.0, excess))

    def decide(self, decision: Decision, rng: random.Random) -> Action:
        weight = self._discount(decision)
        floor = weight * self.range_floors[min(decision.opponent_aggression, len(self.range_floors) - 1)]
        hand_equity = _equity(decision, rng, floor)
        if not decision.to_call:  # first in, or checked to
            if hand_equity >= self.value_equity:
                return _raise_or_call(decision, rng.choice((0.5, 0.75, 1.0)))
            if not decision.board and hand_equity >= self.open_equity and rng.random() < self.open_rate:
                return _raise_or_call(decision, 0.75)
            if rng.random() < self.bluff_rate:
                return _raise_or_call(decision, 0.6)
            return ("check_call", None)
        unraised = not decision.board and decision.opponent_aggression == 0
        if hand_equity >= self.reraise_equity or (hand_equity >= self.value_equity and rng.random() < 0.5):
            return _raise_or_call(decision, rng.choice((0.8, 1.0)))
        if unraised and hand_equity >= self.open_equity and rng.random() < self.open_rate:
            return _raise_or_call(decision, 0.75)
        if hand_equity >= decision.pot_odds + self.call_margin:
            return ("check_call", None)
        return _fold_or_check(decision)


class AggressiveAdaptiveBot(AdaptiveBot):
    """The adaptive bot, looser and more aggressive: it opens wider, bets bigger and bluffs twice as often."""

    style = "adaptive_aggressive"
    description = (
        "an aggressive adaptive equity bot: it plays many hands, bets and bluffs often, re-raises strong hands "
        "and calls down lighter if you bet or raise a lot"
    )
    open_equity = 0.42
    open_rate = 1.0
    value_equity = 0.6
    bluff_rate = 0.25


BOTS: dict[str, type[Bot]] = {
    cls.style: cls for cls in (RandomBot, LooseAggressiveBot, TightPassiveBot, StrongBot, AdaptiveBot,
                               AggressiveAdaptiveBot)
}
#: Style name -> the description a prompt shows when the task reveals the opponent.
STYLES: dict[str, str] = {style: cls.description for style, cls in BOTS.items()}


def make_bot(style: str) -> Bot:
    """The bot of ``style``; a clear ``ValueError`` naming the styles for an unknown one."""
    try:
        return BOTS[style]()
    except (KeyError, TypeError):
        raise ValueError(f"unknown opponent style {style!r}; choose from {', '.join(BOTS)}") from None
