"""The reward: extraction, the documented formula, the consistency gate, guidance penalties, legitimate zeros,
fabricated and copied forecasts, and the range."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bootcamp_core import Registry
from bootcamp_financial_prediction.answer import ANSWER_FORMAT, format_answer, parse_answer
from bootcamp_financial_prediction.forecast import forecast_statements
from bootcamp_financial_prediction.items import ITEM_KEYS, LINE_ITEMS
from bootcamp_financial_prediction.outlook import public_view
from bootcamp_financial_prediction.reward import ForecastReward
from bootcamp_financial_prediction.scoring import item_score, score_forecast
from bootcamp_financial_prediction.simulator import next_year


@pytest.fixture(scope="module")
def reward(registry: Registry) -> ForecastReward:
    return registry.component("reward", "financial_prediction/forecast")


def consistent_without_change(identity: dict) -> dict[str, int]:
    """A naive but consistent forecast: last year's drivers, no growth, run through the accounting."""
    last = identity["statements"][-1]
    drivers = {
        "revenue_growth": 0.0, "gross_margin": last["gross_profit"] / last["revenue"], "operating_expense_growth": 0.0,
        "receivable_days": last["accounts_receivable"] / last["revenue"] * 365,
        "inventory_days": last["inventory"] / last["cost_of_sales"] * 365,
        "payable_days": last["accounts_payable"] / last["cost_of_sales"] * 365,
        "accrued_days": last["accrued_expenses"] / last["operating_expenses"] * 365,
        "capital_expenditure": -last["investing_cash_flow"], "share_issue": 0,
    }
    return next_year(last, drivers, identity["policies"])


def test_extracts_all_items_from_the_last_fenced_block(reward: ForecastReward, identity: dict) -> None:
    hidden = identity["hidden"]["statements"]
    answer = format_answer(hidden)
    assert reward.extract_output(answer) == {key: float(value) for key, value in hidden.items()}
    assert reward.extract_output("draft:\n" + format_answer({key: 1 for key in ITEM_KEYS}) + "\nfinal:\n" + answer)[
        "revenue"
    ] == hidden["revenue"]
    # labels instead of keys, strings with separators, accountants' brackets, a wrapping object
    labelled = {item.chinese if index % 2 else item.english: f"{hidden[item.key]:,}"
                for index, item in enumerate(LINE_ITEMS)}
    labelled["Net cash from investing activities"] = f"({-hidden['investing_cash_flow']:,})"
    text = "```json\n" + json.dumps({"FY2030": labelled}, ensure_ascii=False) + "\n```"
    assert reward.extract_output(text) == {key: float(value) for key, value in hidden.items()}
    assert reward.extract_output(json.dumps(hidden)) == {key: float(value) for key, value in hidden.items()}


@pytest.mark.parametrize(
    "output",
    ["", "no forecast", ANSWER_FORMAT, '```json\n{"revenue": 100}\n```', '```json\n{"revenue": "lots"}\n```',
     "```json\n{not json}\n```", '```json\n{"a": 1}\n```', '```json\n[1, 2]\n```', None, 5],
)
def test_incomplete_or_unparsable_answers_extract_nothing(reward: ForecastReward, output: object) -> None:
    assert reward.extract_output(output) is None  # type: ignore[arg-type]


def test_reads_megabytes_of_output_in_one_pass(reward: ForecastReward, identity: dict) -> None:
    # spaces after an unclosed fence: a pattern with a lazy body after optional blanks is cubic in their length
    assert reward.extract_output("```" + " " * 1_000_000 + "x") is None
    assert reward.extract_output("```json" + " \t" * 500_000) is None
    answer = format_answer(identity["hidden"]["statements"])
    assert reward.verify_score(("```" + " " * 100 + "```") * 10_000 + answer + "```" + " " * 100_000, identity) == 1.0


def test_reads_the_fenced_block_forms_models_write(identity: dict) -> None:
    hidden = identity["hidden"]["statements"]
    body = json.dumps(hidden)
    for text in (f"```json\n{body}\n```", f"```JSON  \n{body}```", f"``` json {body}```", f"```\n{body}\n```",
                 f"```{body}```", f"see below\n```json\n{body}\n```\nthat is all"):
        parsed = parse_answer(text)
        assert parsed is not None and parsed.complete, text
    # a block in another language is not the forecast
    assert parse_answer(f"```python\n{body}\n```") is None
    # the last block holding any line item wins, even when a block without one follows it
    assert parse_answer(f"```json\n{body}\n```\n```json\n{{\"note\": 1}}\n```").complete


def test_the_hidden_year_scores_one(reward: ForecastReward, make_identity: Callable[..., dict]) -> None:
    for seed in range(30):
        identity = make_identity(seed, capex_announcement="range", noise=2.0)
        assert reward.verify_score(format_answer(identity["hidden"]["statements"]), identity) == 1.0


