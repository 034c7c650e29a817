"""The three-statement simulator: economic drivers in, an income statement, a balance sheet and a cash-flow statement
out, every year balancing exactly.

All amounts are integers (thousands of the currency), so the identities in
:mod:`bootcamp_financial_prediction.accounting` hold exactly, not within a rounding error: each driver-based amount
is rounded to a whole unit once, and every other item is a sum or difference of whole units.

One year from the year before (``prev``), the year's drivers and the company's policies::

    revenue             = round(prev.revenue * (1 + revenue_growth))
    cost_of_sales       = round(revenue * (1 - gross_margin))                   # margin carries the cost shocks
    gross_profit        = revenue - cost_of_sales
    operating_expenses  = round(prev.operating_expenses * (1 + operating_expense_growth))
    depreciation        = round(prev.fixed_assets * depreciation_rate)
    interest_expense    = round(prev.debt * interest_rate)                      # on last year's borrowings
    income_tax          = round(max(0, pre-tax income) * tax_rate)              # no tax on a loss
    net_income          = gross_profit - operating_expenses - depreciation - interest_expense - income_tax
    accounts_receivable = round(revenue * receivable_days / 365)
    inventory           = round(cost_of_sales * inventory_days / 365)
    accounts_payable    = round(cost_of_sales * payable_days / 365)
    fixed_assets        = prev.fixed_assets - depreciation + capital_expenditure
    dividends_paid      = round(max(0, net_income) * payout_ratio)
    share_capital       = prev.share_capital + share_issue
    retained_earnings   = prev.retained_earnings + net_income - dividends_paid
    operating_cash_flow = net_income + depreciation - Δreceivables - Δinventory + Δpayables
    investing_cash_flow = -capital_expenditure
    # debt is the financing plug: cash before new borrowing must reach the minimum cash, surplus cash repays debt
    minimum_cash        = round(revenue * minimum_cash_ratio)
    available           = prev.cash + operating_cash_flow + investing_cash_flow + share_issue - dividends_paid
    debt                = prev.debt + max(0, minimum_cash - available) - min(prev.debt, max(0, available - minimum_cash))
    cash                = available + (debt - prev.debt)
    financing_cash_flow = (debt - prev.debt) + share_issue - dividends_paid
    total_assets        = cash + accounts_receivable + inventory + fixed_assets

Drivers of the visible years are each company's base values plus noise: revenue growth, gross margin (cost
shocks), working-capital days and capital spending scatter around their bases; operating expenses are sticky — they
follow revenue growth with an elasticity that is lower when revenue falls than when it rises, plus noise. The
hidden year's drivers come from the same process, except that a guided driver lies inside the range management
announced (a normal around the range's midpoint with a quarter of the range as its standard deviation, truncated to
the range), capital spending is the announced amount (or inside the announced range), and a share issue happens
exactly when one is announced.

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

POLICY_KEYS = ("depreciation_rate", "interest_rate", "tax_rate", "payout_ratio", "minimum_cash_ratio")
#: The items of a year that the next year is computed from (the opening balance holds exactly these).
OPENING_KEYS = (
    "revenue", "operating_expenses", "cash", "accounts_receivable", "inventory", "fixed_assets", "accounts_payable",
    "debt", "share_capital", "retained_earnings",
)
#: Drivers management can guide, as (driver, the config name that turns its guidance on).
GUIDABLE = {
    "revenue_growth": "revenue_growth",
    "gross_margin": "gross_margin",
    "operating_expense_growth": "operating_expense_growth",
    "receivable_days": "working_capital",
    "inventory_days": "working_capital",
    "payable_days": "working_capital",
}
#: Drivers measured as a change from the year before: the first visible year shows none of them.
_GROWTH_DRIVERS = ("revenue_growth", "operating_expense_growth")
_DAYS = ("receivable_days", "inventory_days", "payable_days")
_DRIVER_BOUNDS = {"revenue_growth": (-0.6, 1.0), "gross_margin": (0.02, 0.95), "operating_expense_growth": (-0.6, 1.0)}


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
    """The 21 items of a year from the year before, its drivers and the company's policies (see the module doc)."""
    # Scalar drivers give ints; arrays (one value per scenario) give int64 arrays for the items that depend on them.
    # Both paths use the same IEEE double products and the same rounding, so they agree exactly.
    prev = {key: int(previous[key]) for key in OPENING_KEYS}
    capital_expenditure = drivers["capital_expenditure"]
    share_issue = drivers["share_issue"]
    revenue = _whole(prev["revenue"] * (1.0 + drivers["revenue_growth"]))
    cost_of_sales = _whole(revenue * (1.0 - drivers["gross_margin"]))
    gross_profit = revenue - cost_of_sales
    operating_expenses = _whole(prev["operating_expenses"] * (1.0 + drivers["operating_expense_growth"]))
    depreciation = _whole(prev["fixed_assets"] * policies["depreciation_rate"])
    interest_expense = _whole(prev["debt"] * policies["interest_rate"])
    pre_tax = gross_profit - operating_expenses - depreciation - interest_expense
    income_tax = _whole(_maximum(pre_tax, 0) * policies["tax_rate"])
    net_income = pre_tax - income_tax
    accounts_receivable = _whole(revenue * drivers["receivable_days"] / 365.0)
    inventory = _whole(cost_of_sales * drivers["inventory_days"] / 365.0)
    accounts_payable = _whole(cost_of_sales * drivers["payable_days"] / 365.0)
    fixed_assets = prev["fixed_assets"] - depreciation + capital_expenditure
    dividends_paid = _whole(_maximum(net_income, 0) * policies["payout_ratio"])
    share_capital = prev["share_capital"] + share_issue
    retained_earnings = prev["retained_earnings"] + net_income - dividends_paid
    operating_cash_flow = (
        net_income + depreciation - (accounts_receivable - prev["accounts_receivable"])
        - (inventory - prev["inventory"]) + (accounts_payable - prev["accounts_payable"])
    )
    investing_cash_flow = -capital_expenditure
    minimum_cash = _whole(revenue * policies["minimum_cash_ratio"])
    available = prev["cash"] + operating_cash_flow + investing_cash_flow + share_issue - dividends_paid
    borrowing = _maximum(minimum_cash - available, 0)
    repayment = _minimum(prev["debt"], _maximum(available - minimum_cash, 0))
    debt = prev["debt"] + borrowing - repayment
    cash = available + borrowing - repayment
    financing_cash_flow = (borrowing - repayment) + share_issue - dividends_paid
    total_assets = cash + accounts_receivable + inventory + fixed_assets
    values = locals()
    return {key: values[key] for key in ITEM_KEYS}


