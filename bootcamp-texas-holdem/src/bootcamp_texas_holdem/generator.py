"""The task generator: a match of N hands of heads-up no-limit hold'em against one bot, seeded by the identity."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from bootcamp_core import ConfigError, TaskGenerator
from bootcamp_texas_holdem.bots import STYLES
from bootcamp_texas_holdem.game import MATCH_OVER, MatchSettings

__all__ = ["HeadsUpGenerator"]

DEFAULTS: dict[str, Any] = {
    "hands": 40,
    "duplicate": False,
    "mirror_seats": False,
    "small_blind": 50,
    "big_blind": 100,
    "starting_stack": 10_000,
    "opponents": {"adaptive": 1, "adaptive_aggressive": 1},
    "par": "strong",
    "reveal_opponent": True,
    "score_scale_bb_per_hand": 5,
}
#: The identity's seed is drawn below this (exact in JSON everywhere, doubles included).
SEED_LIMIT = 2**48


def _weights(opponents: Any) -> list[tuple[str, float]]:
    """(style, weight) pairs from a style name, a list of names, or a mapping of names to weights."""
    if isinstance(opponents, str):
        opponents = [opponents]
    if isinstance(opponents, (list, tuple)):
        opponents = {style: 1 for style in opponents}
    if not isinstance(opponents, dict) or not opponents:
        raise ConfigError(f"opponents must be a style, a list of styles or a mapping of style to weight, got "
                          f"{opponents!r}", field="opponents")
    pairs = []
    for style, weight in opponents.items():
        if style not in STYLES:
            raise ConfigError(f"opponents: unknown opponent style {style!r}; choose from {', '.join(STYLES)}", field="opponents")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
            raise ConfigError(f"opponents: the weight of opponent {style!r} must be a number >= 0, got {weight!r}",
                              field="opponents")
        if weight > 0:
            pairs.append((style, float(weight)))
    if not pairs:
        raise ConfigError("opponents: at least one style needs a positive weight", field="opponents")
    return sorted(pairs)  # a fixed order, whatever order the config wrote them in


class HeadsUpGenerator(TaskGenerator):
    """One match per task: hands, blinds, stacks, format and the opponent (drawn from the group's mix)."""

    name: ClassVar[str] = "heads_up"
    tools: ClassVar[tuple[str, ...]] = ("table", "act")
    interaction: ClassVar[str | None] = "table_feedback"
    reward: ClassVar[str] = "chips"
    #: A 40-hand match takes about 60 to 220 assistant turns, one tool call each: the limits `bootcamp eval`,
    #: `bootcamp demo` and the verl export use unless the user sets their own.
    limits: ClassVar[dict[str, int]] = {"max_assistant_turns": 800, "max_user_turns": 1600}
    #: The deal seed: whoever knows it knows every card.
    hidden_fields: ClassVar[tuple[str, ...]] = ("seed",)

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        unknown = sorted(set(config) - set(DEFAULTS))
        if unknown:
            raise ConfigError(f"{type(self).__name__}: unknown config key(s) {', '.join(unknown)}; "
                              f"known: {', '.join(DEFAULTS)}")
        settings = {**DEFAULTS, **config}
        self.opponents = _weights(settings["opponents"])
        scale = settings["score_scale_bb_per_hand"]
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise ConfigError(f"score_scale_bb_per_hand must be a positive number, got {scale!r}",
                              field="score_scale_bb_per_hand")
        self.template = {key: settings[key] for key in
                         ("hands", "small_blind", "big_blind", "starting_stack", "reveal_opponent")}
        if not isinstance(settings["duplicate"], bool):
            raise ConfigError(f"duplicate must be true or false, got {settings['duplicate']!r}", field="duplicate")
        # Duplicate for a model is duplicate *scoring*: mirroring the seats within its own match would show it the
        # opponent's cards of the previous hand. The par plays the same deals from the model's seat, unseen.
        # ``mirror_seats`` is that mirrored format, for scripted players and bots, which remember no cards: each deal is
        # played from both seats of the match itself, which cancels the luck of the cards without a par's own luck.
        if not isinstance(settings["mirror_seats"], bool):
            raise ConfigError(f"mirror_seats must be true or false, got {settings['mirror_seats']!r}",
                              field="mirror_seats")
        if settings["mirror_seats"] and settings["hands"] % 2:
            raise ConfigError(f"mirror_seats needs an even number of hands, got {settings['hands']!r}", field="hands")
        self.template["duplicate"] = settings["mirror_seats"]
        self.template["par"] = settings["par"] if settings["duplicate"] else None
        try:  # every rule of a match is checked once here, so a bad group fails before generation starts
            MatchSettings.from_identity({**self.template, "seed": 0, "opponent": self.opponents[0][0]})
        except ValueError as error:
            raise ConfigError(f"{type(self).__name__}: {error}") from None
        self.template["score_scale"] = float(scale * settings["big_blind"] * settings["hands"])

    def case_generator(self, rng: random.Random) -> dict:
        """The match identity: a deal seed (hidden from the model), the opponent and the rules."""
        seed = rng.randrange(SEED_LIMIT)
        total = sum(weight for _, weight in self.opponents)
        point = rng.random() * total
        opponent = self.opponents[-1][0]
        for style, weight in self.opponents:
            point -= weight
            if point < 0:
                opponent = style
                break
        return {"seed": seed, "opponent": opponent, **self.template}

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """The rules, the opponent (when the task reveals it), the tools and how to act."""
        settings = MatchSettings.from_identity(identity)
        opponent = (STYLES[settings.opponent] if settings.reveal_opponent
                    else "a bot whose playing style you are not told")
        duplicate = (
            " Duplicate scoring: the same deals are also played, in a separate match you do not see, by a reference "
            "player from your seat against the same opponent; your score is your chips minus the reference "
            "player's, so the luck of the cards largely cancels." if settings.par else ""
        )
        return (
            f"You are playing a match of {settings.hands} hands of heads-up no-limit Texas hold'em against "
            f"{opponent}. Blinds are {settings.small_blind}/{settings.big_blind}, and every hand starts with "
            f"{settings.starting_stack} chips for each player (stacks are reset each hand). You are on the button "
            "(small blind: first to act before the flop, last after it) in hands 1, 3, 5, ... and the big blind in "
            f"hands 2, 4, 6, ....{duplicate} Standard rules apply: the best five-card hand from your two cards and "
            "the five board cards wins at showdown; a bet or raise must be at least the big blind and at least the "
            "size of the previous bet or raise on the street, and at most your whole stack.\n\n"
            "Play through the tools:\n"
            "- `table` shows the table: your cards, the board, the pot, both stacks, the amount to call, your legal "
            "actions with the minimum and maximum bet or raise, and the hand history.\n"
            '- `act` takes your action: {"action": "fold" | "check" | "call" | "bet" | "raise" | "all_in", '
            '"amount": <chips>}. `amount` is only for bet and raise, and it is your total bet on this street '
            '(raise TO, not by), e.g. {"action": "raise", "amount": 300}.\n'
            "The opponent's moves are played inside each `act` call, and its output tells you what happened, when "
            "a hand is over and your next decision. An illegal action changes nothing; the output lists your legal "
            "actions. This episode owns exactly one match: it cannot be restarted or redealt.\n\n"
            "Your goal is to win as many chips as possible over the whole match; your score is the chips you won "
            "(hands left unplayed count as folded)"
            + (", compared with the reference player's" if settings.par else "")
            + ". Start with `table`, call `act` once per decision, and keep "
            f'playing until the tool output says "{MATCH_OVER}". Then reply with one line summarising the result, '
            "e.g. `Result: +1250 chips`."
        )
