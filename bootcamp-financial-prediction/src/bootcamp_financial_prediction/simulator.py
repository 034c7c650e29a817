"""The three-statement simulator: economic drivers in, an income statement, a balance sheet and a cash-flow statement
out, every year balancing exactly.

All amounts are integers (thousands of the currency), so the identities in
:mod:`bootcamp_financial_prediction.accounting` hold exactly, not within a rounding error: each driver-based amount
is rounded to a whole unit once, and every other item is a sum or difference of whole units.

One year from the year before (``prev``), the year's drivers and the company's policies::

    revenue             = round(prev.revenue * (1 + revenue_growth))
    cost_of_sales       = round(revenue * (1 - gross_margin))                   # margin carries the cost shocks
    gross_profit        = revenue - cost_of_sales
    operating_expenses  = round((prev.operating_expenses - previous_one_off) * (1 + operating_expense_growth))
                          + one_off                                               # a disclosed one-off charge
    depreciation        = round(prev.fixed_assets * depreciation_rate)
    amortisation        = round(prev.intangible_assets * amortisation_rate)     # acquired intangibles, no additions
    interest_expense    = round(prev.short_term_debt * short_term_interest_rate + prev.debt * interest_rate)
    income_tax          = round(max(0, pre-tax income) * tax_rate)              # no tax on a loss
    net_income          = gross_profit - operating_expenses - depreciation - amortisation - interest_expense
                          - income_tax
    accounts_receivable = round(revenue * receivable_days / 365)
    inventory           = round(cost_of_sales * inventory_days / 365)
    accounts_payable    = round(cost_of_sales * payable_days / 365)
    accrued_expenses    = round(operating_expenses * accrued_days / 365)        # SG&A incurred, not yet paid
    fixed_assets        = prev.fixed_assets - depreciation + capital_expenditure
    intangible_assets   = prev.intangible_assets - amortisation
    dividends_paid      = round(max(0, net_income) * payout_ratio)
    share_capital       = prev.share_capital + share_issue
    retained_earnings   = prev.retained_earnings + net_income - dividends_paid
    change_in_working_capital = -Δreceivables - Δinventory + Δpayables + Δaccrued_expenses
    operating_cash_flow = net_income + depreciation + amortisation + change_in_working_capital
    investing_cash_flow = -capital_expenditure
    # long-term borrowings fall by the scheduled repayment; short-term borrowings are the financing plug: cash
    # before new borrowing must reach the minimum cash, surplus cash repays short-term, then long-term borrowings
    scheduled           = round(prev.debt * long_term_repayment_rate)
    minimum_cash        = round(revenue * minimum_cash_ratio)
    available           = prev.cash + operating_cash_flow + investing_cash_flow + share_issue - dividends_paid
                          - scheduled
    surplus             = max(0, available - minimum_cash)
    short_term_debt     = prev.short_term_debt + max(0, minimum_cash - available) - min(prev.short_term_debt, surplus)
    debt                = prev.debt - scheduled - min(prev.debt - scheduled, surplus - short-term repayment)
    cash                = available + (short_term_debt - prev.short_term_debt) + (debt - prev.debt + scheduled)
    financing_cash_flow = Δshort_term_debt + Δdebt + share_issue - dividends_paid
    total_assets        = cash + accounts_receivable + inventory + fixed_assets + intangible_assets

Every year's drivers (visible and hidden alike) come from one process: revenue growth moves with a business cycle
(a sine of 4–7 years) around the company's base, plus noise; gross margin and the working-capital days drift by a
fixed step a year, plus noise; operating expenses are sticky — recurring SG&A follows revenue growth with an
elasticity that is lower when revenue falls than when it rises, plus noise; capital spending scatters around a
share of revenue. One visible year (never the first) may carry a disclosed one-off SG&A charge that does not recur.
For each guided driver management announces a range before the year, knowing the outcome: the outcome sits at the
company's habitual position in the range (near the top for conservative management, near the bottom for
promotional management; never the midpoint) plus a little jitter. The ranges of the visible years are shown as a
track record, so the habit can be read. In the hidden year capital spending is the announced amount (or inside the
announced range) and a share issue happens exactly when one is announced.

:func:`next_year` is vectorised: the drivers may be arrays (one value per scenario), which is how
:func:`predictability` measures how much each hidden item can still vary given what the prompt tells.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from bootcamp_financial_prediction.items import ITEM_KEYS

__all__ = [
    "GUIDABLE",
    "OPENING_KEYS",
    "POLICY_KEYS",
    "Company",
    "Settings",
    "draw_company",
    "next_year",
    "predictability",
    "scale_floor",
    "scenario_drivers",
    "spread",
]

POLICY_KEYS = (
    "depreciation_rate", "amortisation_rate", "interest_rate", "short_term_interest_rate", "long_term_repayment_rate",
    "tax_rate", "payout_ratio", "minimum_cash_ratio",
)
#: The items of a year that the next year is computed from (the opening balance holds exactly these).
OPENING_KEYS = (
    "revenue", "operating_expenses", "cash", "accounts_receivable", "inventory", "fixed_assets", "intangible_assets",
    "accounts_payable", "accrued_expenses", "short_term_debt", "debt", "share_capital", "retained_earnings",
)
#: Drivers management can guide, as (driver, the config name that turns its guidance on).
GUIDABLE = {
    "revenue_growth": "revenue_growth",
    "gross_margin": "gross_margin",
    "operating_expense_growth": "operating_expense_growth",
    "receivable_days": "working_capital",
    "inventory_days": "working_capital",
    "payable_days": "working_capital",
    "accrued_days": "working_capital",
}
#: Drivers measured as a change from the year before: the first visible year shows none of them.
_GROWTH_DRIVERS = ("revenue_growth", "operating_expense_growth")
_DAYS = ("receivable_days", "inventory_days", "payable_days", "accrued_days")
_DRIVER_BOUNDS = {"revenue_growth": (-0.6, 1.0), "gross_margin": (0.02, 0.95), "operating_expense_growth": (-0.6, 1.0)}
#: Chance that one visible year carries a disclosed one-off SG&A charge.
ONE_OFF_PROBABILITY = 0.7


def _whole(value: Any) -> Any:
    """Round half to even to whole units: ``round`` for a scalar, ``np.rint`` (the same rule) for scenario arrays."""
    if isinstance(value, np.ndarray):
        return np.rint(value).astype(np.int64)
    return round(value)


def _maximum(left: Any, right: Any) -> Any:
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        return np.maximum(left, right)
    return max(left, right)


def _minimum(left: Any, right: Any) -> Any:
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        return np.minimum(left, right)
    return min(left, right)


def next_year(previous: Mapping[str, Any], drivers: Mapping[str, Any], policies: Mapping[str, float]) -> dict:
    """The 26 items of a year from the year before, its drivers and the company's policies (see the module doc)."""
    # Scalar drivers give ints; arrays (one value per scenario) give int64 arrays for the items that depend on them.
    # Both paths use the same IEEE double products and the same rounding, so they agree exactly.
    prev = {key: int(previous[key]) for key in OPENING_KEYS}
    capital_expenditure = drivers["capital_expenditure"]
    share_issue = drivers["share_issue"]
    revenue = _whole(prev["revenue"] * (1.0 + drivers["revenue_growth"]))
    cost_of_sales = _whole(revenue * (1.0 - drivers["gross_margin"]))
    gross_profit = revenue - cost_of_sales
    # growth applies to the recurring expenses: last year's one-off charge drops out, this year's is added
    recurring = prev["operating_expenses"] - drivers.get("previous_one_off", 0)
    one_off = drivers.get("one_off", 0)
    operating_expenses = _whole(recurring * (1.0 + drivers["operating_expense_growth"])) + one_off
    depreciation = _whole(prev["fixed_assets"] * policies["depreciation_rate"])
    amortisation = _whole(prev["intangible_assets"] * policies["amortisation_rate"])
    interest_expense = _whole(prev["short_term_debt"] * policies["short_term_interest_rate"]
                              + prev["debt"] * policies["interest_rate"])
    pre_tax = gross_profit - operating_expenses - depreciation - amortisation - interest_expense
    income_tax = _whole(_maximum(pre_tax, 0) * policies["tax_rate"])
    net_income = pre_tax - income_tax
    accounts_receivable = _whole(revenue * drivers["receivable_days"] / 365.0)
    inventory = _whole(cost_of_sales * drivers["inventory_days"] / 365.0)
    accounts_payable = _whole(cost_of_sales * drivers["payable_days"] / 365.0)
    accrued_expenses = _whole(operating_expenses * drivers["accrued_days"] / 365.0)
    fixed_assets = prev["fixed_assets"] - depreciation + capital_expenditure
    intangible_assets = prev["intangible_assets"] - amortisation
    dividends_paid = _whole(_maximum(net_income, 0) * policies["payout_ratio"])
    share_capital = prev["share_capital"] + share_issue
    retained_earnings = prev["retained_earnings"] + net_income - dividends_paid
    change_in_working_capital = (
        -(accounts_receivable - prev["accounts_receivable"]) - (inventory - prev["inventory"])
        + (accounts_payable - prev["accounts_payable"]) + (accrued_expenses - prev["accrued_expenses"])
    )
    operating_cash_flow = net_income + depreciation + amortisation + change_in_working_capital
    investing_cash_flow = -capital_expenditure
    scheduled = _whole(prev["debt"] * policies["long_term_repayment_rate"])
    minimum_cash = _whole(revenue * policies["minimum_cash_ratio"])
    available = prev["cash"] + operating_cash_flow + investing_cash_flow + share_issue - dividends_paid - scheduled
    borrowing = _maximum(minimum_cash - available, 0)
    surplus = _maximum(available - minimum_cash, 0)
    short_repayment = _minimum(prev["short_term_debt"], surplus)
    long_repayment = _minimum(prev["debt"] - scheduled, surplus - short_repayment)
    short_term_debt = prev["short_term_debt"] + borrowing - short_repayment
    debt = prev["debt"] - scheduled - long_repayment
    cash = available + borrowing - short_repayment - long_repayment
    financing_cash_flow = (short_term_debt - prev["short_term_debt"]) + (debt - prev["debt"]) + share_issue \
        - dividends_paid
    total_assets = cash + accounts_receivable + inventory + fixed_assets + intangible_assets
    values = locals()
    return {key: values[key] for key in ITEM_KEYS}


