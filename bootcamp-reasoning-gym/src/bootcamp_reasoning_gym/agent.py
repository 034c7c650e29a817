"""The reference agent: answers with the entry's own answer."""

from __future__ import annotations

import random
from typing import ClassVar

from bootcamp_core import ReferenceAgent
from bootcamp_reasoning_gym.answer import format_answer

__all__ = ["EntryAnswerAgent"]


class EntryAnswerAgent(ReferenceAgent):
    """One message: the dataset entry's own answer in the asked format (proves every generated task solvable)."""

    name: ClassVar[str] = "entry_answer"

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        return {"role": "assistant", "content": format_answer(str(identity["entry"]["answer"]))}
