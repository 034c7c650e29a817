"""One match of heads-up no-limit hold'em between the model (the hero) and a bot, on pokerkit states.

pokerkit keeps the rules: blinds, legal actions, raise sizes, side of the pot, showdown and payoffs. This module deals
the cards from the match's own seeded deck, asks the bot for its moves, and writes what happened as text. Every hand
starts from the starting stacks (as in the ACPC heads-up no-limit format), so chips won over the match are the sum of
the hands' payoffs. The hero is on the button in hands 1, 3, 5, ... and the big blind in hands 2, 4, 6, ...; in
duplicate format hands 2k-1 and 2k share one deal, so each deal is played once from each seat.
"""

from __future__ import annotations

import copy
import math
import random
import reprlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
from pokerkit import (
    Automation,
    BlindOrStraddlePosting,
    BoardDealing,
    HoleCardsShowingOrMucking,
    NoLimitTexasHoldem,
    StandardHighHand,
)

from bootcamp_texas_holdem.bots import STYLES, Bot, Decision, make_bot
from bootcamp_texas_holdem.cards import CARDS, cards_text, parse_cards

__all__ = [
    "ACTIONS",
    "MATCH_OVER",
    "FinishedHand",
    "IllegalAction",
    "Match",
    "MatchOver",
    "MatchSettings",
    "SettingsError",
    "match_score",
]

#: pokerkit does everything but dealing (we deal from the match's own deck), showing at showdown (both hands are
#: always turned up, which also spares pokerkit evaluating who could still win) and the players' decisions.
AUTOMATIONS = (
    Automation.ANTE_POSTING,
    Automation.BET_COLLECTION,
    Automation.BLIND_OR_STRADDLE_POSTING,
    Automation.RUNOUT_COUNT_SELECTION,
    Automation.HAND_KILLING,
    Automation.CHIPS_PUSHING,
    Automation.CHIPS_PULLING,
)
#: Heads-up, pokerkit gives player 1 the small blind and the button, player 0 the big blind.
BUTTON, BIG_BLIND = 1, 0
#: The hero's actions, as the ``act`` tool names them.
ACTIONS = ("fold", "check", "call", "bet", "raise", "all_in")
#: The words that open the tool output's last line once the match has ended (the interaction reads them).
MATCH_OVER = "The match is over"
STREETS = ("pre-flop", "flop", "turn", "river")
#: Cards of one deal: two per seat, then burn, flop, burn, turn, burn, river.
DEAL_SIZE = 12


class SettingsError(ValueError):
    """A task identity that does not describe a valid match; the message names the field."""


class IllegalAction(ValueError):
    """The hero's action cannot be played now; the message says why (nothing has changed)."""


class MatchOver(IllegalAction):
    """An action after the last hand."""