@attrs.frozen(kw_only=True)
class Settings:
    """The difficulty knobs of a generated company (the generator validates them)."""

    visible_years: int = 5
    noise: float = 1.0
    guidance: frozenset[str] = frozenset({"revenue_growth", "gross_margin", "operating_expense_growth",
                                          "working_capital"})
    guidance_width: float = 1.0
    capex_announcement: str = "exact"
    share_issue_probability: float = 0.15
    zero_debt_probability: float = 0.25
    no_dividend_probability: float = 0.2
    revenue_range: tuple[float, float] = (50_000.0, 2_000_000.0)
    scenarios: int = 256


@attrs.frozen(kw_only=True)
class Company:
    """A simulated company: its base parameters, policies, years and the forward-looking information."""

    base: dict[str, float]
    policies: dict[str, float]
    opening: dict[str, int]
    years: list[dict[str, int]]            # visible years, then the hidden one
    drivers: list[dict[str, float]]        # the drivers of each of those years
    outlook: dict[str, Any]                # guidance ranges, announced capital expenditure and share issue
    guidance_history: list[dict[str, Any]]  # per visible year from the second: {"index": i, driver: [low, high]}
    one_offs: dict[int, int]               # visible year index -> the one-off SG&A charge disclosed for it


def _truncated(rng: random.Random, limit: float) -> float:
    """A normal draw with standard deviation ``limit / 2``, redrawn until it lies within ``±limit``."""
    for _ in range(1000):
        value = rng.gauss(0.0, limit / 2.0)
        if abs(value) <= limit:
            return value
    return 0.0


