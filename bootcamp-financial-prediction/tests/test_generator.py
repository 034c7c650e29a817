"""The generator: identity shape, the prompt's table and outlook, difficulty knobs, config errors."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from importlib import resources

import pytest
import yaml

from bootcamp_core import ConfigError, Registry
from bootcamp_core.testing import draws
from bootcamp_financial_prediction.answer import ANSWER_FORMAT
from bootcamp_financial_prediction.generator import DATA_MARKER, ForecastGenerator, read_prompt_data
from bootcamp_financial_prediction.items import ITEM_KEYS, LINE_ITEMS
from bootcamp_financial_prediction.outlook import public_view

DEFAULT_CONFIG = yaml.safe_load(
    (resources.files("bootcamp_financial_prediction") / "configs" / "default.yaml").read_text()
)
LEVELS = DEFAULT_CONFIG["instruction_generators"]


def test_identity_holds_drivers_visible_years_and_the_hidden_year() -> None:
    for identity, _ in draws(ForecastGenerator(visible_years=4), 2, 10):
        assert len(identity["statements"]) == len(identity["years"]) == 4
        assert identity["forecast_year"] == identity["years"][-1] + 1
        hidden = identity["hidden"]
        assert set(hidden) == {"statements", "scales", "drivers", "base", "opening"}
        assert list(hidden["statements"]) == list(ITEM_KEYS)
        assert len(hidden["drivers"]) == 5 and set(hidden["scales"]) == set(ITEM_KEYS)
        assert set(identity["policies"]) == {
            "depreciation_rate", "amortisation_rate", "interest_rate", "short_term_interest_rate",
            "long_term_repayment_rate", "tax_rate", "payout_ratio", "minimum_cash_ratio",
        }


def test_prompt_shows_the_visible_years_as_a_bilingual_table(identity: dict) -> None:
    prompt = ForecastGenerator().prompt_func(identity, random.Random(0))
    rows = [line for line in prompt.splitlines() if re.match(r"\| .* \| `\w+` \|", line)]
    assert len(rows) == 26
    for item, row in zip(LINE_ITEMS, rows):
        assert item.english in row and item.chinese in row and f"`{item.key}`" in row
        cells = [cell.strip() for cell in row.split("|")[3:-1]]
        assert [int(cell.replace(",", "")) for cell in cells] == [year[item.key] for year in identity["statements"]]
    for year in identity["years"]:
        assert f"FY{year}" in prompt
    assert f"FY{identity['forecast_year']}" in prompt
    assert prompt.rstrip().endswith(ANSWER_FORMAT)
    assert "calculate_metrics" in prompt and "check_consistency" in prompt


def test_prompt_states_policies_and_outlook(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(5, share_issue_probability=1.0)
    prompt = ForecastGenerator().prompt_func(identity, random.Random(0))
    outlook = identity["outlook"]
    low, high = outlook["revenue_growth"]
    assert f"Revenue growth 营业收入增长率: {low * 100:.3f}% to {high * 100:.3f}%" in prompt
    low, high = outlook["receivable_days"]
    assert f"{low:.2f} to {high:.2f} days" in prompt
    assert f"(announced): {outlook['capital_expenditure'][0]:,}" in prompt
    assert f"raises {outlook['share_issue']:,}" in prompt
    policies = identity["policies"]
    assert (f"{policies['short_term_interest_rate'] * 100:.1f}% of the previous year-end short-term borrowings plus "
            f"{policies['interest_rate'] * 100:.1f}% of the previous year-end long-term borrowings") in prompt
    assert f"{policies['amortisation_rate'] * 100:.1f}% of the previous year-end net intangible assets" in prompt
    assert f"{policies['long_term_repayment_rate'] * 100:.1f}% of the previous year-end balance is repaid" in prompt
    assert "No guidance" not in prompt


def test_prompt_data_block_is_exactly_the_public_information(identity: dict) -> None:
    prompt = ForecastGenerator().prompt_func(identity, random.Random(0))
    data = read_prompt_data(prompt)
    public = public_view(identity)
    assert data == {key: public[key] for key in ("years", "forecast_year", "statements", "policies", "outlook",
                                                 "guidance_history", "one_off_items")}
    assert prompt.count(DATA_MARKER) == 1
    assert read_prompt_data("no data here") is None


def test_the_hidden_part_never_reaches_the_prompt(make_identity: Callable[..., dict]) -> None:
    generator = ForecastGenerator()
    for seed in range(20):
        identity = make_identity(seed)
        prompt = generator.prompt_func(identity, random.Random(0))
        # a different hidden part changes nothing in the prompt
        other = copy.deepcopy(identity)
        other["hidden"] = make_identity(seed + 100)["hidden"]
        assert generator.prompt_func(other, random.Random(0)) == prompt
        assert generator.prompt_func(public_view(identity), random.Random(0)) == prompt
        hidden = identity["hidden"]["statements"]
        for key in ("revenue", "net_income", "total_assets", "cash", "retained_earnings"):
            assert f"{hidden[key]:,}" not in prompt and f":{hidden[key]}," not in prompt, (seed, key)
        assert "hidden" not in prompt and "scales" not in prompt


@pytest.mark.parametrize(
    ("config", "guided", "exact_capex"),
    [
        (LEVELS["full_guidance"]["config"], 7, True),
        (LEVELS["standard"]["config"], 2, True),
        (LEVELS["sparse_guidance"]["config"], 1, False),
        ({"guidance": []}, 0, True),
    ],
)
def test_difficulty_sets_how_much_guidance_is_given(
    make_identity: Callable[..., dict], config: dict, guided: int, exact_capex: bool
) -> None:
    for seed in range(5):
        identity = make_identity(seed, **config)
        outlook = identity["outlook"]
        ranges = [key for key in ("revenue_growth", "gross_margin", "operating_expense_growth", "receivable_days",
                                  "inventory_days", "payable_days", "accrued_days") if outlook[key] is not None]
        assert len(ranges) == guided
        low, high = outlook["capital_expenditure"]
        assert (low == high) is exact_capex
        prompt = ForecastGenerator(**config).prompt_func(identity, random.Random(0))
        assert ("No guidance on" in prompt) is (guided < 7)


def test_the_hidden_drivers_lie_inside_the_guidance(make_identity: Callable[..., dict]) -> None:
    for seed in range(100):
        identity = make_identity(seed, capex_announcement="range", guidance_width=0.5)
        drivers = identity["hidden"]["drivers"][-1]
        outlook = identity["outlook"]
        for driver in ("revenue_growth", "gross_margin", "operating_expense_growth", "receivable_days",
                       "accrued_days"):
            low, high = outlook[driver]
            assert low <= drivers[driver] <= high, (seed, driver)
        low, high = outlook["capital_expenditure"]
        assert low <= drivers["capital_expenditure"] <= high < low * 1.2
        assert drivers["share_issue"] == outlook["share_issue"]


def test_noise_and_guidance_width_widen_the_uncertainty(make_identity: Callable[..., dict]) -> None:
    def spread(**config: object) -> float:
        return sum(make_identity(seed, **config)["hidden"]["scales"]["revenue"] /
                   make_identity(seed, **config)["statements"][-1]["revenue"] for seed in range(10))

    # noise widens what the history cannot tell: unguided revenue growth
    assert spread(noise=2.0, guidance=[]) > spread(noise=0.5, guidance=[])
    assert spread(guidance_width=2.0) > spread(guidance_width=0.5)


def test_default_config_groups() -> None:
    assert {name: group["generation_ratio"] for name, group in LEVELS.items()} == {
        "full_guidance": 1, "standard": 2, "sparse_guidance": 1
    }
    assert DEFAULT_CONFIG["global_config"]["class_name"] == "financial_prediction/forecast"
    for group in LEVELS.values():
        ForecastGenerator(**group["config"])


def test_component_attributes_resolve_within_the_bootcamp(registry: Registry) -> None:
    cls = registry.get_class("generator", "financial_prediction/forecast")
    assert [registry.resolve("tool", name, "financial_prediction") for name in cls.tools] == [
        "financial_prediction/calculate_metrics", "financial_prediction/check_consistency"
    ]
    assert registry.resolve("interaction", cls.interaction, "financial_prediction") == (
        "financial_prediction/answer_feedback"
    )
    assert registry.resolve("reward", cls.reward, "financial_prediction") == "financial_prediction/forecast"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"visible_years": 1}, "visible_years"),
        ({"visible_years": 2.5}, "whole number"),
        ({"noise": -1}, "noise"),
        ({"noise": "high"}, "noise must be a number"),
        ({"noise": True}, "noise must be a number"),
        ({"guidance": "revenue_growth"}, "guidance must be a list"),
        ({"guidance": ["revenue_growth", "weather"]}, "unknown guidance weather"),
        ({"capex_announcement": "vague"}, "capex_announcement"),
        ({"share_issue_probability": 2}, "share_issue_probability"),
        ({"revenue_range": [5000]}, "revenue_range"),
        ({"revenue_range": [5000, 100]}, "revenue_range"),
        ({"scenarios": 3}, "scenarios"),
        ({"scoring": {"sigmas": 0}}, "sigmas"),
        ({"scoring": {"luck": 1}}, "unknown scoring setting luck"),
        ({"scoring": [1]}, "scoring must be a mapping"),
        ({"tool_budget": 0}, "tool_budget"),
        ({"colour": "blue"}, "unknown setting colour"),
    ],
)
def test_bad_config_is_a_clear_config_error(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ForecastGenerator(**config)


def test_scoring_and_tool_budget_settings_reach_the_identity(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(1, scoring={"sigmas": 2.0}, tool_budget=7)
    assert identity["scoring"] == {"sigmas": 2.0, "consistency_tolerance": 1e-4, "guidance_penalty": 0.1}
    assert identity["tool_budget"] == 7
    assert "7 calls" in ForecastGenerator().prompt_func(identity, random.Random(0))


def _position(value: float, bounds: list[float]) -> float:
    low, high = bounds
    return (value - low) / (high - low)


def test_guidance_brackets_the_outcome_off_centre_where_the_track_record_says(
    make_identity: Callable[..., dict],
) -> None:
    off_centre, follows_habit = [], []
    for seed in range(60):
        identity = make_identity(seed)
        drivers = identity["hidden"]["drivers"]
        history = identity["guidance_history"]
        assert [entry["year"] for entry in history] == identity["years"][1:]
        past = [_position(drivers[identity["years"].index(entry["year"])][driver], bounds)
                for entry in history for driver, bounds in entry.items() if driver != "year"]
        assert all(0.0 <= position <= 1.0 for position in past)
        for driver in ("revenue_growth", "gross_margin", "operating_expense_growth", "receivable_days",
                       "accrued_days"):
            position = _position(drivers[-1][driver], identity["outlook"][driver])
            assert 0.0 <= position <= 1.0, (seed, driver)
            off_centre.append(abs(position - 0.5) >= 0.1)
            follows_habit.append(abs(position - sum(past) / len(past)) <= 0.1)
    # never centred on the outcome, and the past ranges tell where in the range it lands
    assert all(off_centre) and all(follows_habit)


def test_prompt_shows_the_track_record_and_the_one_off_items(make_identity: Callable[..., dict]) -> None:
    generator = ForecastGenerator()
    with_one_off = 0
    for seed in range(30):
        identity = make_identity(seed)
        prompt = generator.prompt_func(identity, random.Random(0))
        for entry in identity["guidance_history"]:
            low, high = entry["revenue_growth"]
            assert f"- FY{entry['year']}: revenue growth {low * 100:.3f}% to {high * 100:.3f}%" in prompt
        drivers = identity["hidden"]["drivers"]
        for entry in identity["one_off_items"]:
            index = identity["years"].index(entry["year"])
            assert index >= 1 and drivers[index]["one_off"] == entry["amount"] > 0
            assert drivers[index + 1]["previous_one_off"] == entry["amount"]
            assert f"FY{entry['year']}: selling, general & administrative expenses include a one-off" in prompt
            with_one_off += 1
        if not identity["one_off_items"]:
            assert "No one-off items" in prompt
        # the hidden year has none
        assert drivers[-1]["one_off"] == 0
    assert 10 <= with_one_off <= 28


def test_unguided_margins_and_days_trend(make_identity: Callable[..., dict]) -> None:
    # margins and working-capital days drift year on year, more than their noise: history must be read, not copied
    steps = []
    for seed in range(40):
        identity = make_identity(seed, guidance=["revenue_growth"])
        days = [drivers["receivable_days"] for drivers in identity["hidden"]["drivers"]]
        total = days[-1] - days[0]
        steps.append(abs(total) / (len(days) - 1) > 0.5)
    assert sum(steps) >= 30


def test_the_identity_names_its_hidden_fields() -> None:
    assert ForecastGenerator.hidden_fields == ("hidden",)
