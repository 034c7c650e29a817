"""The reference agent: a driver-model forecast from the prompt's figures, checked with ``check_consistency``."""

from __future__ import annotations

import json
import random
from typing import ClassVar

from bootcamp_core import ReferenceAgent, message_text, tool_call_message
from bootcamp_financial_prediction.answer import format_answer
from bootcamp_financial_prediction.forecast import forecast_statements
from bootcamp_financial_prediction.generator import read_prompt_data

__all__ = ["DriverModelAnalyst"]

_CHECK = "check_consistency"


class DriverModelAnalyst(ReferenceAgent):
    """Forecasts with the driver model from the prompt's figures, asks ``check_consistency`` once, then answers."""

    # It reads only the conversation, never the identity it is handed, so it cannot see the hidden year.

    name: ClassVar[str] = "driver_model_analyst"
    generators: ClassVar[tuple[str, ...]] = ("forecast",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A ``check_consistency`` call on the forecast first (when the tool is offered), then the answer."""
        prompt = next((message_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
        data = read_prompt_data(prompt)
        if data is None:
            return {"role": "assistant", "content": "I cannot find the company's figures in the prompt."}
        forecast = forecast_statements(data)
        offered = {(tool.get("function") or {}).get("name") for tool in tools}
        report = next((m for m in reversed(messages) if m.get("role") == "tool" and m.get("name") == _CHECK), None)
        if report is None and _CHECK in offered:
            return tool_call_message(messages, (_CHECK, {"statements": forecast}))
        year = data["forecast_year"]
        return {
            "role": "assistant",
            "content": f"FY{year} forecast from the guided and historical drivers ({_summary(report)}).\n\n"
            + format_answer(forecast),
        }


def _summary(report: dict | None) -> str:
    """What the consistency check said, in a few words."""
    if report is None:
        return "not checked"
    try:
        result = json.loads(message_text(report.get("content")))
    except ValueError:
        return "the check failed"
    if not isinstance(result, dict):
        return "the check failed"
    if result.get("consistent") and not result.get("policy_and_outlook_breaches"):
        return "all identities and policies hold"
    broken = [entry.get("identity") or entry.get("rule") for entry in
              [*result.get("identities_failed", []), *result.get("policy_and_outlook_breaches", [])]]
    return "the check flags: " + "; ".join(map(str, broken)) if broken else "the check found problems"
