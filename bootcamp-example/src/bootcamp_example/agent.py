"""The reference agent: sends the whole expression to the calculator, then answers with what it returned."""

from __future__ import annotations

import random
from typing import ClassVar

from bootcamp_core import ReferenceAgent, message_text, tool_call_message
from bootcamp_example.answer import format_answer
from bootcamp_example.arithmetic import ExpressionError, parse_number

__all__ = ["CalculatorAgent"]


class CalculatorAgent(ReferenceAgent):
    """One calculator call on the whole expression, then the tool's output as the final answer."""

    name: ClassVar[str] = "calculator_agent"
    generators: ClassVar[tuple[str, ...]] = ("arithmetic",)

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """A calculator call while no tool result is in the conversation, else the answer read from the latest one."""
        result = next((message for message in reversed(messages) if message.get("role") == "tool"), None)
        if result is None:
            return tool_call_message(messages, ("calculator", {"expression": identity["expression"]}))
        # Only the tool's output, exactly as the model sees it, decides the answer (never the hidden identity).
        output = message_text(result.get("content")).strip()
        try:
            parse_number(output)
        except ExpressionError:
            return {"role": "assistant", "content": f"The calculator did not return a number: {output}"}
        return {"role": "assistant", "content": f"The calculator gives {output}.\n\n{format_answer(output)}"}
