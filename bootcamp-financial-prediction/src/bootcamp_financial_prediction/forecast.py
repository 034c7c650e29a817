"""The driver-model forecast an analyst can make from the prompt alone: the reference agent's method.

Each driver is the midpoint of management's range when one is given, else estimated from the visible years (the
mean of the observed growth rates, margins and working-capital days; operating expenses by the elasticity to revenue
growth observed in the visible years). The forecast year is then computed with the simulator's own year function,
so the forecast satisfies every identity exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bootcamp_financial_prediction.outlook import GUIDED_RATIOS
from bootcamp_financial_prediction.simulator import next_year

__all__ = ["estimate_drivers", "forecast_statements", "observed_drivers"]

#: Elasticity of operating expenses to revenue growth assumed when the visible years cannot tell it.
DEFAULT_ELASTICITY = 0.5


def observed_drivers(years: Sequence[Mapping[str, float]]) -> dict[str, list[float]]:
    """The guidable drivers as the visible years show them (growth rates start with the second year)."""
    observed: dict[str, list[float]] = {driver: [] for driver in GUIDED_RATIOS}
    for index, year in enumerate(years):
        previous = years[index - 1] if index else None
        for driver, (_, numerator, denominator, factor) in GUIDED_RATIOS.items():
            if denominator is None:
                if previous is not None and previous[numerator]:
                    observed[driver].append(year[numerator] / previous[numerator] - 1.0)
            elif year[denominator]:
                observed[driver].append(year[numerator] / year[denominator] * factor)
    return observed


def _mean(values: Sequence[float], default: float) -> float:
    return math.fsum(values) / len(values) if values else default


def _elasticity(revenue_growth: Sequence[float], expense_growth: Sequence[float], forecast_growth: float) -> float:
    """Least squares through the origin of expense growth on revenue growth, in [0, 1.2]."""
    # only the years whose revenue moved the same way as the forecast's: costs are sticky, they fall less than rise
    pairs = list(zip(revenue_growth, expense_growth))
    same_way = [(g, o) for g, o in pairs if (g >= 0) == (forecast_growth >= 0)]
    for chosen in (same_way, pairs):
        denominator = math.fsum(g * g for g, _ in chosen)
        if denominator > 1e-6:
            return min(1.2, max(0.0, math.fsum(g * o for g, o in chosen) / denominator))
    return DEFAULT_ELASTICITY


def estimate_drivers(public: Mapping) -> dict[str, float]:
    """The forecast year's drivers from the public information (see the module doc)."""
    years = public["statements"]
    outlook = public["outlook"]
    observed = observed_drivers(years)
    drivers: dict[str, float] = {}
    for driver in ("revenue_growth", "gross_margin", "receivable_days", "inventory_days", "payable_days"):
        guided = outlook.get(driver)
        drivers[driver] = (guided[0] + guided[1]) / 2 if guided else _mean(observed[driver], 0.0)
    guided = outlook.get("operating_expense_growth")
    if guided:
        drivers["operating_expense_growth"] = (guided[0] + guided[1]) / 2
    else:
        elasticity = _elasticity(
            observed["revenue_growth"], observed["operating_expense_growth"], drivers["revenue_growth"]
        )
        drivers["operating_expense_growth"] = elasticity * drivers["revenue_growth"]
    low, high = outlook["capital_expenditure"]
    drivers["capital_expenditure"] = round((low + high) / 2)
    drivers["share_issue"] = outlook["share_issue"]
    return drivers


def forecast_statements(public: Mapping) -> dict[str, int]:
    """The forecast year's 21 items: the estimated drivers run through the simulator from the last visible year."""
    year = next_year(public["statements"][-1], estimate_drivers(public), public["policies"])
    return {key: int(value) for key, value in year.items()}
