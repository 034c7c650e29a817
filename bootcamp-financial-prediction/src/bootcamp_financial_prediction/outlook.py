"""What the prompt tells about the forecast year, and the checks of a forecast against it.

An identity has a public part (the visible years, the company's policies, management's outlook, the scoring
settings and the tool budget) and ``identity["hidden"]`` (the hidden year, every year's drivers, the company's base
parameters, the opening balance and the predictability scales). Prompts, tools and the reference agent only ever
see :func:`public_view`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

__all__ = [
    "GUIDED_RATIOS",
    "HIDDEN_KEY",
    "Breach",
    "check_outlook",
    "last_visible",
    "public_view",
    "recurring_previous",
]

#: The key of the identity's hidden part.
HIDDEN_KEY = "hidden"

#: Tolerance of a guided ratio (growth or margin, as a fraction) and of guided days, for the rounding to whole units.
FRACTION_TOLERANCE = 0.0005
DAYS_TOLERANCE = 0.5

#: Guided drivers and how a forecast shows them: (label, numerator, denominator item of the same year or None for
#: growth over the last visible year, factor).
GUIDED_RATIOS: dict[str, tuple[str, str, str | None, float]] = {
    "revenue_growth": ("revenue growth", "revenue", None, 1.0),
    "gross_margin": ("gross margin", "gross_profit", "revenue", 1.0),
    "operating_expense_growth": ("SG&A growth", "operating_expenses", None, 1.0),
    "receivable_days": ("receivable days", "accounts_receivable", "revenue", 365.0),
    "inventory_days": ("inventory days", "inventory", "cost_of_sales", 365.0),
    "payable_days": ("payable days", "accounts_payable", "cost_of_sales", 365.0),
    "accrued_days": ("accrued expense days", "accrued_expenses", "operating_expenses", 365.0),
}


class Breach(NamedTuple):
    """A policy or outlook the forecast does not follow: how far off it is, and the distance that costs the most."""

    name: str
    rule: str
    excess: float
    allowance: float


def public_view(identity: Mapping) -> dict:
    """The identity without its hidden part: everything the prompt shows."""
    return {key: value for key, value in identity.items() if key != HIDDEN_KEY}


def last_visible(identity: Mapping) -> dict:
    """The last visible year's statements."""
    return identity["statements"][-1]


def recurring_previous(public: Mapping) -> dict:
    """The last visible year with its one-off SG&A charge (if any) taken out: what guided SG&A growth grows from."""
    previous = dict(public["statements"][-1])
    year = public["years"][-1] if public.get("years") else None
    for entry in public.get("one_off_items") or []:
        if entry.get("year") == year and entry.get("item") == "operating_expenses":
            previous["operating_expenses"] = previous["operating_expenses"] - entry["amount"]
    return previous


def _guided_value(forecast: Mapping[str, float], previous: Mapping[str, float], driver: str) -> float | None:
    _, numerator, denominator, factor = GUIDED_RATIOS[driver]
    if denominator is None:
        if previous[numerator] == 0:
            return None
        return forecast[numerator] / previous[numerator] - 1.0
    if forecast[denominator] == 0:
        return None
    return forecast[numerator] / forecast[denominator] * factor


def check_outlook(forecast: Mapping[str, float], public: Mapping, tolerance: float) -> list[Breach]:
    """Every announced range, announcement or policy the forecast breaks, with how far off it is."""
    # slack for the rounding to whole units: 0.05 percentage point on a ratio, half a day, ``tolerance`` on money
    previous = public["statements"][-1]
    recurring = recurring_previous(public)
    outlook = public["outlook"]
    policies = public["policies"]
    money = max(1.0, 0.01 * abs(float(previous["revenue"])))  # 1% of revenue costs a whole breach
    breaches = []
    for driver, (label, *_) in GUIDED_RATIOS.items():
        guided = outlook.get(driver)
        if guided is None:
            continue
        low, high = guided
        slack = DAYS_TOLERANCE if driver.endswith("_days") else FRACTION_TOLERANCE
        rule = f"{label} within the guided range {low} to {high}"
        value = _guided_value(forecast, recurring, driver)
        if value is None:
            breaches.append(Breach(driver, rule + " (undefined: its denominator is 0)", 1.0, 1.0))
            continue
        excess = max(low - value, value - high, 0.0)
        if excess > slack:
            breaches.append(Breach(driver, rule, excess, max((high - low) / 2, slack)))
    low, high = outlook["capital_expenditure"]
    spend = -float(forecast["investing_cash_flow"])
    excess = max(low - spend, spend - high, 0.0)
    if excess > tolerance:
        rule = f"capital expenditure (-investing_cash_flow) {'of' if low == high else 'within'} the announced " + (
            f"{low}" if low == high else f"{low} to {high}"
        )
        breaches.append(Breach("capital_expenditure", rule, excess, max((high - low) / 2, money)))
    issued = float(forecast["share_capital"]) - float(previous["share_capital"])
    excess = abs(issued - outlook["share_issue"])
    if excess > tolerance:
        breaches.append(Breach(
            "share_issue", f"share_capital grows by the announced share issue ({outlook['share_issue']})", excess, money
        ))
    expected = max(0.0, float(forecast["net_income"])) * policies["payout_ratio"]
    excess = abs(float(forecast["dividends_paid"]) - expected)
    if excess > tolerance:
        breaches.append(Breach(
            "dividend_policy", f"dividends_paid = {policies['payout_ratio']:g} x net income (0 on a loss)", excess, money
        ))
    minimum = float(forecast["revenue"]) * policies["minimum_cash_ratio"]
    excess = minimum - float(forecast["cash"])
    if excess > tolerance:
        breaches.append(Breach(
            "minimum_cash", f"cash >= {policies['minimum_cash_ratio']:g} x revenue", excess, money
        ))
    scheduled = round(float(previous["debt"]) * policies["long_term_repayment_rate"])
    excess = float(forecast["debt"]) - (float(previous["debt"]) - scheduled)
    if excess > tolerance:
        breaches.append(Breach(
            "scheduled_repayment",
            f"long-term borrowings (debt) repaid on schedule: at most {int(previous['debt']) - scheduled}", excess, money
        ))
    idle = min(float(forecast["cash"]) - minimum, float(forecast["short_term_debt"]) + float(forecast["debt"]))
    if idle > tolerance:
        breaches.append(Breach(
            "debt_repayment",
            "cash above the minimum repays borrowings first (no idle cash while short_term_debt + debt > 0)", idle,
            money,
        ))
    return breaches
