"""The generator: identity, opponent mixes, prompts, the default groups and config errors."""

from __future__ import annotations

from collections import Counter
from importlib import resources

import pytest
import yaml

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import draws
from bootcamp_texas_holdem.bots import STYLES
from bootcamp_texas_holdem.game import MATCH_OVER, Match, MatchSettings, match_score
from bootcamp_texas_holdem.generator import HeadsUpGenerator

DEFAULT = yaml.safe_load((resources.files("bootcamp_texas_holdem") / "configs" / "default.yaml").read_text())
GROUPS = DEFAULT["instruction_generators"]


def test_every_task_deals_from_its_own_seed(registry: Registry) -> None:
    generator = registry.component("generator", "texas_holdem/heads_up")
    assert len({identity["seed"] for identity, _ in draws(generator, 1, 200)}) == 200


def test_identity_is_a_valid_match() -> None:
    for identity, _ in draws(HeadsUpGenerator(hands=6, duplicate=True, big_blind=200, small_blind=100), 3, 50):
        settings = MatchSettings.from_identity(identity)
        assert (settings.hands, settings.par, settings.big_blind, settings.small_blind) == (6, "strong", 200, 100)
        assert settings.duplicate is False  # a model never plays mirrored seats: it would see the opponent's cards
        assert settings.score_scale == 5 * 200 * 6
        assert 0 <= identity["seed"] < 2**48


def test_opponent_mix_follows_the_weights() -> None:
    counts = Counter(identity["opponent"] for identity, _ in draws(
        HeadsUpGenerator(opponents={"strong": 3, "random": 1, "tight_passive": 0}), 5, 800))
    assert set(counts) == {"strong", "random"}
    assert 0.68 < counts["strong"] / 800 < 0.82
    assert {identity["opponent"] for identity, _ in draws(HeadsUpGenerator(opponents="loose_aggressive"), 1)} == {
        "loose_aggressive"}
    assert {identity["opponent"] for identity, _ in draws(HeadsUpGenerator(), 2, 200)} == {
        "adaptive", "adaptive_aggressive"}  # the defaults: the bots that punish trivial play
    assert {identity["opponent"] for identity, _ in draws(HeadsUpGenerator(opponents=sorted(STYLES)), 2, 400)} == set(
        STYLES)
    # the order a config lists the styles in does not change the tasks
    assert draws(HeadsUpGenerator(opponents={"random": 1, "strong": 2}), 4) == draws(
        HeadsUpGenerator(opponents={"strong": 2, "random": 1}), 4)


def test_prompt_states_rules_opponent_format_and_hides_the_seed() -> None:
    identity, prompt = draws(HeadsUpGenerator(opponents="tight_passive"), 3, 1)[0]
    assert "40 hands of heads-up no-limit Texas hold'em" in prompt and "50/100" in prompt and "10000" in prompt
    assert STYLES["tight_passive"] in prompt
    assert '{"action": "fold" | "check" | "call" | "bet" | "raise" | "all_in", "amount": <chips>}' in prompt
    assert "raise TO" in prompt and f'"{MATCH_OVER}"' in prompt and "cannot be restarted" in prompt
    assert str(identity["seed"]) not in prompt
    _, hidden = draws(HeadsUpGenerator(opponents="strong", reveal_opponent=False), 3, 1)[0]
    assert "whose playing style you are not told" in hidden
    assert not any(description in hidden for description in STYLES.values())
    assert "Duplicate scoring" in draws(HeadsUpGenerator(duplicate=True), 3, 1)[0][1]
    assert "Duplicate scoring" not in prompt


def test_duplicate_scoring_never_shows_the_model_its_opponents_cards_and_cancels_luck() -> None:
    """Each deal is dealt to the model once; the par's hidden match on the same deals sets the zero of the score."""
    identity, _ = draws(HeadsUpGenerator(duplicate=True, opponents="random", hands=6), 5, 1)[0]
    match = Match(MatchSettings.from_identity(identity))
    while not match.over:
        match.play(("check_call", None))
    hero_cards = {tuple(hand.holes[hand.hero]) for hand in match.finished}
    opponent_cards = {tuple(hand.holes[1 - hand.hero]) for hand in match.finished}
    assert len(match.finished) == 6 and not hero_cards & opponent_cards  # no deal comes back with seats swapped
    par = match.par_chips()
    again = Match(MatchSettings.from_identity(identity))
    assert again.par_chips() == par  # deterministic: the same deals and bot streams
    assert match.score() == match_score(match.chips_won - par, match.settings.score_scale)
    assert match.score() != match_score(match.chips_won, match.settings.score_scale) or par == 0


def test_default_groups() -> None:
    assert DEFAULT["global_config"]["class_name"] == "texas_holdem/heads_up"
    assert set(GROUPS) == {"vs_adaptive", "vs_adaptive_aggressive", "unknown_opponent"}
    for name, group in GROUPS.items():
        generator = HeadsUpGenerator(**group["config"])
        for identity, _ in draws(generator, 1, 10):
            assert (identity["hands"], identity["starting_stack"]) == (40, 10_000)
            assert identity["opponent"] in ("adaptive", "adaptive_aggressive")
            assert identity["reveal_opponent"] == (name != "unknown_opponent")
            assert identity["duplicate"] is False and identity["par"] is None


def test_mirror_seats_plays_each_deal_from_both_seats() -> None:
    """For scripted players and bots only: hands 2k-1 and 2k share a deal with the seats swapped."""
    identity, _ = draws(HeadsUpGenerator(mirror_seats=True, hands=4, opponents="adaptive"), 5, 1)[0]
    assert identity["duplicate"] is True and identity["par"] is None
    match = Match(MatchSettings.from_identity(identity))
    while not match.over:
        match.play(("check_call", None))
    first, second = match.finished[:2]
    assert first.deal == second.deal and first.holes[first.hero] == second.holes[1 - second.hero]
    assert HeadsUpGenerator.hidden_fields == ("seed",)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"hands": 0}, "hands must be between"),
        ({"duplicate": True, "par": "nobody"}, "unknown par style"),
        ({"duplicate": "yes"}, "duplicate must be true or false"),
        ({"mirror_seats": 1}, "mirror_seats must be true or false"),
        ({"mirror_seats": True, "hands": 5}, "mirror_seats needs an even number of hands"),
        ({"hands": "ten"}, "hands must be an integer"),
        ({"small_blind": 100, "big_blind": 50}, "small_blind <= big_blind"),
        ({"starting_stack": 50}, "must exceed the big blind"),
        ({"opponents": {"shark": 1}}, "unknown opponent style 'shark'"),
        ({"opponents": {"random": 0}}, "positive weight"),
        ({"opponents": {"random": -1}}, "must be a number >= 0"),
        ({"opponents": 3}, "opponents must be"),
        ({"reveal_opponent": "yes"}, "true or false"),
        ({"score_scale_bb_per_hand": 0}, "score_scale_bb_per_hand"),
        ({"blinds": [1, 2]}, r"unknown config key\(s\) blinds; known: hands"),
    ],
)
def test_bad_config_is_a_config_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        HeadsUpGenerator(**config)
