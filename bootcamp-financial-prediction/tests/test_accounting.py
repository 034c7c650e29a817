"""Identities, sign rules and the 15 ratios, including zero denominators."""

from __future__ import annotations

import json
import math

import pytest

from bootcamp_financial_prediction.accounting import IDENTITIES, check_statements, consistency_tolerance, ratios
from bootcamp_financial_prediction.items import ITEM_KEYS, LINE_ITEMS, RATIOS

PREVIOUS = {
    "revenue": 1000, "cost_of_sales": 600, "gross_profit": 400, "operating_expenses": 200, "depreciation": 50,
    "amortisation": 5, "interest_expense": 10, "income_tax": 35, "net_income": 100, "cash": 100,
    "accounts_receivable": 150, "inventory": 80, "fixed_assets": 500, "intangible_assets": 60, "total_assets": 890,
    "accounts_payable": 70, "accrued_expenses": 40, "short_term_debt": 50, "debt": 200, "share_capital": 300,
    "retained_earnings": 230, "change_in_working_capital": -35, "operating_cash_flow": 120,
    "investing_cash_flow": -60, "financing_cash_flow": -40, "dividends_paid": 30,
}
# One year on from PREVIOUS, consistent by construction (worked by hand).
YEAR = {
    "revenue": 1100, "cost_of_sales": 660, "gross_profit": 440, "operating_expenses": 210, "depreciation": 50,
    "amortisation": 6, "interest_expense": 12, "income_tax": 42, "net_income": 120, "cash": 115,
    "accounts_receivable": 160, "inventory": 90, "fixed_assets": 520, "intangible_assets": 54, "total_assets": 939,
    "accounts_payable": 75, "accrued_expenses": 45, "short_term_debt": 40, "debt": 180, "share_capital": 300,
    "retained_earnings": 299, "change_in_working_capital": -10, "operating_cash_flow": 166,
    "investing_cash_flow": -70, "financing_cash_flow": -81, "dividends_paid": 51,
}


def test_the_item_and_ratio_catalogues() -> None:
    assert len(LINE_ITEMS) == 26 and len(set(ITEM_KEYS)) == 26
    assert all(item.english and item.chinese and item.statement for item in LINE_ITEMS)
    assert len(RATIOS) == 15 and len({ratio.key for ratio in RATIOS}) == 15
    assert all(any("\u4e00" <= char <= "\u9fff" for char in item.chinese) for item in LINE_ITEMS)


def test_a_consistent_year_passes_with_zero_tolerance() -> None:
    assert check_statements(YEAR, PREVIOUS, 0.0) == []
    assert [identity.residual(YEAR, PREVIOUS) for identity in IDENTITIES] == [0] * len(IDENTITIES)


@pytest.mark.parametrize("key", ITEM_KEYS)
def test_moving_any_single_item_breaks_an_identity(key: str) -> None:
    broken = {**YEAR, key: YEAR[key] + 7}
    failures = check_statements(broken, PREVIOUS, 1.0)
    assert failures, key
    assert all(abs(failure.difference) == 7 for failure in failures if not failure.name.endswith("not_negative"))


def test_failures_name_the_identity_and_the_size() -> None:
    broken = {**YEAR, "cash": YEAR["cash"] + 30, "total_assets": YEAR["total_assets"] + 30}
    failures = {failure.name: failure for failure in check_statements(broken, PREVIOUS, 1.0)}
    assert set(failures) == {"balance", "cash"}
    assert failures["balance"].difference == 30 and "accounts_payable" in failures["balance"].formula
    assert failures["cash"].difference == 30


def test_tolerance_is_relative_to_the_previous_total_assets() -> None:
    assert consistency_tolerance(PREVIOUS, 1e-4) == 1.0  # never below one unit
    assert consistency_tolerance({**PREVIOUS, "total_assets": 5_000_000}, 1e-4) == 500.0
    nearly = {**YEAR, "gross_profit": YEAR["gross_profit"] + 0.5, "net_income": YEAR["net_income"] + 0.5}
    assert {failure.name for failure in check_statements(nearly, PREVIOUS, 1.0)} <= {"retained_earnings", "operating_cash_flow"}
    assert not check_statements(nearly, PREVIOUS, 1.0)


