"""The analyst's forecast from what the prompt shows: the reference agent's method.

It reads only the prompt's figures (the visible statements, the policies, the outlook, management's past ranges and
the disclosed one-off items) and never the simulator:

- **guided drivers**: management's ranges bracket the outcome but are not centred on it. Where the outcome landed in
  each past range (0 at the bottom, 1 at the top) is read from the track record and statements; the forecast puts
  the driver at the average of those positions in the announced range.
- **margins and working-capital days** without guidance: a straight-line trend over the visible years, one year on.
- **SG&A growth** without guidance: the elasticity of recurring SG&A (one-off charges taken out) to revenue growth in
  the years whose revenue moved the same way as the forecast's, times the forecast revenue growth.
- **revenue growth** without guidance: the mean of the observed growth rates.
- **capital spending and share issues**: as announced (the middle of an announced range).

:func:`build_statements` then carries the drivers through the three statements with the policies the prompt states
(depreciation, amortisation, interest on short- and long-term borrowings, tax, payout, the scheduled repayment of
long-term borrowings, the minimum cash and the short-term borrowings that fund a shortfall, surplus cash repaying
short-term then long-term borrowings), in whole units, so every identity holds exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bootcamp_financial_prediction.items import ITEM_KEYS
from bootcamp_financial_prediction.outlook import GUIDED_RATIOS

__all__ = [
    "build_statements",
    "estimate_drivers",
    "forecast_statements",
    "guidance_position",
    "observed_drivers",
    "one_off_amounts",
]

#: Elasticity of operating expenses to revenue growth assumed when the visible years cannot tell it.
DEFAULT_ELASTICITY = 0.5
#: Where the outcome is assumed to sit in a guided range when there is no track record.
DEFAULT_POSITION = 0.5
_RATIO_DRIVERS = ("gross_margin", "receivable_days", "inventory_days", "payable_days", "accrued_days")


def one_off_amounts(public: Mapping) -> dict[int, float]:
    """Visible year -> the one-off SG&A charge disclosed for it."""
    amounts: dict[int, float] = {}
    for entry in public.get("one_off_items") or []:
        if entry.get("item") == "operating_expenses":
            amounts[entry["year"]] = amounts.get(entry["year"], 0.0) + float(entry["amount"])
    return amounts


def observed_drivers(public: Mapping) -> list[dict[str, float]]:
    """Per visible year, the guidable drivers as its statements show them (SG&A growth of the recurring expenses;
    growth rates are missing in the first year)."""
    years, statements = public["years"], public["statements"]
    one_offs = one_off_amounts(public)
    observed: list[dict[str, float]] = []
    for index, year in enumerate(statements):
        values: dict[str, float] = {}
        previous = statements[index - 1] if index else None
        for driver, (_, numerator, denominator, factor) in GUIDED_RATIOS.items():
            if denominator is not None:
                if year[denominator]:
                    values[driver] = year[numerator] / year[denominator] * factor
            elif previous is not None:
                now, before = float(year[numerator]), float(previous[numerator])
                if numerator == "operating_expenses":
                    now -= one_offs.get(years[index], 0.0)
                    before -= one_offs.get(years[index - 1], 0.0)
                if before:
                    values[driver] = now / before - 1.0
        observed.append(values)
    return observed


def guidance_position(public: Mapping) -> float:
    """Where the outcomes landed inside management's past ranges, on average (0: the bottom, 1: the top)."""
    observed = dict(zip(public["years"], observed_drivers(public)))
    positions = []
    for entry in public.get("guidance_history") or []:
        actual = observed.get(entry["year"], {})
        for driver, bounds in entry.items():
            if driver == "year" or driver not in actual:
                continue
            low, high = bounds
            if high > low:
                positions.append((actual[driver] - low) / (high - low))
    return math.fsum(positions) / len(positions) if positions else DEFAULT_POSITION


def _trend(values: Sequence[float]) -> float:
    """The least-squares line through ``values`` (one a year), one year past the last."""
    count = len(values)
    if count < 2:
        return values[0] if values else 0.0
    mean_x = (count - 1) / 2.0
    mean_y = math.fsum(values) / count
    sxx = math.fsum((x - mean_x) ** 2 for x in range(count))
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in enumerate(values)) / sxx
    return mean_y + slope * (count - mean_x)


def _elasticity(pairs: Sequence[tuple[float, float]], forecast_growth: float) -> float:
    """Least squares through the origin of expense growth on revenue growth, in [0, 1.2]."""
    # only the years whose revenue moved the same way as the forecast's: costs are sticky, they fall less than rise
    same_way = [(g, o) for g, o in pairs if (g >= 0) == (forecast_growth >= 0)]
    for chosen in (same_way, pairs):
        denominator = math.fsum(g * g for g, _ in chosen)
        if denominator > 1e-6:
            return min(1.2, max(0.0, math.fsum(g * o for g, o in chosen) / denominator))
    return DEFAULT_ELASTICITY