@attrs.frozen(kw_only=True)
class Settings:
    """The difficulty knobs of a generated company (the generator validates them)."""

    visible_years: int = 3
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


def _draw_base(rng: random.Random, settings: Settings) -> tuple[dict[str, float], dict[str, float]]:
    noise = settings.noise
    elasticity_up = rng.uniform(0.3, 0.8)
    base = {
        "revenue_growth": rng.uniform(-0.03, 0.15),
        "revenue_growth_noise": noise * rng.uniform(0.01, 0.03),
        "gross_margin": rng.uniform(0.2, 0.55),
        "gross_margin_noise": noise * rng.uniform(0.004, 0.012),
        "elasticity_up": elasticity_up,
        "elasticity_down": elasticity_up * rng.uniform(0.2, 0.5),
        "operating_expense_growth_noise": noise * rng.uniform(0.005, 0.02),
        "receivable_days": rng.uniform(30.0, 90.0),
        "inventory_days": rng.uniform(20.0, 100.0),
        "payable_days": rng.uniform(25.0, 80.0),
        "capex_ratio": rng.uniform(0.03, 0.10),
        "capex_noise": noise * rng.uniform(0.02, 0.08),
    }
    days_noise = noise * rng.uniform(1.0, 4.0)
    for driver in _DAYS:
        base[f"{driver}_noise"] = days_noise
    policies = {
        "depreciation_rate": rng.randint(8, 20) / 100,
        "interest_rate": rng.randint(30, 80) / 1000,
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
    operating_margin = rng.uniform(0.03, 0.18)
    opex_share = max(0.03, base["gross_margin"] - operating_margin - depreciation_share)
    receivables = revenue * base["receivable_days"] / 365
    inventory = cost * base["inventory_days"] / 365
    payables = cost * base["payable_days"] / 365
    cash = revenue * (policies["minimum_cash_ratio"] + rng.uniform(0.0, 0.08))
    assets = round(cash) + round(receivables) + round(inventory) + round(fixed_assets)
    debt = 0 if rng.random() < settings.zero_debt_probability else round(revenue * rng.uniform(0.1, 0.6))
    # keep at least a quarter of the assets as equity, so the company starts solvent
    debt = max(0, min(debt, round(assets * 0.75) - round(payables)))
    equity = assets - round(payables) - debt
    share_capital = round(equity * rng.uniform(0.3, 0.7))
    return {
        "revenue": revenue, "operating_expenses": round(revenue * opex_share), "cash": round(cash),
        "accounts_receivable": round(receivables), "inventory": round(inventory), "fixed_assets": round(fixed_assets),
        "accounts_payable": round(payables), "debt": debt, "share_capital": share_capital,
        "retained_earnings": equity - share_capital,
    }


def _equity(year: Mapping[str, int]) -> int:
    return int(year["share_capital"]) + int(year["retained_earnings"])


def _share_issue(rng: random.Random, settings: Settings, previous: Mapping[str, int]) -> int:
    if rng.random() >= settings.share_issue_probability:
        return 0
    return max(1, round(max(_equity(previous), 0) * rng.uniform(0.05, 0.2)))


def _visible_drivers(rng: random.Random, settings: Settings, base: dict, previous: Mapping[str, int]) -> dict:
    drivers = {}
    for driver in ("revenue_growth", "gross_margin", *_DAYS):
        drivers[driver] = float(_clip_driver(driver, base[driver] + _noise(base, driver) * rng.gauss(0.0, 1.0)))
    drivers["operating_expense_growth"] = float(_clip_driver(
        "operating_expense_growth",
        _opex_growth(base, drivers["revenue_growth"]) + _noise(base, "operating_expense_growth") * rng.gauss(0.0, 1.0),
    ))
    revenue = previous["revenue"] * (1 + drivers["revenue_growth"])
    spend = base["capex_ratio"] * revenue * (1 + base["capex_noise"] * rng.gauss(0.0, 1.0))
    drivers["capital_expenditure"] = max(0, round(spend))
    drivers["share_issue"] = _share_issue(rng, settings, previous)
    return drivers


def _guidance_range(driver: str, center: float, half_width: float) -> list:
    """The range as announced, inside the driver's bounds: fractions to 0.1 percentage point, days to whole days."""
    low_bound, high_bound = _DRIVER_BOUNDS.get(driver, (1.0, 365.0))
    if driver in _DAYS:
        half = max(1, round(half_width))
        low, high = round(center) - half, round(center) + half
        return [max(low, round(low_bound)), min(high, round(high_bound))]
    half = max(0.002, round(half_width, 3))
    return [max(round(center - half, 3), low_bound), min(round(center + half, 3), high_bound)]


def _hidden_drivers(
    rng: random.Random, settings: Settings, base: dict, previous: Mapping[str, int]
) -> tuple[dict, dict]:
    """The hidden year's drivers and the outlook announced for it."""
    drivers: dict[str, Any] = {}
    outlook: dict[str, Any] = {}
    centers: dict[str, float] = {}
    for driver in ("revenue_growth", "gross_margin", "operating_expense_growth", *_DAYS):
        guided = GUIDABLE[driver] in settings.guidance
        if driver == "operating_expense_growth":  # what management plans for the revenue it expects
            typical = float(_opex_growth(base, centers["revenue_growth"]))
        else:
            typical = base[driver]
        shock = _noise(base, driver) * rng.gauss(0.0, 1.0)
        if guided:
            # management knows this year's shock; what is left is inside the announced range
            low, high = _guidance_range(
                driver, float(_clip_driver(driver, typical + shock)), settings.guidance_width * _noise(base, driver)
            )
            outlook[driver] = [low, high]
            centers[driver] = (low + high) / 2
            drivers[driver] = centers[driver] + _truncated(rng, (high - low) / 2)
        else:
            outlook[driver] = None
            centers[driver] = typical
            if driver == "operating_expense_growth":  # unguided costs follow the revenue actually realised
                typical = float(_opex_growth(base, drivers["revenue_growth"]))
            drivers[driver] = float(_clip_driver(driver, typical + shock))
    planned = base["capex_ratio"] * previous["revenue"] * (1 + centers["revenue_growth"])
    planned = max(1, round(planned * (1 + base["capex_noise"] * rng.gauss(0.0, 1.0))))
    if settings.capex_announcement == "range":
        half = max(1, round(planned * 0.1 * settings.guidance_width))
        outlook["capital_expenditure"] = [planned - half, planned + half]
        drivers["capital_expenditure"] = min(planned + half, max(planned - half, round(planned + _truncated(rng, half))))
    else:
        outlook["capital_expenditure"] = [planned, planned]
        drivers["capital_expenditure"] = planned
    drivers["share_issue"] = outlook["share_issue"] = _share_issue(rng, settings, previous)
    return drivers, outlook


def _as_int(year: Mapping[str, Any]) -> dict[str, int]:
    return {key: int(value) for key, value in year.items()}


def draw_company(rng: random.Random, settings: Settings) -> Company:
    """A company with ``visible_years`` simulated years plus one hidden year, drawn only from ``rng``."""
    base, policies = _draw_base(rng, settings)
    opening = _draw_opening(rng, settings, base, policies)
    years: list[dict[str, int]] = []
    drivers: list[dict[str, float]] = []
    previous: Mapping[str, int] = opening
    for _ in range(settings.visible_years):
        year_drivers = _visible_drivers(rng, settings, base, previous)
        previous = _as_int(next_year(previous, year_drivers, policies))
        years.append(previous)
        drivers.append(year_drivers)
    hidden_drivers, outlook = _hidden_drivers(rng, settings, base, previous)
    years.append(_as_int(next_year(previous, hidden_drivers, policies)))
    drivers.append(hidden_drivers)
    return Company(base=base, policies=policies, opening=opening, years=years, drivers=drivers, outlook=outlook)


def scale_floor(last_visible: Mapping[str, float]) -> float:
    """The smallest error scale of any item: 0.1% of the company's size, so a legitimate 0 still has a scale."""
    return max(1.0, 0.001 * max(abs(float(last_visible["revenue"])), abs(float(last_visible["total_assets"]))))


def _truncated_array(generator: np.random.Generator, count: int, limit: float) -> np.ndarray:
    draws = generator.normal(0.0, limit / 2.0, size=2 * count)
    kept = draws[np.abs(draws) <= limit]
    if kept.size < count:  # practically never: 95% of the draws are kept
        kept = np.concatenate([kept, np.clip(draws, -limit, limit)])
    return kept[:count]


def _scenario_driver(
    generator: np.random.Generator, count: int, driver: str, company: Company, observations: int,
    revenue_growth: np.ndarray | None,
) -> np.ndarray:
    guided = company.outlook.get(driver)
    if guided is not None:
        low, high = guided
        return (low + high) / 2 + _truncated_array(generator, count, (high - low) / 2)
    # the year's own noise plus the error of estimating the base from the visible years
    spread = _noise(company.base, driver) * math.sqrt(1.0 + 1.0 / max(observations, 1))
    typical = _opex_growth(company.base, revenue_growth) if driver == "operating_expense_growth" else (
        company.base[driver]
    )
    return _clip_driver(driver, typical + spread * generator.standard_normal(count))


def scenario_drivers(company: Company, seed: int, count: int) -> dict[str, np.ndarray]:
    """``count`` scenarios of the hidden year's drivers, drawn as the hidden year itself was given the outlook."""
    # Guided drivers inside their ranges; unguided ones around their base with the year's noise plus the error of
    # estimating the base from the visible years: noise × sqrt(1 + 1/observations).
    generator = np.random.Generator(np.random.PCG64(seed))
    observed = len(company.years) - 1
    drivers: dict[str, Any] = {}
    for driver in ("revenue_growth", "gross_margin", "operating_expense_growth", *_DAYS):
        observations = observed - (1 if driver in _GROWTH_DRIVERS else 0)
        drivers[driver] = _scenario_driver(
            generator, count, driver, company, observations, drivers.get("revenue_growth")
        )
    low, high = company.outlook["capital_expenditure"]
    if low == high:
        drivers["capital_expenditure"] = np.full(count, low, dtype=np.int64)
    else:
        spend = np.rint((low + high) / 2 + _truncated_array(generator, count, (high - low) / 2))
        drivers["capital_expenditure"] = np.clip(spend, low, high).astype(np.int64)
    drivers["share_issue"] = np.full(count, company.outlook["share_issue"], dtype=np.int64)
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