def _noise(base: Mapping[str, float], driver: str) -> float:
    return base[f"{driver}_noise"]


def _opex_growth(base: Mapping[str, float], revenue_growth: Any) -> Any:
    """Sticky costs: operating expenses follow revenue up with one elasticity and down with a smaller one."""
    if isinstance(revenue_growth, np.ndarray):
        return np.where(revenue_growth >= 0, base["elasticity_up"], base["elasticity_down"]) * revenue_growth
    return (base["elasticity_up"] if revenue_growth >= 0 else base["elasticity_down"]) * revenue_growth


def _clip_driver(driver: str, value: Any) -> Any:
    """Keep a driver where the model makes sense (no revenue below zero, margins inside (0, 1), days >= 1)."""
    low, high = _DRIVER_BOUNDS.get(driver, (1.0, 365.0))
    if isinstance(value, np.ndarray):
        return np.clip(value, low, high)
    return min(high, max(low, float(value)))


def _typical(base: Mapping[str, float], driver: str, index: int) -> float:
    """A driver's value in year ``index`` (0 = the first visible year) before the year's own shock: revenue growth
    moves with the business cycle, margins and working-capital days drift by a fixed step a year."""
    if driver == "revenue_growth":
        cycle = math.sin(2.0 * math.pi * index / base["revenue_cycle_period"] + base["revenue_cycle_phase"])
        return base["revenue_growth"] + base["revenue_cycle_amplitude"] * cycle
    return base[driver] + base[f"{driver}_drift"] * index


