"""The three-statement simulator: exact identities every year, the documented formulas, the financing plug."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import numpy as np
import pytest

from bootcamp_financial_prediction.accounting import IDENTITIES, check_statements
from bootcamp_financial_prediction.items import ITEM_KEYS
from bootcamp_financial_prediction.simulator import Settings, draw_company, next_year, predictability, scale_floor

CONFIGS = [
    {},
    {"noise": 2.5, "guidance": [], "capex_announcement": "range"},
    {"visible_years": 6, "share_issue_probability": 0.5, "zero_debt_probability": 1.0, "no_dividend_probability": 1.0},
    {"noise": 0.0, "revenue_range": [1000, 2000]},
    {"noise": 5.0, "revenue_range": [1e8, 1e9], "zero_debt_probability": 0.0},
]


def all_years(identity: dict) -> list[dict]:
    return [identity["hidden"]["opening"], *identity["statements"], identity["hidden"]["statements"]]


@pytest.mark.parametrize("config", CONFIGS)
def test_every_simulated_year_satisfies_every_identity_exactly(config: dict, make_identity: Callable[..., dict]) -> None:
    checked = 0
    for seed in range(150):
        identity = make_identity(seed, **config)
        years = all_years(identity)
        assert len(years) == identity_visible(config) + 2
        for previous, year in itertools.pairwise(years):
            assert all(isinstance(year[key], int) for key in ITEM_KEYS)
            # tolerance 0: whole units, so every identity holds exactly, not within a rounding error
            assert check_statements(year, previous, 0.0) == [], (seed, year)
            assert all(identity.residual(year, previous) == 0 for identity in IDENTITIES)
            checked += 1
    assert checked == 150 * (identity_visible(config) + 1)


def identity_visible(config: dict) -> int:
    return int(config.get("visible_years", 5))


def test_years_follow_the_documented_formulas_from_the_stored_drivers(make_identity: Callable[..., dict]) -> None:
    for seed in range(40):
        identity = make_identity(seed, share_issue_probability=0.5)
        years = all_years(identity)
        policies = identity["policies"]
        for previous, year, drivers in zip(years, years[1:], identity["hidden"]["drivers"]):
            assert next_year(previous, drivers, policies) == year
            # spot checks of the module doc's formulas, written out independently
            assert year["revenue"] == round(previous["revenue"] * (1 + drivers["revenue_growth"]))
            assert year["interest_expense"] == round(previous["short_term_debt"] * policies["short_term_interest_rate"]
                                                     + previous["debt"] * policies["interest_rate"])
            assert year["depreciation"] == round(previous["fixed_assets"] * policies["depreciation_rate"])
            assert year["amortisation"] == round(previous["intangible_assets"] * policies["amortisation_rate"])
            assert year["intangible_assets"] == previous["intangible_assets"] - year["amortisation"]
            assert year["accrued_expenses"] == round(year["operating_expenses"] * drivers["accrued_days"] / 365)
            assert year["operating_cash_flow"] == (year["net_income"] + year["depreciation"] + year["amortisation"]
                                                   + year["change_in_working_capital"])
            assert year["dividends_paid"] == round(max(0, year["net_income"]) * policies["payout_ratio"])
            assert year["investing_cash_flow"] == -drivers["capital_expenditure"]
            assert year["share_capital"] - previous["share_capital"] == drivers["share_issue"]
            pre_tax = year["net_income"] + year["income_tax"]
            assert year["income_tax"] == round(max(0, pre_tax) * policies["tax_rate"])


def test_short_term_debt_is_the_financing_plug_with_a_minimum_cash_floor(make_identity: Callable[..., dict]) -> None:
    seen = {"borrowed": 0, "repaid": 0, "debt_free": 0, "idle_cash": 0, "scheduled": 0, "both": 0}
    for seed in range(200):
        identity = make_identity(seed)
        years = all_years(identity)
        ratio = identity["policies"]["minimum_cash_ratio"]
        scheduled_rate = identity["policies"]["long_term_repayment_rate"]
        for previous, year in itertools.pairwise(years[1:]):
            minimum = round(year["revenue"] * ratio)
            borrowings = year["short_term_debt"] + year["debt"]
            assert year["cash"] >= minimum
            assert year["debt"] >= 0 and year["short_term_debt"] >= 0
            if borrowings > 0:
                assert year["cash"] == minimum  # no idle cash while borrowing
            # long-term borrowings only fall, at least by the scheduled repayment; new money is short-term
            assert year["debt"] <= previous["debt"] - round(previous["debt"] * scheduled_rate)
            if year["short_term_debt"] > previous["short_term_debt"]:
                assert year["debt"] == previous["debt"] - round(previous["debt"] * scheduled_rate)
            seen["borrowed"] += year["short_term_debt"] > previous["short_term_debt"]
            seen["repaid"] += borrowings < previous["short_term_debt"] + previous["debt"]
            seen["debt_free"] += borrowings == 0
            seen["idle_cash"] += year["cash"] > minimum
            seen["scheduled"] += scheduled_rate > 0 and year["debt"] < previous["debt"]
            seen["both"] += year["short_term_debt"] > 0 and year["debt"] > 0
    assert all(count > 20 for count in seen.values()), seen


def test_legitimate_zeros_occur(make_identity: Callable[..., dict]) -> None:
    hidden = [make_identity(seed)["hidden"]["statements"] for seed in range(200)]
    assert sum(year["debt"] == year["short_term_debt"] == year["interest_expense"] == 0 for year in hidden) > 10
    assert sum(year["dividends_paid"] == 0 for year in hidden) > 10
    assert sum(year["net_income"] < 0 and year["income_tax"] == 0 for year in hidden) >= 1


def test_scenario_arrays_agree_with_the_scalar_path(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(3)
    previous, drivers = identity["statements"][-1], identity["hidden"]["drivers"][-1]
    arrays = {key: np.full(5, value) for key, value in drivers.items()}
    vector = next_year(previous, arrays, identity["policies"])
    scalar = next_year(previous, drivers, identity["policies"])
    for key in ITEM_KEYS:
        assert np.all(np.broadcast_to(vector[key], (5,)) == scalar[key]), key


def test_predictability_is_positive_floored_deterministic_and_follows_the_information() -> None:
    settings = Settings()
    company = draw_company(random.Random(11), settings)
    scales = predictability(company, 5, 256)
    floor = scale_floor(company.years[-2])
    assert set(scales) == set(ITEM_KEYS)
    assert all(value >= float(f"{floor:.3g}") for value in scales.values())
    assert scales == predictability(company, 5, 256)
    # items the policies and announcements fix have no spread beyond the floor
    for key in ("depreciation", "amortisation", "intangible_assets", "interest_expense", "share_capital",
                "investing_cash_flow", "fixed_assets"):
        assert scales[key] == float(f"{floor:.3g}"), key
    assert scales["revenue"] > floor
    # less guidance, wider spread of revenue-driven items
    unguided = draw_company(random.Random(11), Settings(guidance=frozenset()))
    assert predictability(unguided, 5, 256)["revenue"] > scales["revenue"]
