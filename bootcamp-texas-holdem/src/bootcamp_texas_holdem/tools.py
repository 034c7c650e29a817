"""The tools: ``table`` shows the table, ``act`` plays the model's action. Both share the episode's one match.

The match lives in a store keyed by the instance id (all tools of an episode run in one process, DESIGN.md), created
by whichever tool the engine creates first and dropped when the last one releases it. Nothing can start a second
match in an episode: a second ``create`` joins the match already there, and asking ``act`` for a new match, a redeal
or anything after the last hand is refused with the reason and changes nothing.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import attrs

from bootcamp_core import Tool, config_number
from bootcamp_texas_holdem.game import ACTIONS, IllegalAction, Match, MatchOver, MatchSettings

__all__ = ["ActTool", "TableTool", "shared_match"]

#: Step reward of a refused call (an illegal action, bad arguments, a replay request); accepted actions earn 0.
ILLEGAL_ACTION_PENALTY = 0.1
#: Words with which a model might ask for another match or deal; each is refused (the episode owns one match).
REPLAY_WORDS = frozenset({
    "new_match", "new_game", "newgame", "new", "restart", "reset", "rematch", "redeal", "replay", "new_hand",
    "start", "start_match", "new_deal", "reshuffle", "shuffle", "again",
})
REPLAY_REFUSAL = (
    "Refused: this episode owns exactly one match and it cannot be restarted, replayed or redealt. "
    "Nothing changed."
)


@attrs.define
class _Shared:
    """One episode's match and the tools that hold it."""

    identity: dict
    match: Match
    holders: set[int] = attrs.field(factory=set)
    score_key: tuple[int, int] | None = None
    score: float = 0.0


#: instance id -> the episode's match, shared by every tool of this bootcamp in this process
_MATCHES: dict[str, _Shared] = {}


def shared_match(instance_id: str) -> Match:
    """The match of an episode; a clear ``KeyError`` when no tool has created it."""
    try:
        return _MATCHES[instance_id].match
    except KeyError:
        raise KeyError(f"no hold'em match for episode {instance_id!r}: create a tool of the episode first") from None


def _arguments(parameters: Any, allowed: frozenset[str]) -> dict:
    if isinstance(parameters, str):  # arguments that reached us still JSON-encoded
        try:
            parameters = json.loads(parameters) if parameters.strip() else {}
        except ValueError:
            raise IllegalAction("arguments are not valid JSON") from None
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, dict):
        raise IllegalAction(f"arguments must be a JSON object, got {type(parameters).__name__}")
    unknown = sorted(set(parameters) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise IllegalAction(f"unknown argument(s) {', '.join(map(repr, unknown))}; this tool takes: {known}")
    return parameters


class _MatchTool(Tool):
    """Creation, release and scoring shared by both tools."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.illegal_action_penalty = config_number(self, config, "illegal_action_penalty", ILLEGAL_ACTION_PENALTY,
                                                    low=0.0)

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Join the episode's match, dealing it first if this is the episode's first tool."""
        settings = MatchSettings.from_identity(identity)  # a bad identity fails here, before anything is stored
        instance_id = await super().create(instance_id, identity, **kwargs)
        shared = _MATCHES.get(instance_id)
        if shared is None:
            shared = _MATCHES[instance_id] = _Shared(identity=dict(identity or {}), match=Match(settings))
        elif shared.identity != identity:
            await super().release(instance_id)
            raise ValueError(f"episode {instance_id!r} already plays a match of another identity")
        shared.holders.add(id(self))
        return instance_id

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Leave the match; the last tool to leave drops it."""
        shared = _MATCHES.get(instance_id)
        if shared is not None and id(self) in shared.holders:
            shared.holders.discard(id(self))
            if not shared.holders:
                del _MATCHES[instance_id]
        await super().release(instance_id, **kwargs)

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The match score in [0, 1]: chips won squashed around 0.5, the unplayed rest counted as folded."""
        self.state(instance_id)
        shared = _MATCHES[instance_id]
        key = (len(shared.match.results), shared.match.actions)
        if shared.score_key != key:  # both tools ask; the forfeit of an unfinished match is simulated once
            shared.score_key, shared.score = key, shared.match.score()
        return shared.score

    def _match(self, instance_id: str) -> Match:
        self.state(instance_id)  # the base class's clear error for an episode never created
        return shared_match(instance_id)

    def _metrics(self, match: Match) -> dict:
        return {
            "hand": min(len(match.results) + 1, match.settings.hands),
            "hands_finished": len(match.results),
            "chips_won": match.chips_won,
            "actions": match.actions,
            "illegal_actions": match.illegal,
            "match_over": match.over,
        }

    def _refused(self, match: Match, reason: str) -> tuple[str, float, dict]:
        match.illegal += 1
        return reason, -self.illegal_action_penalty, self._metrics(match)


class TableTool(_MatchTool):
    """Shows the whole table; changes nothing."""

    name: ClassVar[str] = "table"
    description: ClassVar[str] = (
        "Show the poker table: the match so far, your hole cards, the board, the pot, both stacks, the amount to "
        "call, your legal actions with the minimum and maximum bet or raise, and this hand's history. Takes no "
        "arguments and changes nothing."
    )
    parameters: ClassVar[dict] = {"type": "object", "properties": {}, "additionalProperties": False}
    parallel_safe: ClassVar[bool] = True

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """The table as text."""
        match = self._match(instance_id)
        try:
            _arguments(parameters, frozenset())
        except IllegalAction as error:
            return self._refused(match, f"Error: {error}. Nothing changed.")
        return match.table_text(), 0.0, self._metrics(match)


class ActTool(_MatchTool):
    """Plays the model's action, then the opponent's moves until the model's next turn or the end of the match."""

    name: ClassVar[str] = "act"
    description: ClassVar[str] = (
        "Take your action in the current hand: fold, check, call, bet, raise or all_in. For bet and raise, `amount` "
        "is your total bet on this street in chips (raise TO, not by), between the minimum and maximum the table "
        "shows. The opponent's moves are played inside the call; the output says what happened, when a hand is "
        "over, when the match is over, and shows your next decision. An illegal action changes nothing and the "
        "output lists your legal actions."
    )
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "Your action."},
            "amount": {
                "type": "integer",
                "minimum": 1,
                "description": "For bet and raise only: your total bet on this street in chips (raise to).",
            },
        },
        "required": ["action"],
        "additionalProperties": False,
    }

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """Play one action: (what happened and the next decision, step reward, match metrics)."""
        match = self._match(instance_id)
        try:
            arguments = _arguments(parameters, frozenset({"action", "amount"}))
            action = arguments.get("action")
            if action is None:
                raise IllegalAction(f"missing action; use one of {', '.join(ACTIONS)}")
            if isinstance(action, str) and action.strip().lower().replace("-", "_").replace(" ", "_") in REPLAY_WORDS:
                text = REPLAY_REFUSAL
                if not match.over:
                    text += f"\n\n{match.decision_text()}"
                return self._refused(match, text)
            text = match.act(action, arguments.get("amount"))
        except MatchOver as error:
            return self._refused(match, f"{error} This episode owns exactly one match; another cannot be started.")
        except IllegalAction as error:
            return self._refused(match, f"Illegal action: {error}. Nothing changed.\n\n{match.decision_text()}")
        return text, 0.0, self._metrics(match)
