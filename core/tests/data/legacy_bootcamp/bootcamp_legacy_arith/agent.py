"""The reference agent: sends the whole expression to the calculator, then answers with what it returned."""

from __future__ import annotations

import json
import random
from typing import ClassVar

from bootcamp_core import ReferenceAgent
from bootcamp_core.rollout import message_text

from bootcamp_legacy_arith.answer import format_answer
from bootcamp_legacy_arith.arithmetic import ExpressionError, parse_number

__all__ = ["CalculatorAgent"]


class CalculatorAgent(ReferenceAgent):
    """One calculator call on the whole expression, then the tool's output as the final answer."""

    name: ClassVar[str] = "calculator_agent"
    generators: ClassVar[tuple[str, ...]] = ("arithmetic",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A calculator call while no tool result is in the conversation, else the answer read from the latest one."""
        result = next((message for message in reversed(messages) if message.get("role") == "tool"), None)
        if result is None:
            calls = sum(len(message.get("tool_calls") or ()) for message in messages)
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{calls}",
                        "type": "function",
                        "function": {
                            "name": "calculator",
                            "arguments": json.dumps({"expression": identity["expression"]}),
                        },
                    }
                ],
            }
        # Only the tool's output, exactly as the model sees it, decides the answer (never the hidden identity).
        output = message_text(result.get("content")).strip()
        try:
            parse_number(output)
        except ExpressionError:
            return {"role": "assistant", "content": f"The calculator did not return a number: {output}"}
        return {"role": "assistant", "content": f"The calculator gives {output}.\n\n{format_answer(output)}"}
