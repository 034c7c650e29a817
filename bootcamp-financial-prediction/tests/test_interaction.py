"""The answer feedback: missing, unparsable and incomplete answers get feedback; a well-formed one ends the episode."""

from __future__ import annotations

import asyncio
import json

import pytest

from bootcamp_core import Registry
from bootcamp_core.testing import converse
from bootcamp_financial_prediction.answer import ANSWER_FORMAT, format_answer
from bootcamp_financial_prediction.forecast import forecast_statements
from bootcamp_financial_prediction.interaction import ForecastFeedback
from bootcamp_financial_prediction.outlook import public_view
from bootcamp_financial_prediction.scoring import score_forecast


@pytest.fixture
def interaction(registry: Registry) -> ForecastFeedback:
    return registry.component("interaction", "financial_prediction/answer_feedback")


def test_missing_answer_asks_for_the_format(interaction: ForecastFeedback, identity: dict) -> None:
    results, score = converse(interaction, identity, "Revenue will grow about 8%.")
    feedback = ("I could not find a forecast: no fenced JSON block with the line items. Give all 26 line items in "
                f"exactly this form:\n\n{ANSWER_FORMAT}")
    assert results == [(False, feedback, 0.0, {"attempts": 0, "unanswered": 1})]
    assert score == 0.0


def test_unparsable_json_is_treated_as_missing(interaction: ForecastFeedback, identity: dict) -> None:
    results, _ = converse(interaction, identity, '```json\n{"revenue": 12,, }\n```')
    assert results[0][0] is False and "could not find a forecast" in results[0][1]


def test_hostile_numbers_and_nesting_get_feedback_not_an_exception(interaction: ForecastFeedback, identity: dict) -> None:
    answer = format_answer(identity["statements"][-1]).replace('"revenue": ', '"revenue": 1' + "0" * 400 + ", \"x\": ", 1)
    results, _ = converse(interaction, identity, answer, "```json\n" + "[" * 100_000 + "\n```")
    assert results[0][0] is False and "revenue" in results[0][1]
    assert results[1][0] is False and "could not find a forecast" in results[1][1]


def test_incomplete_answer_names_what_is_missing_or_not_a_number(interaction: ForecastFeedback, identity: dict) -> None:
    partial = dict(identity["statements"][-1])
    del partial["cash"], partial["debt"]
    partial["net_income"] = "about 12k"
    results, _ = converse(interaction, identity, "```json\n" + json.dumps(partial) + "\n```")
    terminate, feedback, _, _ = results[0]
    assert terminate is False
    assert "missing items: cash, debt" in feedback and "not numbers: net_income" in feedback


def test_a_well_formed_answer_ends_the_episode_and_is_scored(interaction: ForecastFeedback, identity: dict) -> None:
    forecast = forecast_statements(public_view(identity))
    results, score = converse(interaction, identity, "thinking...", format_answer(forecast))
    assert [result[0] for result in results] == [False, True]
    _, feedback, turn_score, extra = results[-1]
    assert feedback == "Forecast received: all 26 line items read."
    assert turn_score == score == pytest.approx(score_forecast(forecast, identity).score)
    assert extra == {"attempts": 1}
    # a well-formed but inconsistent forecast also ends the episode (it is scored 0, without saying why)
    copied = format_answer(identity["statements"][-1])
    results, score = converse(interaction, identity, copied)
    assert results[0][:3] == (True, "Forecast received: all 26 line items read.", 0.0) and score == 0.0


def test_feedback_never_carries_the_hidden_year(interaction: ForecastFeedback, identity: dict) -> None:
    hidden = identity["hidden"]["statements"]
    turns = ["no idea", '```json\n{"revenue": 1}\n```', format_answer(hidden)]
    results, score = converse(interaction, identity, *turns)
    assert score == 1.0
    for _, feedback, _, _ in results:
        for key in ("revenue", "net_income", "cash", "total_assets"):
            assert str(hidden[key]) not in feedback and f"{hidden[key]:,}" not in feedback


def test_turns_without_a_forecast_end_the_episode_after_max_unanswered(identity: dict) -> None:
    results, score = converse(ForecastFeedback(max_unanswered=2), identity, "a", "b", "c")
    assert [result[0] for result in results] == [False, True]
    assert results[-1][1] == "No complete forecast was given; the episode ends." and score == 0.0
    results, _ = converse(ForecastFeedback(), identity, "a", "b", "c", "d")
    assert [result[0] for result in results] == [False, False, True]


def test_judges_the_last_assistant_message_and_content_parts(interaction: ForecastFeedback, identity: dict) -> None:
    answer = format_answer(identity["hidden"]["statements"])

    async def episode() -> tuple:
        instance_id = await interaction.start_interaction(None, identity=identity)
        messages = [
            {"role": "user", "content": "Forecast."},
            {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            {"role": "tool", "content": "{}"},
        ]
        response = await interaction.generate_response(instance_id, messages)
        await interaction.finalize_interaction(instance_id)
        return response

    assert asyncio.run(episode())[:3] == (True, "Forecast received: all 26 line items read.", 1.0)


def test_an_identity_without_a_hidden_year_scores_zero(interaction: ForecastFeedback, identity: dict) -> None:
    results, score = converse(interaction, public_view(identity), format_answer(identity["hidden"]["statements"]))
    assert results[0][0] is True and score == 0.0