def _draw_base(rng: random.Random, settings: Settings) -> tuple[dict[str, float], dict[str, float]]:
    noise = settings.noise
    elasticity_up = rng.uniform(0.3, 0.8)
    margin_unit = rng.uniform(0.002, 0.005)
    days_unit = rng.uniform(0.3, 1.0)
    base = {
        "revenue_growth": rng.uniform(-0.03, 0.15),
        "revenue_growth_noise": noise * rng.uniform(0.01, 0.03),
        "revenue_cycle_amplitude": rng.uniform(0.01, 0.05),
        "revenue_cycle_period": float(rng.randint(4, 7)),
        "revenue_cycle_phase": rng.uniform(0.0, 2.0 * math.pi),
        "gross_margin": rng.uniform(0.2, 0.55),
        "gross_margin_noise": noise * margin_unit,
        "gross_margin_drift": rng.choice((-1.0, 1.0)) * rng.uniform(0.005, 0.012),
        "elasticity_up": elasticity_up,
        "elasticity_down": elasticity_up * rng.uniform(0.2, 0.5),
        "operating_expense_growth_noise": noise * rng.uniform(0.003, 0.008),
        "receivable_days": rng.uniform(35.0, 85.0),
        "inventory_days": rng.uniform(30.0, 90.0),
        "payable_days": rng.uniform(30.0, 75.0),
        "accrued_days": rng.uniform(20.0, 50.0),
        "capex_ratio": rng.uniform(0.03, 0.10),
        "capex_noise": noise * rng.uniform(0.02, 0.08),
        # where management's ranges put the outcome: conservative guidance lands near the top, promotional near
        # the bottom; a habit the track record shows
        "guidance_position": rng.uniform(0.72, 0.88) if rng.random() < 0.5 else rng.uniform(0.12, 0.28),
        "guidance_jitter": 0.03,
        "one_off_share": rng.uniform(0.05, 0.15) if rng.random() < ONE_OFF_PROBABILITY else 0.0,
        # how wide management's ranges are, before the generator's guidance_width
        "revenue_growth_range": rng.uniform(0.06, 0.12),
        "gross_margin_range": rng.uniform(0.03, 0.06),
        "operating_expense_growth_range": rng.uniform(0.06, 0.12),
    }
    for driver in _DAYS:
        base[f"{driver}_noise"] = noise * days_unit
        base[f"{driver}_drift"] = rng.choice((-1.0, 1.0)) * rng.uniform(1.0, 3.0)
        base[f"{driver}_range"] = rng.uniform(8.0, 16.0)
    policies = {
        "depreciation_rate": rng.randint(8, 20) / 100,
        "amortisation_rate": rng.randint(5, 20) / 100,
        "interest_rate": rng.randint(30, 80) / 1000,
        "short_term_interest_rate": rng.randint(40, 100) / 1000,
        "long_term_repayment_rate": rng.randint(0, 4) * 5 / 100,
        "tax_rate": rng.choice((0.15, 0.2, 0.25)),
        "payout_ratio": 0.0 if rng.random() < settings.no_dividend_probability else rng.randint(2, 12) * 5 / 100,
        "minimum_cash_ratio": rng.randint(5, 15) / 100,
    }
    return base, policies


