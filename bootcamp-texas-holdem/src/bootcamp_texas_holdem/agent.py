"""The reference agent: a range-aware equity player that reads the tool output like a model and acts through ``act``.
It never looks at the identity; everything it knows comes from the text in the conversation: its cards, the board,
the pot odds, the opponent's bets and raises in the hand (which narrow the range it puts the opponent on) and
whether the opponent chose to play before the flop."""

from __future__ import annotations

import random
import re
from typing import ClassVar

from bootcamp_core import ReferenceAgent, message_text, tool_call_message
from bootcamp_texas_holdem.bots import Decision, StrongBot
from bootcamp_texas_holdem.cards import parse_cards
from bootcamp_texas_holdem.game import MATCH_OVER

__all__ = ["EquityPlayer", "parse_decision"]

_HEADER = re.compile(r"^Hand (\d+) of (\d+), [a-z-]+\. You are the (button|big blind)", re.MULTILINE)
_FIELDS = {
    "hole": re.compile(r"^Your cards: (.+)$", re.MULTILINE),
    "board": re.compile(r"^Board: (.+)$", re.MULTILINE),
    "pot": re.compile(r"^Pot: (\d+) \(bets on this street: you (\d+), the opponent (\d+)\)$", re.MULTILINE),
    "stacks": re.compile(r"^Stacks behind: you (\d+), the opponent (\d+)$", re.MULTILINE),
    "to_call": re.compile(r"^To call: (\d+)$", re.MULTILINE),
}
_RANGE = re.compile(r'^- \{"action": "(bet|raise)", "amount": A\} with A from (\d+) to (\d+)', re.MULTILINE)
_OPPONENT_AGGRESSION = re.compile(r"^ *The opponent (?:bets|raises to) \d+", re.MULTILINE)
_OPPONENT_DECISION = re.compile(r"^ *The opponent (?:folds|checks|calls \d+|bets \d+|raises to \d+)", re.MULTILINE)
_OPPONENT_ENTERS = re.compile(r"^ *The opponent (?:calls|bets|raises to) \d+", re.MULTILINE)
_FLOP = re.compile(r"^ *Flop: ", re.MULTILINE)


def parse_decision(text: str, hand_history: str = "", match_history: str | None = None) -> tuple[Decision, str] | None:
    """The decision the last view in ``text`` shows and the name of its bet action (``"bet"`` or ``"raise"``).

    ``hand_history`` is the text of this hand so far, from which the opponent's bets and raises are counted;
    ``match_history`` the text of the whole match so far (``hand_history`` when not given), from which its decisions
    and bets or raises over the match are. None when ``text`` shows no decision.
    """
    headers = list(_HEADER.finditer(text))
    if not headers:
        return None
    view = text[headers[-1].start():]
    found = {key: pattern.search(view) for key, pattern in _FIELDS.items()}
    if not all(found.values()):
        return None
    board_text = found["board"].group(1)
    raise_range = _RANGE.search(view)
    flop = _FLOP.search(hand_history)
    preflop = hand_history[:flop.start()] if flop else hand_history
    whole = hand_history if match_history is None else match_history
    try:
        board = () if board_text.startswith("(") else parse_cards(board_text)
        decision = Decision(
            hole=parse_cards(found["hole"].group(1)),
            board=board,
            pot=int(found["pot"].group(1)),
            to_call=int(found["to_call"].group(1)),
            can_fold='{"action": "fold"}' in view,
            min_raise_to=int(raise_range.group(2)) if raise_range else None,
            max_raise_to=int(raise_range.group(3)) if raise_range else None,
            my_bet=int(found["pot"].group(2)),
            stack=int(found["stacks"].group(1)),
            big_blind=_big_blind(text),
            button=headers[-1].group(3) == "button",
            opponent_aggression=len(_OPPONENT_AGGRESSION.findall(hand_history)),
            opponent_postflop_aggression=len(_OPPONENT_AGGRESSION.findall(hand_history[flop.start():]))
            if flop else 0,
            opponent_entered=bool(_OPPONENT_ENTERS.search(preflop)),
            opponent_decisions=len(_OPPONENT_DECISION.findall(whole)),
            opponent_raises=len(_OPPONENT_AGGRESSION.findall(whole)),
        )
    except ValueError:
        return None
    return decision, raise_range.group(1) if raise_range else "raise"


def _big_blind(text: str) -> int:
    found = re.search(r"posts? the big blind of (\d+)", text)
    return int(found.group(1)) if found else 100


def _current_hand(outputs: list[str]) -> str:
    """The text of the hand in play: everything since the latest "Hand k of n begins" line."""
    joined = "\n".join(outputs)
    starts = [found.start() for found in re.finditer(r"^ *Hand \d+ of \d+ begins", joined, re.MULTILINE)]
    return joined[starts[-1]:] if starts else joined


_PLAYER = StrongBot()


class EquityPlayer(ReferenceAgent):
    """Bets and raises for value, calls when its equity against the opponent's likely range beats the pot odds,
    otherwise checks or folds (the strong bot's rule, fed from the text)."""

    name: ClassVar[str] = "equity_player"
    generators: ClassVar[tuple[str, ...]] = ("heads_up",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A ``table`` call first, then one ``act`` call per decision, then a one-line result once the match is over."""
        outputs = [message_text(message.get("content")) for message in messages if message.get("role") == "tool"]
        for output in reversed(outputs):
            for line in output.splitlines():
                if line.startswith(MATCH_OVER + ":"):
                    return {"role": "assistant", "content": f"Result: {line}"}
        parsed = parse_decision(outputs[-1], _current_hand(outputs), "\n".join(outputs)) if outputs else None
        if parsed is None:
            return tool_call_message(messages, ("table", {}))
        decision, bet_name = parsed
        kind, amount = _PLAYER.decide(decision, rng)
        if kind == "raise":
            return tool_call_message(messages, ("act", {"action": bet_name, "amount": amount}))
        if kind == "fold":
            return tool_call_message(messages, ("act", {"action": "fold"}))
        return tool_call_message(messages, ("act", {"action": "call" if decision.to_call else "check"}))


