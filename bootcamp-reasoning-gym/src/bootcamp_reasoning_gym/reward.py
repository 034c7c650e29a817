"""The reward: the dataset's own ``score_answer`` on the boxed answer."""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_core import Reward
from bootcamp_reasoning_gym import datasets
from bootcamp_reasoning_gym.answer import extract_answer

__all__ = ["ReasoningGymReward"]


class ReasoningGymReward(Reward):
    """reasoning-gym's verifier of the identity's dataset on the extracted answer; 0 on anything it cannot score."""

    name: ClassVar[str] = "reasoning_gym"
    solved_threshold: ClassVar[float] = 1.0

    def extract_output(self, output: str) -> str | None:
        return extract_answer(output)

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        name = identity.get("dataset") if isinstance(identity, dict) else None
        if not isinstance(name, str) or name in datasets.EXCLUDED or name not in datasets.registry():
            return 0.0
        try:
            dataset = datasets.build(name, identity.get("config") or {})
            return float(dataset.score_answer(extracted, identity["entry"]) or 0.0)
        except Exception:  # noqa: BLE001 - a verifier crash on model text scores 0
            return 0.0