def _draw_opening(rng: random.Random, settings: Settings, base: dict, policies: dict) -> dict[str, int]:
    low, high = settings.revenue_range
    revenue = round(math.exp(rng.uniform(math.log(low), math.log(high))))
    cost = revenue * (1 - base["gross_margin"])
    fixed_assets = revenue * rng.uniform(0.3, 1.0)
    depreciation_share = policies["depreciation_rate"] * fixed_assets / revenue
    intangibles = round(revenue * rng.uniform(0.02, 0.3))
    amortisation_share = policies["amortisation_rate"] * intangibles / revenue
    operating_margin = rng.uniform(0.03, 0.18)
    opex_share = max(0.03, base["gross_margin"] - operating_margin - depreciation_share - amortisation_share)
    receivables = revenue * base["receivable_days"] / 365
    inventory = cost * base["inventory_days"] / 365
    payables = cost * base["payable_days"] / 365
    cash = revenue * (policies["minimum_cash_ratio"] + rng.uniform(0.0, 0.08))
    accrued = round(revenue * opex_share * base["accrued_days"] / 365)
    assets = round(cash) + round(receivables) + round(inventory) + round(fixed_assets) + intangibles
    borrowings = 0 if rng.random() < settings.zero_debt_probability else round(revenue * rng.uniform(0.1, 0.6))
    # keep at least a quarter of the assets as equity, so the company starts solvent
    borrowings = max(0, min(borrowings, round(assets * 0.75) - round(payables) - accrued))
    short_term = round(borrowings * rng.uniform(0.0, 0.4))
    equity = assets - round(payables) - accrued - borrowings
    share_capital = round(equity * rng.uniform(0.3, 0.7))
    return {
        "revenue": revenue, "operating_expenses": round(revenue * opex_share), "cash": round(cash),
        "accounts_receivable": round(receivables), "inventory": round(inventory), "fixed_assets": round(fixed_assets),
        "intangible_assets": intangibles, "accounts_payable": round(payables), "accrued_expenses": accrued,
        "short_term_debt": short_term, "debt": borrowings - short_term, "share_capital": share_capital,
        "retained_earnings": equity - share_capital,
    }


def _equity(year: Mapping[str, int]) -> int:
    return int(year["share_capital"]) + int(year["retained_earnings"])


def _share_issue(rng: random.Random, settings: Settings, previous: Mapping[str, int]) -> int:
    if rng.random() >= settings.share_issue_probability:
        return 0
    return max(1, round(max(_equity(previous), 0) * rng.uniform(0.05, 0.2)))


def _guidance_range(rng: random.Random, settings: Settings, base: Mapping[str, float], driver: str,
                    actual: float) -> list[float]:
    """The range management announces for a driver whose outcome it knows: ``actual`` sits at the company's habitual
    position inside it (plus a little jitter), never at a fixed point such as the midpoint."""
    days = driver in _DAYS
    width = settings.guidance_width * base[f"{driver}_range"]
    position = min(0.97, max(0.03, base["guidance_position"] + _truncated(rng, 2.0 * base["guidance_jitter"])))
    digits = 2 if days else 5
    low_bound, high_bound = _DRIVER_BOUNDS.get(driver, (1.0, 365.0))
    low = max(low_bound, round(actual - position * width, digits))
    return [low, min(high_bound, round(low + width, digits))]


