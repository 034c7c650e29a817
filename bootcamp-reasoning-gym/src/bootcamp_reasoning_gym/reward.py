"""The reward: the dataset's own ``score_answer`` on the boxed answer."""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, ClassVar

from bootcamp_core import ConfigError, Reward, report_error
from bootcamp_reasoning_gym import datasets, sandbox
from bootcamp_reasoning_gym.answer import extract_answer

__all__ = ["ReasoningGymReward"]

logger = logging.getLogger(__name__)


class ReasoningGymReward(Reward):
    """reasoning-gym's verifier of the identity's dataset on the extracted answer; 0 on anything it cannot score.

    Verifiers that evaluate model text run in :mod:`bootcamp_reasoning_gym.sandbox` (config ``verifier_timeout_s``,
    default 5, and ``verifier_memory_mb``, default 1024). An answer that overruns scores 0 and is reported as a
    ``reward_timeout`` (``bootcamp_core.report_error``: the episode's ``error_kind``), one that crashes the verifier's
    sandboxed child as a ``model_error``; both are kept in ``errors`` too.
    """

    name: ClassVar[str] = "reasoning_gym"
    solved_threshold: ClassVar[float] = 1.0

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.timeout_s = _positive(config, "verifier_timeout_s", sandbox.TIMEOUT_S)
        self.memory_mb = int(_positive(config, "verifier_memory_mb", sandbox.MEMORY_MB))

    def extract_output(self, output: str) -> str | None:
        return extract_answer(output)

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        name = identity.get("dataset") if isinstance(identity, dict) else None
        if not isinstance(name, str) or name in datasets.EXCLUDED or name not in datasets.registry():
            return 0.0
        config = identity.get("config") or {}
        if datasets.evaluates_model_text(name):
            score, outcome = sandbox.score(name, config, extracted, identity.get("entry"), timeout_s=self.timeout_s,
                                           memory_mb=self.memory_mb)
            problem = _OUTCOMES.get(outcome)
            if problem is not None:
                kind, what = problem
                message = f"reasoning_gym/{name}'s verifier {what.format(self.timeout_s)}; score 0"
                self._record(f"{kind}: {message}" if kind else message)
                if kind:
                    report_error(kind, message)
                return 0.0
            return score
        try:
            dataset = datasets.build(name, config)
            return float(dataset.score_answer(extracted, identity["entry"]) or 0.0)
        except Exception:  # noqa: BLE001 - a verifier crash on model text scores 0
            return 0.0

    def _record(self, message: str) -> None:
        self.__dict__.setdefault("errors", deque(maxlen=self.max_recorded_errors)).append(message)
        logger.warning(message)


#: sandbox outcome -> (the model-side error kind it reports, or None when it is not the answer's doing; what happened)
_OUTCOMES = {
    "timeout": ("reward_timeout", "ran past {:g} s"),
    "crashed": ("model_error", "crashed on the answer (its sandboxed child died or reported nothing of its own)"),
    "failed": (None, "could not be built in the sandbox"),
}


def _positive(config: dict, field: str, default: float) -> float:
    value = config.get(field, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"reasoning_gym reward: {field} must be a positive number, got {value!r}", field=field)
    return float(value)