@attrs.frozen(kw_only=True)
class MatchSettings:
    """The rules of one match, read from a task identity."""

    seed: int
    hands: int = 10
    duplicate: bool = False
    small_blind: int = 50
    big_blind: int = 100
    starting_stack: int = 20_000
    opponent: str = "random"
    reveal_opponent: bool = True
    score_scale: float = 5_000.0
    # duplicate scoring for a model: a bot of this style plays the same deals from the hero's seat against the same
    # opponent in a match the model never sees, and the score counts the hero's chips minus the par's. (Mirroring
    # the seats within one match, ``duplicate``, is for bots only: a model would see its opponent's cards.)
    par: str | None = None

    @classmethod
    def from_identity(cls, identity: Any) -> MatchSettings:
        """Validated settings; a ``ValueError`` that names the bad field otherwise."""
        if not isinstance(identity, dict):
            raise SettingsError(f"the identity must be a dict, got {type(identity).__name__}")
        defaults = attrs.asdict(cls(seed=0))
        unknown = sorted(set(identity) - set(defaults))
        if unknown:
            raise SettingsError(f"unknown identity field(s): {', '.join(unknown)}")
        if "seed" not in identity:
            raise SettingsError("the identity has no seed")
        values = {**defaults, **identity}
        for key in ("seed", "hands", "small_blind", "big_blind", "starting_stack"):
            value = values[key]
            if isinstance(value, bool) or not isinstance(value, int):
                raise SettingsError(f"{key} must be an integer, got {value!r}")
        for key in ("duplicate", "reveal_opponent"):
            if not isinstance(values[key], bool):
                raise SettingsError(f"{key} must be true or false, got {values[key]!r}")
        scale = values["score_scale"]
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
            raise SettingsError(f"score_scale must be a positive number, got {scale!r}")
        if not 1 <= values["hands"] <= 10_000:
            raise SettingsError(f"hands must be between 1 and 10000, got {values['hands']}")
        if values["duplicate"] and values["hands"] % 2:
            raise SettingsError(f"a duplicate match needs an even number of hands, got {values['hands']}")
        if not 1 <= values["small_blind"] <= values["big_blind"]:
            raise SettingsError(
                f"need 1 <= small_blind <= big_blind, got {values['small_blind']} and {values['big_blind']}"
            )
        if values["starting_stack"] <= values["big_blind"]:
            raise SettingsError(
                f"starting_stack ({values['starting_stack']}) must exceed the big blind ({values['big_blind']})"
            )
        if values["opponent"] not in STYLES:
            raise SettingsError(f"unknown opponent style {values['opponent']!r}; choose from {', '.join(STYLES)}")
        if values["par"] is not None and values["par"] not in STYLES:
            raise SettingsError(f"unknown par style {values['par']!r}; choose from {', '.join(STYLES)}")
        return cls(**values)


def match_score(chips: float, scale: float) -> float:
    """Chips won squashed to [0, 1]: ``0.5 + 0.5 * tanh(chips / scale)``, so 0.5 is break-even."""
    return 0.5 + 0.5 * math.tanh(chips / scale)


def _new_state(small_blind: int, big_blind: int, stack: int) -> Any:
    return NoLimitTexasHoldem.create_state(AUTOMATIONS, True, 0, (small_blind, big_blind), big_blind, (stack, stack), 2)


@contextmanager
def _global_random_kept() -> Iterator[None]:
    """Put the global ``random`` state back afterwards.

    pokerkit shuffles with the global generator: its own deck when it creates a state, and reserved cards whenever
    it checks how many cards are left to deal. We deal from the match's own deck, so those draws decide nothing
    here; restoring the state keeps the match from touching the global generator at all.
    """
    saved = random.getstate()
    try:
        yield
    finally:
        random.setstate(saved)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@attrs.frozen(kw_only=True)
class FinishedHand:
    """A hand as it ended: seats, cards and pokerkit's payoffs (player 1 is the button)."""

    number: int
    hero: int  # the hero's pokerkit player index
    deal: tuple[int, ...]
    holes: dict[int, tuple[int, ...]]
    board: tuple[int, ...]
    payoffs: tuple[int, ...]


@attrs.define
class _Hand:
    """Bookkeeping of the hand in play."""

    number: int  # 1-based
    hero: int  # the hero's pokerkit player index
    deal: list[int]
    state: Any
    holes: dict[int, list[int]] = attrs.field(factory=lambda: {BUTTON: [], BIG_BLIND: []})
    board: list[int] = attrs.field(factory=list)
    cursor: int = 4  # next card of the deal for burns and the board
    seen: int = 0  # pokerkit operations already written
    aggression: dict[int, int] = attrs.field(factory=lambda: {BUTTON: 0, BIG_BLIND: 0})
    postflop_aggression: dict[int, int] = attrs.field(factory=lambda: {BUTTON: 0, BIG_BLIND: 0})
    entered: dict[int, bool] = attrs.field(factory=lambda: {BUTTON: False, BIG_BLIND: False})
    street_has_bet: bool = True  # pre-flop the blinds are the bets
    shown: dict[int, bool] = attrs.field(factory=dict)
    folded: int | None = None
    board_logged: int = 0
    log: list[str] = attrs.field(factory=list)


