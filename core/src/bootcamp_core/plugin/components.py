"""The base classes a bootcamp subclasses: generator, tool, interaction, reward, reference agent.

Every class takes keyword config only (``__init__(self, **config)`` stores ``self.config``). The host builds each
component once per (id, config) per process and one object serves many episodes concurrently, so per-episode state
lives in ``self.instances[instance_id]``, never on the object itself.

A complete bootcamp in one file::

    import random, re
    from bootcamp_core import TaskGenerator, Tool, Interaction, Reward, hookimpl

    class AddGenerator(TaskGenerator):
        name = "add"
        tools = ("adder",)
        reward = "add"
        def case_generator(self, rng):
            return {"a": rng.randint(1, 99), "b": rng.randint(1, 99)}
        def prompt_func(self, identity, rng):
            return f"What is {identity['a']} + {identity['b']}? Answer with the number."

    class AddReward(Reward):
        name = "add"
        def extract_output(self, output):
            found = re.findall(r"-?\\d+", output)
            return int(found[-1]) if found else None
        def verify_correction(self, extracted, identity, **kwargs):
            return float(extracted == identity["a"] + identity["b"])

    @hookimpl
    def bootcamp_register_task_generators(register):
        register(AddGenerator)

    @hookimpl
    def bootcamp_register_rewards(register):
        register(AddReward)
"""

from __future__ import annotations

import logging
import math
import random
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

logger = logging.getLogger("bootcamp_core")

__all__ = ["Component", "TaskGenerator", "Tool", "Interaction", "Reward", "ReferenceAgent"]

#: An episode is solved when ``score >= solved_threshold - SOLVED_TOLERANCE`` (DESIGN.md), so a score that float
#: arithmetic left a hair below the threshold still counts.
SOLVED_TOLERANCE = 1e-9


def is_solved(score: float, threshold: float = 1.0) -> bool:
    """Whether ``score`` reaches a reward's ``solved_threshold`` (within :data:`SOLVED_TOLERANCE`)."""
    return score >= threshold - SOLVED_TOLERANCE


class Component:
    """Keyword config only: ``__init__(self, **config)`` stores ``self.config`` and accepts any keys."""

    name: ClassVar[str]

    def __init__(self, **config: Any) -> None:
        self.config: dict[str, Any] = config

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={getattr(self, 'name', None)!r}, config={self.config!r})"


class _EpisodeState(Component):
    """Per-episode state keyed by instance id, shared by tools and interactions."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.instances: dict[str, dict[str, Any]] = {}

    def _open(self, instance_id: str | None, identity: dict | None) -> str:
        instance_id = instance_id or uuid.uuid4().hex
        self.instances[instance_id] = {"identity": identity or {}}
        return instance_id

    def state(self, instance_id: str) -> dict[str, Any]:
        """The state stored for ``instance_id``; a clear error when the episode was never created."""
        try:
            return self.instances[instance_id]
        except KeyError:
            raise KeyError(
                f"{type(self).__name__} has no episode {instance_id!r}: call create/start_interaction first"
            ) from None


class TaskGenerator(Component):
    """Makes task identities and the prompts that present them.

    ``case_generator`` and ``prompt_func`` draw only from the ``rng`` passed in, so a record is a pure function of
    (config, seed, split, index).
    """

    tools: ClassVar[Sequence[str]] = ()
    interaction: ClassVar[str | None] = None
    reward: ClassVar[str]
    #: Recommended episode limits, e.g. ``{"max_assistant_turns": 60, "max_user_turns": 120}``: used by
    #: ``bootcamp eval``, ``bootcamp demo`` and the verl export for every limit the user sets none of.
    limits: ClassVar[Mapping[str, int]] = {}
    #: Identity keys the model must never see (the answer, or what gives it away): the report's trajectory viewer
    #: marks them as ground truth, and shortcut tests hand a reference agent the identity without them.
    hidden_fields: ClassVar[Sequence[str]] = ()

    def case_generator(self, rng: random.Random) -> dict:
        """Return the task's identity: a JSON-serialisable dict (hidden fields included; they never reach the model)."""
        raise NotImplementedError(f"{type(self).__name__} must implement case_generator(rng)")

    def prompt_func(self, identity: dict, rng: random.Random) -> str | list[dict]:
        """Return the prompt: a string, or a list of OpenAI content parts (text / image_url) for vision tasks."""
        raise NotImplementedError(f"{type(self).__name__} must implement prompt_func(identity, rng)")


