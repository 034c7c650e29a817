"""Trivial strategies played through the tools' text, for the shortcut tests and the benchmark.

Each reads only the decision view the tools print (its legal actions and the bet range) and never the cards: always
fold (check when folding is not allowed), always call (or check), always min-raise, always all-in, and a uniformly
random legal move with a uniform amount. A bootcamp whose default tasks these score well on would not train poker.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from bootcamp_core import message_text, tool_call_message
from bootcamp_texas_holdem.game import MATCH_OVER

__all__ = ["SHORTCUTS", "legal_moves", "shortcut_turn"]

_MOVE = re.compile(r'^- \{"action": "([a-z_]+)"', re.MULTILINE)
_RANGE = re.compile(r'^- \{"action": "(?:bet|raise)", "amount": A\} with A from (\d+) to (\d+)', re.MULTILINE)

#: A strategy: (legal actions, (min, max) of a bet or raise or None, rng) -> the ``act`` arguments.
Strategy = Callable[[list[str], "tuple[int, int] | None", random.Random], dict]


def legal_moves(text: str) -> tuple[list[str], tuple[int, int] | None]:
    """The legal actions of the last decision view in ``text`` and the bet or raise range (None without one)."""
    view = text[text.rfind("Your legal actions:"):]
    found = _RANGE.search(view)
    return list(dict.fromkeys(_MOVE.findall(view))), (int(found.group(1)), int(found.group(2))) if found else None


def _fold(moves: list[str], bet: tuple[int, int] | None, rng: random.Random) -> dict:
    return {"action": "fold" if "fold" in moves else "check"}


def _call(moves: list[str], bet: tuple[int, int] | None, rng: random.Random) -> dict:
    return {"action": "call" if "call" in moves else "check"}


def _min_raise(moves: list[str], bet: tuple[int, int] | None, rng: random.Random) -> dict:
    for name in ("raise", "bet"):
        if name in moves and bet is not None:
            return {"action": name, "amount": bet[0]}
    return _call(moves, bet, rng)


def _all_in(moves: list[str], bet: tuple[int, int] | None, rng: random.Random) -> dict:
    return {"action": "all_in"} if "all_in" in moves else _call(moves, bet, rng)


def _random(moves: list[str], bet: tuple[int, int] | None, rng: random.Random) -> dict:
    name = rng.choice(moves)
    if name in ("bet", "raise") and bet is not None:
        return {"action": name, "amount": rng.randint(*bet)}
    return {"action": name}


#: Name -> strategy.
SHORTCUTS: dict[str, Strategy] = {
    "fold_or_check": _fold,
    "always_call": _call,
    "min_raise": _min_raise,
    "all_in": _all_in,
    "random_legal": _random,
}


def shortcut_turn(name: str) -> Callable:
    """An async (messages, tools, record, rng) -> assistant message turn that plays the strategy ``name``."""
    strategy = SHORTCUTS[name]

    async def turn(messages: list[dict], tools: list[dict], record: object, rng: random.Random) -> dict:
        outputs = [message_text(message.get("content")) for message in messages if message.get("role") == "tool"]
        if not outputs:
            return tool_call_message(messages, ("table", {}))
        if MATCH_OVER in outputs[-1]:
            return {"role": "assistant", "content": f"Result: played {name}."}
        moves, bet = legal_moves(outputs[-1])
        if not moves:
            return tool_call_message(messages, ("table", {}))
        return tool_call_message(messages, ("act", strategy(moves, bet, rng)))

    return turn
