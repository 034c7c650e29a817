"""Accounting rules shared by the simulator's tests, the tools, the reward and the agent: the identities every year
satisfies, sign rules, and the 15 ratios.

Sign conventions: expenses, balances and dividends are positive amounts; cash-flow subtotals carry their sign
(``investing_cash_flow`` is negative when the company spends on fixed assets; ``change_in_working_capital`` is
positive when working capital releases cash). Current liabilities are the accounts payable, the accrued expenses and
the short-term borrowings; ``debt`` is the long-term borrowings.

Identities of one year (``prev`` is the year before):

=============================  ===========================================================================
``gross_profit``               gross_profit = revenue - cost_of_sales
``net_income``                 net_income = gross_profit - operating_expenses - depreciation - amortisation
                               - interest_expense - income_tax
``total_assets``               total_assets = cash + accounts_receivable + inventory + fixed_assets
                               + intangible_assets
``balance``                    total_assets = accounts_payable + accrued_expenses + short_term_debt + debt
                               + share_capital + retained_earnings
``retained_earnings``          retained_earnings = prev.retained_earnings + net_income - dividends_paid
``fixed_assets``               fixed_assets = prev.fixed_assets - depreciation - investing_cash_flow
``intangible_assets``          intangible_assets = prev.intangible_assets - amortisation
``change_in_working_capital``  change_in_working_capital = -Δaccounts_receivable - Δinventory
                               + Δaccounts_payable + Δaccrued_expenses
``operating_cash_flow``        operating_cash_flow = net_income + depreciation + amortisation
                               + change_in_working_capital
``financing_cash_flow``        financing_cash_flow = Δshort_term_debt + Δdebt + Δshare_capital - dividends_paid
``cash``                       cash = prev.cash + operating_cash_flow + investing_cash_flow + financing_cash_flow
=============================  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from bootcamp_financial_prediction.items import ITEM_KEYS, NON_NEGATIVE, RATIOS

__all__ = [
    "DEFAULT_CONSISTENCY_TOLERANCE",
    "IDENTITIES",
    "Failure",
    "Identity",
    "check_statements",
    "consistency_tolerance",
    "ratios",
]

#: Relative tolerance of an identity, as a fraction of the last known year's total assets (at least 1 unit).
DEFAULT_CONSISTENCY_TOLERANCE = 1e-4

Statements = Mapping[str, float]


class Identity(NamedTuple):
    """An accounting identity: ``residual(year, prev)`` is 0 when it holds; ``needs_previous`` for cross-year ones."""

    name: str
    formula: str
    residual: Callable[[Statements, Statements | None], float]
    needs_previous: bool


class Failure(NamedTuple):
    """A rule the statements break: which, by how much, and the formula it checks."""

    name: str
    formula: str
    difference: float


def _delta(year: Statements, prev: Statements, key: str) -> float:
    return year[key] - prev[key]


IDENTITIES: tuple[Identity, ...] = (
    Identity(
        "gross_profit", "gross_profit = revenue - cost_of_sales",
        lambda y, p: y["gross_profit"] - (y["revenue"] - y["cost_of_sales"]), False,
    ),
    Identity(
        "net_income",
        "net_income = gross_profit - operating_expenses - depreciation - amortisation - interest_expense - income_tax",
        lambda y, p: y["net_income"] - (
            y["gross_profit"] - y["operating_expenses"] - y["depreciation"] - y["amortisation"]
            - y["interest_expense"] - y["income_tax"]
        ),
        False,
    ),
    Identity(
        "total_assets",
        "total_assets = cash + accounts_receivable + inventory + fixed_assets + intangible_assets",
        lambda y, p: y["total_assets"] - (
            y["cash"] + y["accounts_receivable"] + y["inventory"] + y["fixed_assets"] + y["intangible_assets"]
        ),
        False,
    ),
    Identity(
        "balance",
        "total_assets = accounts_payable + accrued_expenses + short_term_debt + debt + share_capital "
        "+ retained_earnings",
        lambda y, p: y["total_assets"] - (
            y["accounts_payable"] + y["accrued_expenses"] + y["short_term_debt"] + y["debt"] + y["share_capital"]
            + y["retained_earnings"]
        ),
        False,
    ),
    Identity(
        "retained_earnings", "retained_earnings = previous retained_earnings + net_income - dividends_paid",
        lambda y, p: y["retained_earnings"] - (p["retained_earnings"] + y["net_income"] - y["dividends_paid"]), True,
    ),
    Identity(
        "fixed_assets", "fixed_assets = previous fixed_assets - depreciation - investing_cash_flow",
        lambda y, p: y["fixed_assets"] - (p["fixed_assets"] - y["depreciation"] - y["investing_cash_flow"]), True,
    ),
    Identity(
        "intangible_assets", "intangible_assets = previous intangible_assets - amortisation",
        lambda y, p: y["intangible_assets"] - (p["intangible_assets"] - y["amortisation"]), True,
    ),
    Identity(
        "change_in_working_capital",
        "change_in_working_capital = - change in accounts_receivable - change in inventory "
        "+ change in accounts_payable + change in accrued_expenses",
        lambda y, p: y["change_in_working_capital"] - (
            -_delta(y, p, "accounts_receivable") - _delta(y, p, "inventory") + _delta(y, p, "accounts_payable")
            + _delta(y, p, "accrued_expenses")
        ),
        True,
    ),
    Identity(
        "operating_cash_flow",
        "operating_cash_flow = net_income + depreciation + amortisation + change_in_working_capital",
        lambda y, p: y["operating_cash_flow"] - (
            y["net_income"] + y["depreciation"] + y["amortisation"] + y["change_in_working_capital"]
        ),
        False,
    ),
    Identity(
        "financing_cash_flow",
        "financing_cash_flow = change in short_term_debt + change in debt + change in share_capital - dividends_paid",
        lambda y, p: y["financing_cash_flow"] - (
            _delta(y, p, "short_term_debt") + _delta(y, p, "debt") + _delta(y, p, "share_capital")
            - y["dividends_paid"]
        ),
        True,
    ),
    Identity(
        "cash",
        "cash = previous cash + operating_cash_flow + investing_cash_flow + financing_cash_flow",
        lambda y, p: y["cash"] - (
            p["cash"] + y["operating_cash_flow"] + y["investing_cash_flow"] + y["financing_cash_flow"]
        ),
        True,
    ),
)


def consistency_tolerance(previous: Statements | None, relative: float = DEFAULT_CONSISTENCY_TOLERANCE) -> float:
    """The largest residual an identity may have: ``relative`` × the previous year's total assets, at least 1 unit."""
    scale = abs(float(previous["total_assets"])) if previous else 0.0
    return max(1.0, relative * scale)