class Tool(_EpisodeState):
    """A function the model can call. One object serves many episodes; state goes in ``self.instances``."""

    description: ClassVar[str]
    parameters: ClassVar[dict]
    parallel_safe: ClassVar[bool] = False

    @classmethod
    def openai_schema(cls) -> dict:
        """The tool as an OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": cls.name, "description": cls.description, "parameters": cls.parameters},
        }

    async def create(self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any) -> str:
        """Start an episode: store the identity under the instance id and return the id used."""
        return self._open(instance_id, identity)

    async def execute(self, instance_id: str, parameters: dict, **kwargs: Any) -> tuple[str, float, dict]:
        """Run one call: return (text shown to the model, step reward, metrics)."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute(instance_id, parameters)")

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The tool's score for the episode (shown to the reward as ``tool_scores[name]``)."""
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode and drop its state. Safe to call twice."""
        self.instances.pop(instance_id, None)


class Interaction(_EpisodeState):
    """The environment's side of the conversation: feedback on an assistant turn that made no tool call."""

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode: store the identity under the instance id and return the id used."""
        return self._open(instance_id, identity)

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """Return (terminate, feedback injected as a user turn, turn score, extra)."""
        raise NotImplementedError(f"{type(self).__name__} must implement generate_response(instance_id, messages)")

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        """End the episode and drop its state. Safe to call twice."""
        self.instances.pop(instance_id, None)


class Reward(Component):
    """Scores the last assistant message against the identity.

    ``solved_threshold``: an episode counts as solved (pass@k, solved rates) when its score is at least this (less
    :data:`SOLVED_TOLERANCE`). A reward with a continuous score sets the score that means "solved"; every result line
    records ``solved``, so reports need no plugin installed.
    """

    solved_threshold: ClassVar[float] = 1.0
    #: The most recent plugin crashes inside ``verify_score`` (newest last), for reports and debugging.
    max_recorded_errors: ClassVar[int] = 100

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.errors: deque[str] = deque(maxlen=self.max_recorded_errors)

    def extract_output(self, output: str) -> Any:
        """Pull the answer out of the model's text; ``None`` when nothing answerable is there."""
        raise NotImplementedError(f"{type(self).__name__} must implement extract_output(output)")

    def verify_correction(self, extracted: Any, identity: dict, **kwargs: Any) -> float:
        """Score an extracted answer in [0, 1]."""
        raise NotImplementedError(f"{type(self).__name__} must implement verify_correction(extracted, identity)")

    def verify_score(self, output: str, identity: dict, **kwargs: Any) -> float:
        """Extract, verify, clamp to [0, 1]. Never raises: a crash scores 0 and is logged and kept in ``errors``
        (a :class:`~bootcamp_core.plugin.errors.PluginError` too, such as ``report_error`` with a kind that is not
        model-side: the conformance kit fails on such an entry, so the plugin's author sees it)."""
        try:
            extracted = self.extract_output(output if isinstance(output, str) else str(output or ""))
            if extracted is None:
                return 0.0
            score = float(self.verify_correction(extracted, identity, **kwargs))
        except Exception as error:  # a plugin bug must not take down a whole evaluation
            message = f"{type(self).__name__}.verify_score: {type(error).__name__}: {error}"
            # setdefault: a subclass that skipped super().__init__() still never raises from here
            self.__dict__.setdefault("errors", deque(maxlen=self.max_recorded_errors)).append(message)
            logger.warning("%s (scored 0)", message, exc_info=logger.isEnabledFor(logging.DEBUG))
            return 0.0
        if math.isnan(score):
            return 0.0
        return min(1.0, max(0.0, score))


class ReferenceAgent(Component):
    """A scripted policy, the embedded default player of a bootcamp; its messages go through the same engine."""

    generators: ClassVar[Sequence[str]] = ()

    async def act(self, messages: list[dict], tools: list[dict], identity: dict, rng: random.Random) -> dict:
        """Return one OpenAI-format assistant message (``content`` and/or ``tool_calls``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement act(messages, tools, identity, rng)")
