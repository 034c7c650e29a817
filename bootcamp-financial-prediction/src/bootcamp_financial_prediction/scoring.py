"""The score of a forecast against the hidden year.

``score = gate × max(0, accuracy − penalty)``, in [0, 1]:

- **accuracy** — the geometric mean over the 26 items of ``exp(-z² / 2)``, that is ``exp(-mean(z²) / 2)``, with
  ``z = |forecast − actual| / (sigmas × scale)``: an item far off costs the whole forecast, so getting the items
  that policies fix right cannot make up for a driver read wrongly.
  An item's ``scale`` is how much it can still vary given the prompt's information (its standard deviation over
  scenarios of the hidden year's drivers drawn as the hidden year was, given the guidance; see
  :func:`bootcamp_financial_prediction.simulator.predictability`), never below 0.1% of the company's size. So an
  error counts in units of what could not be known: the exact hidden year scores 1, a forecast one scale off on
  every item ``exp(-1/4.5) ≈ 0.80`` (with the default ``sigmas = 1.5``), and a legitimately zero item (no
  borrowings, no dividends) forecast as 0 scores 1 on that item with no division by zero.
- **gate** — 1 when every accounting identity holds within the tolerance (``consistency_tolerance`` × the last
  visible year's total assets, at least 1 unit) and no amount that must be positive is negative; else 0.
- **penalty** — ``guidance_penalty`` × Σ over broken policies and announcements of ``min(1, excess / allowance)``:
  a guided ratio outside its range (allowance: half the range), capital spending off the announced amount, a share
  issue other than announced, dividends off the payout policy, cash below the minimum, or idle cash while borrowing
  (allowance: 1% of the last revenue, or half the announced capex range).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from bootcamp_financial_prediction.accounting import Failure, check_statements, consistency_tolerance
from bootcamp_financial_prediction.items import ITEM_KEYS
from bootcamp_financial_prediction.outlook import HIDDEN_KEY, Breach, check_outlook

__all__ = ["DEFAULT_SCORING", "Score", "item_score", "score_forecast"]

#: Scoring settings stored in every identity (a generator's ``scoring`` config overrides them).
DEFAULT_SCORING = {"sigmas": 1.5, "consistency_tolerance": 1e-4, "guidance_penalty": 0.1}


@attrs.frozen(kw_only=True)
class Score:
    """A scored forecast, with everything that went into the number."""

    score: float
    accuracy: float
    gate: float
    penalty: float
    items: dict[str, float]
    failures: list[Failure]
    breaches: list[Breach]


#: Largest z an item counts with: beyond it the item scores 0 either way, and squares stay finite.
MAX_Z = 40.0


def _z(forecast: float, actual: float, scale: float, sigmas: float) -> float:
    return min(MAX_Z, abs(float(forecast) - float(actual)) / (sigmas * scale))


def item_score(forecast: float, actual: float, scale: float, sigmas: float) -> float:
    """``exp(-z² / 2)`` with ``z = |forecast − actual| / (sigmas × scale)``."""
    z = _z(forecast, actual, scale, sigmas)
    return math.exp(-0.5 * z * z) if z < MAX_Z else 0.0


def score_forecast(forecast: Mapping[str, float], identity: Mapping) -> Score:
    """Score a complete forecast (all 26 items) against the identity's hidden year."""
    settings = {**DEFAULT_SCORING, **(identity.get("scoring") or {})}
    previous = identity["statements"][-1]
    tolerance = consistency_tolerance(previous, float(settings["consistency_tolerance"]))
    failures = check_statements(forecast, previous, tolerance)
    breaches = check_outlook(forecast, identity, tolerance)
    hidden = identity[HIDDEN_KEY]
    actual, scales = hidden["statements"], hidden["scales"]
    sigmas = float(settings["sigmas"])
    z = {key: _z(forecast[key], actual[key], float(scales[key]), sigmas) for key in ITEM_KEYS}
    items = {key: math.exp(-0.5 * value * value) if value < MAX_Z else 0.0 for key, value in z.items()}
    accuracy = math.exp(-0.5 * math.fsum(value * value for value in z.values()) / len(z))
    penalty = float(settings["guidance_penalty"]) * math.fsum(
        min(1.0, breach.excess / breach.allowance) for breach in breaches
    )
    gate = 0.0 if failures else 1.0
    return Score(
        score=gate * max(0.0, accuracy - penalty), accuracy=accuracy, gate=gate, penalty=penalty, items=items,
        failures=failures, breaches=breaches,
    )