def test_the_formula(identity: dict) -> None:
    hidden = identity["hidden"]["statements"]
    scales = identity["hidden"]["scales"]
    sigmas = identity["scoring"]["sigmas"]
    assert sigmas == 1.5
    # move every item by one scale in a way that keeps the identities: not possible in general, so check the
    # accuracy term alone on a consistent forecast and compare it with the formula written out
    forecast = forecast_statements(public_view(identity))
    score = score_forecast(forecast, identity)
    z = [(forecast[key] - hidden[key]) / (sigmas * scales[key]) for key in ITEM_KEYS]
    assert score.items == pytest.approx({key: math.exp(-0.5 * value**2) for key, value in zip(ITEM_KEYS, z)})
    # the geometric mean of the item scores
    assert score.accuracy == pytest.approx(math.exp(-0.5 * sum(value**2 for value in z) / len(ITEM_KEYS)))
    assert (score.gate, score.penalty, score.failures, score.breaches) == (1.0, 0.0, [], [])
    assert score.score == pytest.approx(score.accuracy)
    assert item_score(110, 100, 10, 1.0) == pytest.approx(math.exp(-0.5))
    assert item_score(100, 100, 10, 1.0) == 1.0 and item_score(1e12, 0, 1, 1.0) == 0.0


def test_a_legitimate_zero_forecast_as_zero_scores_fully(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(0, zero_debt_probability=1.0, no_dividend_probability=1.0)
    hidden = identity["hidden"]["statements"]
    assert hidden["debt"] == hidden["interest_expense"] == hidden["dividends_paid"] == 0
    score = score_forecast(hidden, identity)
    assert score.items["debt"] == score.items["interest_expense"] == score.items["dividends_paid"] == 1.0
    # the scale of a zero item is a fraction of the company's size, so a small slip costs little and a big one a lot
    floor = identity["hidden"]["scales"]["dividends_paid"]
    assert floor > 0
    assert item_score(floor * 0.1, 0, floor, 1.5) > 0.99
    assert item_score(floor * 10, 0, floor, 1.5) < 0.01


def test_fabricated_statements_score_zero(reward: ForecastReward, make_identity: Callable[..., dict]) -> None:
    rng = random.Random(0)
    for seed in range(20):
        identity = make_identity(seed)
        scale = identity["statements"][-1]["revenue"]
        invented = {key: rng.randint(0, scale) for key in ITEM_KEYS}
        assert reward.verify_score(format_answer(invented), identity) == 0.0
        # looking good on every ratio does not help: the original's trick of beating the best year scores 0
        best = dict(identity["statements"][-1])
        best.update(revenue=best["revenue"] * 2, net_income=best["net_income"] * 3, cash=best["cash"] * 2)
        assert reward.verify_score(format_answer(best), identity) == 0.0


def test_inconsistent_statements_score_zero_even_when_close(
    reward: ForecastReward, make_identity: Callable[..., dict]
) -> None:
    for seed in range(10):
        identity = make_identity(seed)
        hidden = identity["hidden"]["statements"]
        tolerance = max(1.0, 1e-4 * identity["statements"][-1]["total_assets"])
        for key in ("cash", "net_income", "retained_earnings", "operating_cash_flow", "financing_cash_flow"):
            nudged = {**hidden, key: hidden[key] + 2 * tolerance + 1}
            assert reward.verify_score(format_answer(nudged), identity) == 0.0, (seed, key)
        # within the tolerance it still counts
        assert reward.verify_score(format_answer({**hidden, "cash": hidden["cash"] + 0.5}), identity) > 0.99


def test_negative_balances_score_zero(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(2)
    hidden = identity["hidden"]["statements"]
    # keep every identity: move cash down by more than it holds and borrow nothing
    shift = hidden["cash"] + 1000
    forecast = {**hidden, "cash": hidden["cash"] - shift, "total_assets": hidden["total_assets"] - shift,
                "retained_earnings": hidden["retained_earnings"] - shift, "net_income": hidden["net_income"] - shift,
                "operating_expenses": hidden["operating_expenses"] + shift,
                "operating_cash_flow": hidden["operating_cash_flow"] - shift}
    score = score_forecast(forecast, identity)
    assert [failure.name for failure in score.failures] == ["cash_not_negative"]
    assert score.score == 0.0


def test_copying_the_last_visible_year_scores_clearly_below_the_driver_model(
    reward: ForecastReward, make_identity: Callable[..., dict]
) -> None:
    copied, naive, model = [], [], []
    for seed in range(40):
        identity = make_identity(seed)
        copied.append(reward.verify_score(format_answer(identity["statements"][-1]), identity))
        naive.append(reward.verify_score(format_answer(consistent_without_change(identity)), identity))
        model.append(reward.verify_score(format_answer(forecast_statements(public_view(identity))), identity))
    # a copy breaks the cross-year identities (retained earnings, cash) so the gate closes
    assert max(copied) == 0.0
    # even a consistent roll-forward without change is far behind a forecast that uses the outlook
    assert sum(naive) / 40 < sum(model) / 40 - 0.3


def test_ignoring_the_outlook_costs_points(make_identity: Callable[..., dict]) -> None:
    identity = make_identity(4)
    public = public_view(identity)
    honest = score_forecast(forecast_statements(public), identity)
    off = json.loads(json.dumps(public))
    low, high = off["outlook"]["revenue_growth"]
    off["outlook"]["revenue_growth"] = [high + 0.2, high + 0.2]
    low, high = off["outlook"]["capital_expenditure"]
    off["outlook"]["capital_expenditure"] = [low * 2, low * 2]
    off["policies"]["payout_ratio"] = 0.9
    careless = score_forecast(forecast_statements(off), identity)
    assert careless.gate == 1.0
    assert {breach.name for breach in careless.breaches} == {"revenue_growth", "capital_expenditure", "dividend_policy"}
    assert careless.penalty == pytest.approx(0.3)
    assert careless.score < honest.score - 0.3


def test_idle_cash_while_borrowing_and_cash_below_the_minimum_are_breaches(make_identity: Callable[..., dict]) -> None:
    identity = next(
        identity for identity in (make_identity(seed, zero_debt_probability=0.0) for seed in range(50))
        if identity["hidden"]["statements"]["debt"] > 0
    )
    hidden = identity["hidden"]["statements"]
    extra = hidden["debt"] // 2
    # borrow more than needed and hold it as cash: consistent, but against the cash policy
    hoarding = {**hidden, "short_term_debt": hidden["short_term_debt"] + extra, "cash": hidden["cash"] + extra,
                "total_assets": hidden["total_assets"] + extra,
                "financing_cash_flow": hidden["financing_cash_flow"] + extra}
    score = score_forecast(hoarding, identity)
    assert score.gate == 1.0 and [breach.name for breach in score.breaches] == ["debt_repayment"]
    # the same as new long-term borrowing also skips the scheduled repayment
    long_term = {**hoarding, "short_term_debt": hidden["short_term_debt"], "debt": hidden["debt"] + extra}
    score = score_forecast(long_term, identity)
    assert score.gate == 1.0
    assert [breach.name for breach in score.breaches] == ["scheduled_repayment", "debt_repayment"]
    short = {**hidden, "debt": hidden["debt"] - extra, "cash": hidden["cash"] - extra,
             "total_assets": hidden["total_assets"] - extra,
             "financing_cash_flow": hidden["financing_cash_flow"] - extra}
    assert [breach.name for breach in score_forecast(short, identity).breaches] == ["minimum_cash"]


@pytest.mark.parametrize(
    "identity_value", [{}, None, {"statements": []}, {"statements": [{"revenue": 1}], "hidden": {}}, "text"]
)
def test_a_broken_identity_scores_zero_without_crashing(
    reward: ForecastReward, identity: dict, identity_value: object
) -> None:
    errors = len(reward.errors)
    answer = format_answer(identity["hidden"]["statements"])
    assert reward.verify_score(answer, identity_value) == 0.0  # type: ignore[arg-type]
    assert len(reward.errors) == errors  # handled, not caught as a plugin crash


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(factors=st.lists(st.floats(min_value=-3, max_value=3, allow_nan=False), min_size=26, max_size=26))
def test_scores_stay_in_range_for_any_numbers(reward: ForecastReward, identity: dict, factors: list[float]) -> None:
    hidden = identity["hidden"]["statements"]
    forecast = {key: round(hidden[key] * factor) for key, factor in zip(ITEM_KEYS, factors)}
    score = reward.verify_score(format_answer(forecast), identity)
    assert isinstance(score, float) and 0.0 <= score <= 1.0


def test_parse_answer_reports_what_is_wrong() -> None:
    parsed = parse_answer('```json\n{"revenue": 5, "cash": "n/a", "colour": "red"}\n```')
    assert parsed is not None and not parsed.complete
    assert parsed.values == {"revenue": 5.0}
    assert parsed.invalid == ("cash",) and parsed.unknown == ("colour",)
    assert len(parsed.missing) == 24
    assert parse_answer('```json\n{"revenue": 1e999}\n```').invalid == ("revenue",)
    assert parse_answer('```json\n{"revenue": -2e15, "cash": "1e15"}\n```').invalid == ("revenue",)
    assert parse_answer("[" * 5000) is None