def test_negative_amounts_that_must_be_positive_fail() -> None:
    # a consistent but impossible year: negative cash financed by nothing
    year = {**YEAR, "cash": -10, "total_assets": 760, "retained_earnings": 205, "net_income": -4, "income_tax": 172,
            "operating_cash_flow": 31}
    names = {failure.name for failure in check_statements(year, PREVIOUS, 1.0)}
    assert "cash_not_negative" in names


def test_cross_year_identities_are_skipped_without_a_previous_year() -> None:
    broken = {**YEAR, "retained_earnings": 0, "total_assets": 640}
    assert {failure.name for failure in check_statements(broken, None, 1.0)} == {"total_assets"}


def test_ratios_of_a_normal_year() -> None:
    values, notes = ratios(YEAR, PREVIOUS)
    assert notes == {}
    assert values["revenue_growth"] == pytest.approx(0.1)
    assert values["gross_margin"] == pytest.approx(0.4)
    assert values["operating_margin"] == pytest.approx(174 / 1100, rel=1e-5)
    assert values["net_margin"] == pytest.approx(120 / 1100, rel=1e-5)
    assert values["return_on_assets"] == pytest.approx(120 / 939, rel=1e-5)
    assert values["return_on_equity"] == pytest.approx(120 / 599, rel=1e-5)
    # current liabilities: payables, accruals and short-term borrowings
    assert values["current_ratio"] == pytest.approx(365 / 160, rel=1e-5)
    assert values["debt_to_equity"] == pytest.approx(220 / 599, rel=1e-5)
    assert values["liabilities_to_assets"] == pytest.approx(340 / 939, rel=1e-5)
    assert values["interest_coverage"] == pytest.approx(14.5)
    assert values["asset_turnover"] == pytest.approx(1100 / 939, rel=1e-5)
    assert values["receivable_days"] == pytest.approx(160 / 1100 * 365, rel=1e-5)
    assert values["inventory_days"] == pytest.approx(90 / 660 * 365, rel=1e-5)
    assert values["payable_days"] == pytest.approx(75 / 660 * 365, rel=1e-5)
    assert values["payout_ratio"] == pytest.approx(51 / 120, rel=1e-5)


def test_zero_denominators_give_null_with_a_reason_never_inf_or_nan() -> None:
    year = {key: 0 for key in ITEM_KEYS}
    values, notes = ratios(year, {**PREVIOUS, "revenue": 0})
    assert set(values) == {ratio.key for ratio in RATIOS}
    assert all(value is None for value in values.values())
    assert set(notes) == set(values)
    assert all(note.startswith("undefined: ") for note in notes.values())
    assert "interest" in notes["interest_coverage"] and "revenue" in notes["gross_margin"]
    json.dumps(values, allow_nan=False)
    # a debt-free year: only the coverage is undefined, leverage is a legitimate 0
    debt_free = {**YEAR, "interest_expense": 0, "short_term_debt": 0, "debt": 0}
    values, notes = ratios(debt_free, PREVIOUS)
    assert values["interest_coverage"] is None and list(notes) == ["interest_coverage"]
    assert values["debt_to_equity"] == 0.0
    assert all(value is None or math.isfinite(value) for value in values.values())


def test_missing_items_leave_only_their_ratios_undefined() -> None:
    partial = {key: YEAR[key] for key in ("revenue", "cost_of_sales", "gross_profit")}
    values, notes = ratios(partial, PREVIOUS)
    assert values["gross_margin"] == pytest.approx(0.4) and values["revenue_growth"] == pytest.approx(0.1)
    assert values["net_margin"] is None and "missing item net_income" in notes["net_margin"]
    assert "debt" in notes["missing_items"]
    assert ratios(YEAR, None)[0]["revenue_growth"] is None
