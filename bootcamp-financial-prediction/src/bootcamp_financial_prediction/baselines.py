"""Shortcut forecasters: what scores without analysis, to prove the tasks need it.

Each reads the prompt's figures like the reference analyst and builds consistent, policy-abiding statements with
:func:`~bootcamp_financial_prediction.forecast.build_statements` (so the gate is open and no policy is broken), but
chooses its drivers without reading the history or the guidance track record:

- ``midpoint``: every guided driver at the midpoint of its range (the rest as the analyst estimates them);
- ``top_of_range``: every guided driver at the top of its range (the rest as the analyst estimates them);
- ``last_year``: every driver as the last visible year shows it (growth rates, margin, days), kept inside any range;
- ``zero_growth``: no revenue or SG&A growth and the last year's margin and days, kept inside any range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bootcamp_financial_prediction.forecast import build_statements, estimate_drivers, observed_drivers
from bootcamp_financial_prediction.outlook import GUIDED_RATIOS

__all__ = ["SHORTCUTS", "shortcut_forecast"]


def _inside_ranges(public: Mapping, drivers: dict[str, float]) -> dict[str, float]:
    for driver in GUIDED_RATIOS:
        bounds = public["outlook"].get(driver)
        if bounds is not None:
            drivers[driver] = min(bounds[1], max(bounds[0], drivers[driver]))
    return drivers


def _last_year(public: Mapping) -> dict[str, float]:
    drivers = estimate_drivers(public, 0.5)
    drivers.update(observed_drivers(public)[-1])
    return _inside_ranges(public, drivers)


def _zero_growth(public: Mapping) -> dict[str, float]:
    drivers = _last_year(public)
    drivers.update(revenue_growth=0.0, operating_expense_growth=0.0)
    return _inside_ranges(public, drivers)


#: name -> the drivers a shortcut picks from the public information.
SHORTCUTS: dict[str, Callable[[Mapping], dict[str, float]]] = {
    "midpoint": lambda public: estimate_drivers(public, 0.5),
    "top_of_range": lambda public: estimate_drivers(public, 1.0),
    "last_year": _last_year,
    "zero_growth": _zero_growth,
}


def shortcut_forecast(name: str, public: Mapping) -> dict[str, int]:
    """The 26 items the shortcut ``name`` forecasts from the public information."""
    return build_statements(public, SHORTCUTS[name](public))