def check_statements(
    year: Statements, previous: Statements | None, tolerance: float
) -> list[Failure]:
    """Every identity that fails by more than ``tolerance`` and every negative amount that must not be negative."""
    failures = []
    for identity in IDENTITIES:
        if identity.needs_previous and previous is None:
            continue
        difference = float(identity.residual(year, previous))
        if not abs(difference) <= tolerance:  # NaN fails too
            failures.append(Failure(identity.name, identity.formula, difference))
    for key in NON_NEGATIVE:
        if year[key] < -tolerance:
            failures.append(Failure(f"{key}_not_negative", f"{key} >= 0", float(year[key])))
    return failures


def _ratio(numerator: float, denominator: float, name: str, scale: float = 1.0) -> tuple[float | None, str | None]:
    if denominator == 0:
        return None, f"undefined: {name} is 0"
    return numerator / denominator * scale, None


def ratios(year: Mapping[str, float], previous: Mapping[str, float] | None) -> tuple[dict, dict]:
    """(ratio → value, or ``None`` when its denominator is 0 or an item is missing; ratio → why it is undefined)."""
    missing = [key for key in ITEM_KEYS if key not in year]

    def get(key: str) -> float:
        return float(year[key])

    def operating_income() -> float:
        return get("gross_profit") - get("operating_expenses") - get("depreciation") - get("amortisation")

    formulas: dict[str, Callable[[], tuple[float | None, str | None]]] = {
        "revenue_growth": lambda: (
            (None, "undefined: no previous year") if previous is None
            else _ratio(get("revenue") - previous["revenue"], previous["revenue"], "previous revenue")
        ),
        "gross_margin": lambda: _ratio(get("gross_profit"), get("revenue"), "revenue"),
        "operating_margin": lambda: _ratio(operating_income(), get("revenue"), "revenue"),
        "net_margin": lambda: _ratio(get("net_income"), get("revenue"), "revenue"),
        "return_on_assets": lambda: _ratio(get("net_income"), get("total_assets"), "total_assets"),
        "return_on_equity": lambda: _ratio(
            get("net_income"), get("share_capital") + get("retained_earnings"), "equity (share_capital + retained_earnings)"
        ),
        "current_ratio": lambda: _ratio(
            get("cash") + get("accounts_receivable") + get("inventory"),
            get("accounts_payable") + get("accrued_expenses") + get("short_term_debt"),
            "current liabilities (accounts_payable + accrued_expenses + short_term_debt)",
        ),
        "debt_to_equity": lambda: _ratio(
            get("short_term_debt") + get("debt"), get("share_capital") + get("retained_earnings"),
            "equity (share_capital + retained_earnings)",
        ),
        "liabilities_to_assets": lambda: _ratio(
            get("accounts_payable") + get("accrued_expenses") + get("short_term_debt") + get("debt"),
            get("total_assets"), "total_assets",
        ),
        "interest_coverage": lambda: _ratio(
            operating_income(), get("interest_expense"), "interest_expense (no interest to cover)",
        ),
        "asset_turnover": lambda: _ratio(get("revenue"), get("total_assets"), "total_assets"),
        "receivable_days": lambda: _ratio(get("accounts_receivable"), get("revenue"), "revenue", 365.0),
        "inventory_days": lambda: _ratio(get("inventory"), get("cost_of_sales"), "cost_of_sales", 365.0),
        "payable_days": lambda: _ratio(get("accounts_payable"), get("cost_of_sales"), "cost_of_sales", 365.0),
        "payout_ratio": lambda: _ratio(get("dividends_paid"), get("net_income"), "net_income"),
    }
    values: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for ratio in RATIOS:
        try:
            value, note = formulas[ratio.key]()
        except KeyError as error:
            value, note = None, f"undefined: missing item {error.args[0]}"
        values[ratio.key] = None if value is None else float(f"{value:.6g}")
        if note:
            notes[ratio.key] = note
    if missing:
        notes["missing_items"] = ", ".join(missing)
    return values, notes
