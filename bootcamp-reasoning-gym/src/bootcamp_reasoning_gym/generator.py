"""One task generator per reasoning-gym dataset: an entry drawn by index from the dataset built with the config."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from bootcamp_core import ConfigError, GenerationError, TaskGenerator
from bootcamp_reasoning_gym import curriculum, datasets
from bootcamp_reasoning_gym.answer import ANSWER_INSTRUCTION

__all__ = ["ReasoningGymGenerator", "generator_class"]


class ReasoningGymGenerator(TaskGenerator):
    """Record *i*: entry ``rng.randrange(SIZE)`` of the dataset built with the config (seed 0), JSON-normalised."""

    dataset: ClassVar[str]
    reward: ClassVar[str] = "reasoning_gym"
    interaction: ClassVar[str | None] = "feedback"
    hidden_fields: ClassVar[tuple[str, ...]] = ("entry",)

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.dataset_config = curriculum.resolve(self.dataset, config)  # a bad level is a ConfigError of its own
        try:
            self.dataset_config = datasets.normalise(self.dataset_config)
            datasets.build(self.dataset, self.dataset_config)
        except Exception as error:  # noqa: BLE001 - reasoning-gym raises anything on a bad config or entry
            raise ConfigError(f"reasoning_gym/{self.dataset}: {type(error).__name__}: {error}") from None

    def case_generator(self, rng: random.Random) -> dict:
        """``{"dataset", "config", "seed", "index", "entry"}``; the entry holds the question, answer and metadata."""
        index = rng.randrange(datasets.SIZE)
        try:
            entry = datasets.build(self.dataset, self.dataset_config)[index]
            entry = datasets.normalise(entry)
        except Exception as error:  # noqa: BLE001 - reasoning-gym raises anything on a bad config or entry
            raise GenerationError(f"reasoning_gym/{self.dataset}: {type(error).__name__}: {error}") from None
        return {"dataset": self.dataset, "config": self.dataset_config, "seed": 0, "index": index, "entry": entry}

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """The dataset's question, then the answer format."""
        return f"{identity['entry']['question']}\n\n{ANSWER_INSTRUCTION}"


def generator_class(name: str) -> type[ReasoningGymGenerator]:
    """The generator class of dataset ``name`` (its id is ``reasoning_gym/<name>``)."""
    return type(f"ReasoningGym_{name}", (ReasoningGymGenerator,), {"name": name, "dataset": name,
                                                                    "__module__": __name__})