def _year_drivers(rng: random.Random, settings: Settings, base: dict, previous: Mapping[str, int], index: int,
                  previous_one_off: int) -> tuple[dict, dict]:
    """The drivers of year ``index`` and the ranges management announced for it (guided drivers only)."""
    drivers: dict[str, Any] = {}
    ranges: dict[str, list[float]] = {}
    for driver in ("revenue_growth", "gross_margin", *_DAYS, "operating_expense_growth"):
        typical = (_opex_growth(base, drivers["revenue_growth"]) if driver == "operating_expense_growth"
                   else _typical(base, driver, index))
        drivers[driver] = float(_clip_driver(driver, typical + _noise(base, driver) * rng.gauss(0.0, 1.0)))
        if GUIDABLE[driver] in settings.guidance:
            low, high = ranges[driver] = _guidance_range(rng, settings, base, driver, drivers[driver])
            drivers[driver] = min(high, max(low, drivers[driver]))
    revenue = previous["revenue"] * (1 + drivers["revenue_growth"])
    spend = base["capex_ratio"] * revenue * (1 + base["capex_noise"] * rng.gauss(0.0, 1.0))
    drivers["capital_expenditure"] = max(1, round(spend))
    drivers["share_issue"] = _share_issue(rng, settings, previous)
    drivers["previous_one_off"] = previous_one_off
    drivers["one_off"] = 0
    return drivers, ranges


def _as_int(year: Mapping[str, Any]) -> dict[str, int]:
    return {key: int(value) for key, value in year.items()}


def _one_off_index(rng: random.Random, base: Mapping[str, float], visible: int) -> int | None:
    """The visible year with a one-off SG&A charge (never the first; the last one half the time), or ``None``."""
    if not base["one_off_share"]:
        return None
    return visible - 1 if visible < 3 or rng.random() < 0.5 else rng.randint(1, visible - 2)


def draw_company(rng: random.Random, settings: Settings) -> Company:
    """A company with ``visible_years`` simulated years plus one hidden year, drawn only from ``rng``."""
    base, policies = _draw_base(rng, settings)
    opening = _draw_opening(rng, settings, base, policies)
    visible = settings.visible_years
    one_off_at = _one_off_index(rng, base, visible)
    years: list[dict[str, int]] = []
    drivers: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    one_offs: dict[int, int] = {}
    previous: Mapping[str, int] = opening
    for index in range(visible + 1):
        previous_one_off = one_offs.get(index - 1, 0)
        year_drivers, ranges = _year_drivers(rng, settings, base, previous, index, previous_one_off)
        if index == one_off_at:
            growth = 1 + year_drivers["operating_expense_growth"]
            recurring = (previous["operating_expenses"] - previous_one_off) * growth
            one_offs[index] = year_drivers["one_off"] = max(1, round(recurring * base["one_off_share"]))
        if index == visible:
            outlook: dict[str, Any] = {driver: ranges.get(driver) for driver in GUIDABLE}
            planned = year_drivers["capital_expenditure"]
            if settings.capex_announcement == "range":
                half = max(1, round(planned * 0.1 * settings.guidance_width))
                outlook["capital_expenditure"] = [planned - half, planned + half]
                year_drivers["capital_expenditure"] = min(planned + half, max(planned - half, round(
                    planned + _truncated(rng, half))))
            else:
                outlook["capital_expenditure"] = [planned, planned]
            outlook["share_issue"] = year_drivers["share_issue"]
        elif index and ranges:
            history.append({"index": index, **ranges})
        previous = _as_int(next_year(previous, year_drivers, policies))
        years.append(previous)
        drivers.append(year_drivers)
    return Company(base=base, policies=policies, opening=opening, years=years, drivers=drivers, outlook=outlook,
                   guidance_history=history, one_offs=one_offs)


def scale_floor(last_visible: Mapping[str, float]) -> float:
    """The smallest error scale of any item: 0.1% of the company's size, so a legitimate 0 still has a scale."""
    return max(1.0, 0.001 * max(abs(float(last_visible["revenue"])), abs(float(last_visible["total_assets"]))))


def _truncated_array(generator: np.random.Generator, count: int, limit: float) -> np.ndarray:
    draws = generator.normal(0.0, limit / 2.0, size=2 * count)
    kept = draws[np.abs(draws) <= limit]
    if kept.size < count:  # practically never: 95% of the draws are kept
        kept = np.concatenate([kept, np.clip(draws, -limit, limit)])
    return kept[:count]