class Match:
    """A whole match: deals, the bot's moves, the hero's actions and their text."""

    def __init__(self, settings: MatchSettings) -> None:
        self.settings = settings
        self.bot: Bot = make_bot(settings.opponent)
        self._deals = random.Random(f"holdem:{settings.seed}:deals")
        self._bot_rng = random.Random(f"holdem:{settings.seed}:opponent")
        self._deal_cache: list[int] = []
        self.results: list[int] = []  # the hero's payoff of each finished hand
        self.finished: list[FinishedHand] = []
        self.summaries: list[str] = []
        self.actions = 0  # the hero's accepted actions
        self.illegal = 0  # the hero's refused ones
        self.hand: _Hand | None = None
        self.pending: list[str] = []  # what happened since the last report
        self._par_chips: int | None = None
        # decisions and bets or raises over the match, of the hero and of the bot (the bots read the other's)
        self.tendencies: dict[str, list[int]] = {"hero": [0, 0], "bot": [0, 0]}
        with _global_random_kept():
            self._start_hand()
            self._advance()

    # ------------------------------------------------------------------------------------------ queries
    @property
    def over(self) -> bool:
        """Whether every hand has been played."""
        return len(self.results) >= self.settings.hands

    @property
    def chips_won(self) -> int:
        """The hero's net chips over the finished hands."""
        return sum(self.results)

    def hero_decision(self) -> Decision | None:
        """What the hero sees when it is the hero's turn, else None."""
        hand = self.hand
        if self.over or hand is None or hand.state.actor_index != hand.hero:
            return None
        return self._decision(hand.hero)

    def forfeit_chips(self) -> int:
        """Chips won if the hero folded (or checked where folding is not allowed) from now to the end of the match."""
        if self.over:
            return self.chips_won
        rest = copy.deepcopy(self)
        while not rest.over:
            decision = rest.hero_decision()
            assert decision is not None
            rest.play(("fold", None) if decision.to_call and decision.can_fold else ("check_call", None))
        return rest.chips_won

    def par_chips(self) -> int:
        """With ``par``: the chips the par bot wins on the same deals from the hero's seat (0 without one)."""
        if self.settings.par is None:
            return 0
        if self._par_chips is None:
            rival = Match(attrs.evolve(self.settings, par=None))
            player, rng = make_bot(self.settings.par), random.Random(f"holdem:{self.settings.seed}:par")
            while not rival.over:
                rival.play(player.decide(rival.hero_decision(), rng))
            self._par_chips = rival.chips_won
        return self._par_chips

    def score(self) -> float:
        """The match score in [0, 1] from the chips won (minus the par's, with duplicate scoring), counting any
        unplayed part as folded."""
        return match_score(self.forfeit_chips() - self.par_chips(), self.settings.score_scale)

    # ----------------------------------------------------------------------------------------- the hero
    def act(self, action: Any, amount: Any = None) -> str:
        """Play the hero's action, then the bot's until the hero's next turn; the text of what happened.

        Raises :class:`IllegalAction` (nothing changed) for an action or amount that is not legal now.
        """
        if self.over:
            raise MatchOver(f"{self.final_line()} No more actions can be taken.")
        decision = self.hero_decision()
        assert decision is not None, "the hero is always to act while the match runs"
        return self.play(self._resolve(decision, action, amount))

    def play(self, move: tuple[str, int | None]) -> str:
        """Play a move in the bots' terms (``("fold", None)``, ``("check_call", None)``, ``("raise", amount)``) for
        the hero, then the bot's until the hero's next turn; the text of what happened."""
        if self.over:
            raise MatchOver(f"{self.final_line()} No more actions can be taken.")
        self.pending = []
        with _global_random_kept():
            self._play(self.hand.hero, move)
            self.actions += 1
            self._advance()
        return self.report()

    def _resolve(self, decision: Decision, action: Any, amount: Any) -> tuple[str, int | None]:
        """The pokerkit move for the hero's action, or :class:`IllegalAction` saying why not."""
        if not isinstance(action, str):
            raise IllegalAction(f"action must be a string, one of {', '.join(ACTIONS)}; got {_shown(action)}")
        name = action.strip().lower().replace("-", "_").replace(" ", "_")
        name = {"allin": "all_in", "shove": "all_in", "jam": "all_in", "push": "all_in"}.get(name, name)
        if name not in ACTIONS:
            raise IllegalAction(f"unknown action {_shown(action)}; use one of {', '.join(ACTIONS)}")
        value = _chips(amount)
        can_raise = decision.min_raise_to is not None
        # A call or all-in may name what it puts in (the added chips or the street total), as long as it is exact.
        cost = (decision.max_raise_to,) if name == "all_in" and can_raise else (
            decision.to_call, decision.my_bet + decision.to_call)
        names_its_cost = name in ("call", "all_in") and value in cost
        if name in ("fold", "check", "call", "all_in") and value is not None and not names_its_cost:
            raise IllegalAction(f"{name} takes no amount (got {_shown(amount)}); to put in a chosen amount, bet or raise")
        if name == "fold":
            if not decision.to_call:
                raise IllegalAction("there is nothing to call, so you cannot fold: check instead (it is free)")
            return "fold", None
        if name == "check":
            if decision.to_call:
                raise IllegalAction(f"you cannot check: you face a bet of {decision.to_call} more to call")
            return "check_call", None
        if name == "call":
            if not decision.to_call:
                raise IllegalAction("there is nothing to call: check instead")
            return "check_call", None
        if name == "all_in":
            if can_raise:
                return "raise", decision.max_raise_to
            if decision.to_call:
                return "check_call", None  # calling is all a short stack, or a call of an all-in, can do
            raise IllegalAction("you cannot raise now: check instead")
        # bet or raise
        street_has_bet = self.hand.street_has_bet
        if name == "bet" and street_has_bet:
            raise IllegalAction("there is already a bet on this street: use raise (with amount = your total bet)")
        if name == "raise" and not street_has_bet:
            raise IllegalAction("there is no bet on this street to raise: use bet")
        if not can_raise:
            raise IllegalAction(f"you cannot {name} now" + (": call or fold" if decision.to_call else ": check"))
        if value is None:
            raise IllegalAction(
                f"{name} needs an amount: your total bet on this street, from {decision.min_raise_to} to "
                f"{decision.max_raise_to}" + (f" (got {_shown(amount)})" if amount is not None else "")
            )
        if not decision.min_raise_to <= value <= decision.max_raise_to:  # type: ignore[operator]
            raise IllegalAction(
                f"{name} amount {value} is out of range: it is your total bet on this street and must be from "
                f"{decision.min_raise_to} to {decision.max_raise_to}"
            )
        return "raise", value

    # -------------------------------------------------------------------------------------------- engine
    def _deal_for(self, index: int) -> list[int]:
        """The deal of hand ``index`` (0-based): a fresh shuffle, or in duplicate format one shuffle per pair."""
        if not self.settings.duplicate or index % 2 == 0:
            deck = list(range(52))
            self._deals.shuffle(deck)
            self._deal_cache = deck[:DEAL_SIZE]
        return list(self._deal_cache)

    def _start_hand(self) -> None:
        index = len(self.results)
        settings = self.settings
        state = _new_state(settings.small_blind, settings.big_blind, settings.starting_stack)
        self.hand = _Hand(number=index + 1, hero=BUTTON if index % 2 == 0 else BIG_BLIND,
                          deal=self._deal_for(index), state=state)
        self._deal()
        hand = self.hand
        seat = "the button (small blind)" if hand.hero == BUTTON else "the big blind"
        other = "the big blind" if hand.hero == BUTTON else "the button (small blind)"
        self._log(f"Hand {hand.number} of {settings.hands} begins: you are {seat}, the opponent is {other}. "
                  f"Your cards: {cards_text(hand.holes[hand.hero])}.")
        self._log_operations()

    def _deal(self) -> None:
        """Deal hole cards, burns and board cards until a player has to act or the hand is over."""
        hand = self.hand
        state = hand.state
        while state.status:
            if state.can_burn_card():
                state.burn_card(CARDS[hand.deal[hand.cursor]])
                hand.cursor += 1
            elif state.can_deal_hole():
                player = state.hole_dealee_index
                seat_cards = hand.deal[0:2] if player == BUTTON else hand.deal[2:4]
                card = seat_cards[len(hand.holes[player])]
                hand.holes[player].append(card)
                state.deal_hole(CARDS[card])
            elif state.can_show_or_muck_hole_cards():
                state.show_or_muck_hole_cards(True)  # both hands are turned face up at showdown
            elif state.can_deal_board():
                count = state.board_dealing_count
                cards = hand.deal[hand.cursor:hand.cursor + count]
                hand.cursor += count
                hand.board.extend(cards)
                state.deal_board([CARDS[card] for card in cards])
                hand.street_has_bet = False
            else:
                break

    def _advance(self) -> None:
        """Deal and let the bot act until the hero has to act or the match is over, finishing hands on the way."""
        while True:
            self._deal()
            self._log_operations()
            hand = self.hand
            if not hand.state.status:
                self._finish_hand()
                if self.over:
                    self._log(self.final_line())
                    return
                self._start_hand()
                continue
            actor = hand.state.actor_index
            if actor == hand.hero:
                return
            move = self.bot.decide(self._decision(actor), self._bot_rng)
            try:
                self._play(actor, move)
            except IllegalAction as error:  # a bot bug must never read as the model's mistake
                raise RuntimeError(f"the {self.settings.opponent} bot chose an illegal move {move!r}: {error}") from None

    def _decision(self, player: int) -> Decision:
        hand = self.hand
        state = hand.state
        can_raise = state.can_complete_bet_or_raise_to()
        return Decision(
            hole=tuple(hand.holes[player]),
            board=tuple(hand.board),
            pot=state.total_pot_amount,
            to_call=state.checking_or_calling_amount or 0,
            can_fold=state.can_fold(),
            min_raise_to=state.min_completion_betting_or_raising_to_amount if can_raise else None,
            max_raise_to=state.max_completion_betting_or_raising_to_amount if can_raise else None,
            my_bet=state.bets[player],
            stack=state.stacks[player],
            big_blind=self.settings.big_blind,
            button=player == BUTTON,
            opponent_aggression=hand.aggression[1 - player],
            opponent_postflop_aggression=hand.postflop_aggression[1 - player],
            opponent_entered=hand.entered[1 - player],
            opponent_decisions=self.tendencies["bot" if player == hand.hero else "hero"][0],
            opponent_raises=self.tendencies["bot" if player == hand.hero else "hero"][1],
        )

    def _play(self, player: int, move: tuple[str, int | None]) -> None:
        """Apply one move through pokerkit and write it; an illegal move raises :class:`IllegalAction`, unplayed."""
        hand = self.hand
        state = hand.state
        kind, amount = move
        you = player == hand.hero
        counts = self.tendencies["hero" if you else "bot"]
        who, s = ("You", "") if you else ("The opponent", "s")
        if kind == "raise":
            if isinstance(amount, bool) or not isinstance(amount, int) or not state.can_complete_bet_or_raise_to(amount):
                raise IllegalAction(f"a bet or raise to {amount!r} is not legal now")
            all_in = amount == state.bets[player] + state.stacks[player]
            verb = f"raise{s} to" if hand.street_has_bet else f"bet{s}"
            state.complete_bet_or_raise_to(amount)
            counts[1] += 1
            hand.street_has_bet = True
            hand.aggression[player] += 1
            if hand.board:
                hand.postflop_aggression[player] += 1
            else:
                hand.entered[player] = True
            self._log(f"{who} {verb} {amount}{' (all-in)' if all_in else ''}.")
        elif kind == "fold":
            if not (state.checking_or_calling_amount and state.can_fold()):
                raise IllegalAction("folding is not legal without a bet to call")
            state.fold()
            hand.folded = player
            self._log(f"{who} fold{s}.")
        elif kind == "check_call":
            cost = state.checking_or_calling_amount or 0
            all_in = cost and cost == state.stacks[player]
            state.check_or_call()
            if cost and not hand.board:
                hand.entered[player] = True
            self._log(f"{who} call{s} {cost}{' (all-in)' if all_in else ''}." if cost else f"{who} check{s}.")
        else:
            raise IllegalAction(f"unknown move {kind!r}")
        counts[0] += 1
        self._log_operations()

    def _log(self, line: str) -> None:
        self.hand.log.append(line)
        self.pending.append(line)

    def _log_operations(self) -> None:
        """Write what pokerkit did on its own: blinds, board cards, cards shown at showdown."""
        hand = self.hand
        operations = hand.state.operations
        for operation in operations[hand.seen:]:
            if isinstance(operation, BlindOrStraddlePosting):
                you = operation.player_index == hand.hero
                blind = "small" if operation.player_index == BUTTON else "big"
                self._log(f"{'You post' if you else 'The opponent posts'} the {blind} blind of {operation.amount}.")
            elif isinstance(operation, BoardDealing):
                # An all-in run-out deals several streets in a row: name each from its own cards.
                hand.board_logged += len(operation.cards)
                dealt = " ".join(map(repr, operation.cards))
                if hand.board_logged == 3:
                    self._log(f"Flop: {dealt}.")
                else:
                    board = cards_text(hand.board[:hand.board_logged])
                    self._log(f"{STREETS[hand.board_logged - 2].capitalize()}: {dealt} (board {board}).")
            elif isinstance(operation, HoleCardsShowingOrMucking):
                player = operation.player_index
                hand.shown[player] = bool(operation.hole_cards)
                if player != hand.hero:
                    self._log(f"The opponent shows {cards_text(hand.holes[player])}." if operation.hole_cards
                              else "The opponent mucks.")
        hand.seen = len(operations)

    def _finish_hand(self) -> None:
        hand = self.hand
        state = hand.state
        payoff = state.payoffs[hand.hero]
        total = self.settings.starting_stack * 2
        if sum(state.payoffs) != 0 or sum(state.stacks) != total:  # chips are never made or lost: surface any bug
            raise RuntimeError(f"hand {hand.number}: payoffs {state.payoffs}, stacks {state.stacks} (of {total})")
        self.results.append(payoff)
        self.finished.append(FinishedHand(
            number=hand.number, hero=hand.hero, deal=tuple(hand.deal),
            holes={seat: tuple(cards) for seat, cards in hand.holes.items()}, board=tuple(hand.board),
            payoffs=tuple(state.payoffs),
        ))
        if hand.folded is not None:
            how = "you folded" if hand.folded == hand.hero else "the opponent folded"
        else:
            how = "showdown: " + self._showdown_text()
        outcome = (f"you won {payoff} chips" if payoff > 0 else f"you lost {-payoff} chips" if payoff < 0
                   else "the pot was split")
        total = self.chips_won
        self._log(f"Hand {hand.number} is over ({how}): {outcome}. After {_plural(len(self.results), 'hand')} "
                  f"you are {'+' if total > 0 else ''}{total} chips.")
        self.summaries.append(f"hand {hand.number}: {'+' if payoff > 0 else ''}{payoff} ({how})")

    def _showdown_text(self) -> str:
        hand = self.hand
        board = [CARDS[card] for card in hand.board]
        parts = []
        for player, name in ((hand.hero, "you have"), (1 - hand.hero, "the opponent has")):
            if player != hand.hero and not hand.shown.get(player, False):
                parts.append("the opponent mucked")
                continue
            best = StandardHighHand.from_game([CARDS[card] for card in hand.holes[player]], board)
            five = sorted(parse_cards("".join(map(repr, best.cards))), reverse=True)
            parts.append(f"{name} {best.entry.label.value.lower()} ({cards_text(five)})")
        return ", ".join(parts)

    # ------------------------------------------------------------------------------------------- text
    def final_line(self) -> str:
        """The last line of a finished match (it starts with :data:`MATCH_OVER`)."""
        total = self.chips_won
        big_blinds = total / self.settings.big_blind
        return (f"{MATCH_OVER}: all {self.settings.hands} hands have been played. You "
                f"{'won' if total >= 0 else 'lost'} {abs(total)} chips in total ({big_blinds:+g} big blinds).")

    def decision_text(self) -> str:
        """The hero's view at its turn: cards, board, pot, stacks, amount to call and the legal actions."""
        decision = self.hero_decision()
        if decision is None:
            return self.final_line()
        hand = self.hand
        state = hand.state
        opponent = 1 - hand.hero
        street = STREETS[max(0, len(hand.board) - 2)]
        seat = ("the button (small blind): you act first before the flop and last after it" if hand.hero == BUTTON
                else "the big blind: you act last before the flop and first after it")
        lines = [
            f"Hand {hand.number} of {self.settings.hands}, {street}. You are {seat}.",
            f"Your cards: {cards_text(decision.hole)}",
            f"Board: {cards_text(decision.board) if decision.board else '(none yet)'}",
            f"Pot: {decision.pot} (bets on this street: you {decision.my_bet}, the opponent {state.bets[opponent]})",
            f"Stacks behind: you {decision.stack}, the opponent {state.stacks[opponent]}",
            f"To call: {decision.to_call}",
            "Your legal actions:",
        ]
        if decision.to_call:
            lines.append('- {"action": "fold"}')
            lines.append(f'- {{"action": "call"}} (puts in {decision.to_call}'
                         f"{', all-in' if decision.to_call >= decision.stack else ''})")
        else:
            lines.append('- {"action": "check"}')
        if decision.min_raise_to is not None:
            name = "raise" if hand.street_has_bet else "bet"
            lines.append(f'- {{"action": "{name}", "amount": A}} with A from {decision.min_raise_to} to '
                         f"{decision.max_raise_to}: your total bet on this street")
            lines.append(f'- {{"action": "all_in"}} ({name} to {decision.max_raise_to})')
        elif decision.to_call:
            lines.append('- {"action": "all_in"} (the same as call here)')
        return "\n".join(lines)

    def report(self) -> str:
        """What happened since the last report, then the hero's view (or the match result)."""
        happened = "\n".join(self.pending)
        self.pending = []
        if self.over:
            return happened
        return f"{happened}\n\n{self.decision_text()}" if happened else self.decision_text()

    def table_text(self) -> str:
        """The whole table: match, opponent, finished hands, this hand's history and the hero's view."""
        settings = self.settings
        opponent = STYLES[settings.opponent] if settings.reveal_opponent else "a bot whose style you are not told"
        lines = [
            f"Heads-up no-limit hold'em match of {settings.hands} hands against {opponent}.",
            f"Blinds {settings.small_blind}/{settings.big_blind}; every hand starts with {settings.starting_stack} "
            "chips each." + (" Duplicate format: each deal is played twice, once from each seat." if settings.duplicate
                             else ""),
        ]
        total = self.chips_won
        if self.results:
            lines.append(f"Finished hands: {len(self.results)} of {settings.hands}; you are "
                         f"{'+' if total > 0 else ''}{total} chips ({'; '.join(self.summaries)}).")
        else:
            lines.append(f"Finished hands: 0 of {settings.hands}.")
        if self.over:
            lines.append(self.final_line())
            return "\n".join(lines)
        lines.append(f"Hand {self.hand.number} so far:")
        lines.extend(f"  {line}" for line in self.hand.log)
        lines.append("")
        lines.append(self.decision_text())
        return "\n".join(lines)


def _chips(amount: Any) -> int | None:
    """An amount of chips as an int: integers, integral floats and numeric strings; None when absent."""
    if amount is None:
        return None
    if isinstance(amount, bool):
        raise IllegalAction(f"amount must be a whole number of chips, got {_shown(amount)}")
    if isinstance(amount, str):
        text = amount.strip().replace(",", "").replace("_", "")
        try:
            amount = float(text) if any(mark in text for mark in ".eE") else int(text)
        except ValueError:
            raise IllegalAction(f"amount must be a whole number of chips, got {_shown(amount)}") from None
    if isinstance(amount, float):
        if not (math.isfinite(amount) and amount == int(amount)):
            raise IllegalAction(f"amount must be a whole number of chips, got {_shown(amount)}")
        return int(amount)
    if isinstance(amount, int):
        return amount
    raise IllegalAction(f"amount must be a whole number of chips, got {type(amount).__name__}")


def _shown(value: Any) -> str:
    """A model's argument echoed back, cut short: a 5,000-character amount must not flood its context."""
    return reprlib.repr(value)