def estimate_drivers(public: Mapping, position: float | None = None) -> dict[str, float]:
    """The forecast year's drivers (see the module doc); ``position`` overrides where guided drivers sit in their
    ranges (0.5: the midpoint)."""
    outlook = public["outlook"]
    observed = observed_drivers(public)
    where = guidance_position(public) if position is None else position

    def guided(driver: str) -> float | None:
        bounds = outlook.get(driver)
        return None if bounds is None else bounds[0] + where * (bounds[1] - bounds[0])

    def series(driver: str) -> list[float]:
        return [year[driver] for year in observed if driver in year]

    drivers: dict[str, float] = {}
    growth = guided("revenue_growth")
    revenue_history = series("revenue_growth")
    drivers["revenue_growth"] = growth if growth is not None else (
        math.fsum(revenue_history) / len(revenue_history) if revenue_history else 0.0
    )
    for driver in _RATIO_DRIVERS:
        value = guided(driver)
        drivers[driver] = value if value is not None else _trend(series(driver))
    value = guided("operating_expense_growth")
    if value is None:
        pairs = [(year["revenue_growth"], year["operating_expense_growth"]) for year in observed
                 if "revenue_growth" in year and "operating_expense_growth" in year]
        value = _elasticity(pairs, drivers["revenue_growth"]) * drivers["revenue_growth"]
    drivers["operating_expense_growth"] = value
    low, high = outlook["capital_expenditure"]
    drivers["capital_expenditure"] = round((low + high) / 2)
    drivers["share_issue"] = outlook["share_issue"]
    return drivers


def build_statements(public: Mapping, drivers: Mapping[str, float]) -> dict[str, int]:
    """The forecast year's 26 items from the last visible year, ``drivers`` and the stated policies."""
    last = {key: int(value) for key, value in public["statements"][-1].items()}
    policies = public["policies"]
    one_off = one_off_amounts(public).get(public["years"][-1], 0.0)
    year: dict[str, Any] = {}
    capex, issue = int(drivers["capital_expenditure"]), int(drivers["share_issue"])
    year["revenue"] = max(0, round(last["revenue"] * (1.0 + drivers["revenue_growth"])))
    year["cost_of_sales"] = max(0, round(year["revenue"] * (1.0 - drivers["gross_margin"])))
    year["gross_profit"] = year["revenue"] - year["cost_of_sales"]
    year["operating_expenses"] = max(0, round((last["operating_expenses"] - one_off)
                                              * (1.0 + drivers["operating_expense_growth"])))
    year["depreciation"] = round(last["fixed_assets"] * policies["depreciation_rate"])
    year["amortisation"] = round(last["intangible_assets"] * policies["amortisation_rate"])
    year["interest_expense"] = round(last["short_term_debt"] * policies["short_term_interest_rate"]
                                     + last["debt"] * policies["interest_rate"])
    pre_tax = (year["gross_profit"] - year["operating_expenses"] - year["depreciation"] - year["amortisation"]
               - year["interest_expense"])
    year["income_tax"] = round(max(0, pre_tax) * policies["tax_rate"])
    year["net_income"] = pre_tax - year["income_tax"]
    year["accounts_receivable"] = max(0, round(year["revenue"] * drivers["receivable_days"] / 365.0))
    year["inventory"] = max(0, round(year["cost_of_sales"] * drivers["inventory_days"] / 365.0))
    year["accounts_payable"] = max(0, round(year["cost_of_sales"] * drivers["payable_days"] / 365.0))
    year["accrued_expenses"] = max(0, round(year["operating_expenses"] * drivers["accrued_days"] / 365.0))
    year["fixed_assets"] = last["fixed_assets"] - year["depreciation"] + capex
    year["intangible_assets"] = last["intangible_assets"] - year["amortisation"]
    year["dividends_paid"] = round(max(0, year["net_income"]) * policies["payout_ratio"])
    year["share_capital"] = last["share_capital"] + issue
    year["retained_earnings"] = last["retained_earnings"] + year["net_income"] - year["dividends_paid"]
    year["change_in_working_capital"] = (
        -(year["accounts_receivable"] - last["accounts_receivable"]) - (year["inventory"] - last["inventory"])
        + (year["accounts_payable"] - last["accounts_payable"])
        + (year["accrued_expenses"] - last["accrued_expenses"])
    )
    year["operating_cash_flow"] = (
        year["net_income"] + year["depreciation"] + year["amortisation"] + year["change_in_working_capital"]
    )
    year["investing_cash_flow"] = -capex
    # long-term borrowings fall by the scheduled repayment; cash must reach the minimum (short-term borrowings fund
    # the shortfall); cash above it repays short-term borrowings first, then long-term ones
    scheduled = round(last["debt"] * policies["long_term_repayment_rate"])
    minimum = math.ceil(year["revenue"] * policies["minimum_cash_ratio"])
    available = last["cash"] + year["operating_cash_flow"] - capex + issue - year["dividends_paid"] - scheduled
    surplus = max(0, available - minimum)
    short_repaid = min(last["short_term_debt"], surplus)
    long_repaid = min(last["debt"] - scheduled, surplus - short_repaid)
    year["short_term_debt"] = last["short_term_debt"] + max(0, minimum - available) - short_repaid
    year["debt"] = last["debt"] - scheduled - long_repaid
    year["cash"] = available + max(0, minimum - available) - short_repaid - long_repaid
    year["financing_cash_flow"] = (
        (year["short_term_debt"] - last["short_term_debt"]) + (year["debt"] - last["debt"]) + issue
        - year["dividends_paid"]
    )
    year["total_assets"] = (year["cash"] + year["accounts_receivable"] + year["inventory"] + year["fixed_assets"]
                            + year["intangible_assets"])
    return {key: int(year[key]) for key in ITEM_KEYS}


def forecast_statements(public: Mapping) -> dict[str, int]:
    """The analyst's forecast: :func:`estimate_drivers` carried through :func:`build_statements`."""
    return build_statements(public, estimate_drivers(public))