def _trend_error(observations: int) -> float:
    """How much larger than a year's noise the error of a straight-line extrapolation one year ahead is."""
    # the prediction variance of least squares on years 0..n-1 at year n: 1 + 1/n + (n - mean)² / Sxx
    if observations < 2:
        return math.sqrt(2.0)
    mean = (observations - 1) / 2.0
    sxx = observations * (observations * observations - 1) / 12.0
    return math.sqrt(1.0 + 1.0 / observations + (observations - mean) ** 2 / sxx)


def _scenario_driver(
    generator: np.random.Generator, count: int, driver: str, company: Company, revenue_growth: np.ndarray | None,
    positions: int,
) -> np.ndarray:
    base = company.base
    visible = len(company.years) - 1
    guided = company.outlook.get(driver)
    if guided is not None:
        # the outcome's position in the range, as well as the track record tells it
        low, high = guided
        spread = base["guidance_jitter"] * math.sqrt(1.0 + 1.0 / max(positions, 1))
        position = np.clip(base["guidance_position"] + spread * generator.standard_normal(count), 0.0, 1.0)
        return low + (high - low) * position
    noise = _noise(base, driver)
    if driver == "operating_expense_growth":
        # the year's noise plus the error of an elasticity estimated from the visible years' growth rates
        observed = math.fsum(year["revenue_growth"] ** 2 for year in company.drivers[1:visible])
        spread = noise * np.sqrt(1.0 + revenue_growth**2 / max(observed, 1e-4))
        return _clip_driver(driver, _opex_growth(base, revenue_growth) + spread * generator.standard_normal(count))
    if driver == "revenue_growth":  # the cycle's phase is hard to read from a few years
        spread = math.sqrt(noise * noise * (1.0 + 1.0 / max(visible - 1, 1))
                           + base["revenue_cycle_amplitude"] ** 2 / 2.0)
    else:
        spread = noise * _trend_error(visible)
    return _clip_driver(driver, _typical(base, driver, visible) + spread * generator.standard_normal(count))


def scenario_drivers(company: Company, seed: int, count: int) -> dict[str, np.ndarray]:
    """``count`` scenarios of the hidden year's drivers: what an analyst who reads the history and the track record
    of the guidance could still not know."""
    generator = np.random.Generator(np.random.PCG64(seed))
    positions = sum(len(entry) - 1 for entry in company.guidance_history)
    drivers: dict[str, Any] = {}
    for driver in ("revenue_growth", "gross_margin", "operating_expense_growth", *_DAYS):
        drivers[driver] = _scenario_driver(generator, count, driver, company, drivers.get("revenue_growth"), positions)
    low, high = company.outlook["capital_expenditure"]
    if low == high:
        drivers["capital_expenditure"] = np.full(count, low, dtype=np.int64)
    else:
        spend = np.rint((low + high) / 2 + _truncated_array(generator, count, (high - low) / 2))
        drivers["capital_expenditure"] = np.clip(spend, low, high).astype(np.int64)
    drivers["share_issue"] = np.full(count, company.outlook["share_issue"], dtype=np.int64)
    drivers["previous_one_off"] = np.full(count, company.drivers[-1]["previous_one_off"], dtype=np.int64)
    drivers["one_off"] = np.zeros(count, dtype=np.int64)
    return drivers


def spread(values: np.ndarray, floor: float) -> list[float]:
    """Per row, the population standard deviation, never below ``floor``, to 3 significant digits."""
    # math.fsum is exactly rounded: the same values give the same bytes on every machine, whatever order a
    # vectorised sum would add them in
    count = values.shape[1]
    means = [math.fsum(row) / count for row in values.tolist()]
    squares = ((values - np.asarray(means)[:, None]) ** 2).tolist()
    return [float(f"{max(math.sqrt(math.fsum(row) / count), floor):.3g}") for row in squares]


def predictability(company: Company, seed: int, count: int) -> dict[str, float]:
    """Per item, its spread over :func:`scenario_drivers`: how much the hidden year can vary given the prompt."""
    last_visible = company.years[-2]
    scenarios = next_year(last_visible, scenario_drivers(company, seed, count), company.policies)
    values = np.stack([np.broadcast_to(scenarios[key], (count,)) for key in ITEM_KEYS]).astype(float)
    return dict(zip(ITEM_KEYS, spread(values, scale_floor(last_visible))))
