"""Shared building blocks of bootcamps: message text, tool-call messages, per-episode call budgets, answer feedback.

A bootcamp uses these instead of writing its own::

    from bootcamp_core import AnswerFeedback, CallBudget, Tool, last_assistant_text, tool_call_message

    class Feedback(AnswerFeedback):          # checks each answer with the bootcamp's reward, up to 3 attempts
        name = "feedback"
        reward = MyReward

docs/building-blocks.md shows each with a runnable example.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from bootcamp_core.plugin.components import Interaction, Reward
from bootcamp_core.plugin.errors import ConfigError

__all__ = ["AnswerFeedback", "CallBudget", "config_flag", "config_mapping", "config_number", "config_whole_number",
           "last_assistant_text", "message_text", "tool_call_message"]


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of an OpenAI content list ("" otherwise)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def last_assistant_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last assistant message ("" when there is none): what a reward scores."""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            return message_text(message.get("content"))
    return ""


def tool_call_message(
    messages: Sequence[Mapping[str, Any]], *calls: tuple[str, Mapping[str, Any]], content: str | None = None
) -> dict:
    """An OpenAI assistant message that calls tools, for reference agents: one ``(tool name, arguments)`` per call.

    Call ids are ``call_<n>``, numbered on from the tool calls already in ``messages``, so they stay unique in the
    episode. ``tool_call_message(messages, ("calculator", {"expression": "1+2"}))``.
    """
    if not calls:
        raise ValueError("tool_call_message needs at least one (name, arguments) call")
    made = sum(len(message.get("tool_calls") or ()) for message in messages if isinstance(message, Mapping))
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"call_{made + index}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(dict(arguments))}}
            for index, (name, arguments) in enumerate(calls)
        ],
    }


# ------------------------------------------------------------------------------------------- component config
# Checks of a component's constructor config, for ``__init__``: a bad value fails when the component is built
# (``bootcamp eval`` turns that into one ``error:`` line before any episode runs), not inside every episode. Each
# reads one key of ``config``, falls back to its default when the key is absent, and raises ConfigError naming the
# component's class and the key (``field``); keys no check reads stay accepted, as the base class accepts any.
def _config_error(component: object, key: str, rule: str, value: Any) -> ConfigError:
    return ConfigError(f"{type(component).__name__}: config {key} must be {rule}, got {value!r}", field=key)


def config_number(component: object, config: Mapping[str, Any], key: str, default: float, *,
                  low: float | None = None, above: float | None = None) -> float:
    """``config[key]`` (else ``default``) as a finite number, at least ``low`` / greater than ``above`` when given."""
    value = config.get(key, default)
    rule = "a finite number" + ("" if low is None else f" >= {low:g}") + ("" if above is None else f" > {above:g}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _config_error(component, key, rule, value)
    if (low is not None and value < low) or (above is not None and value <= above):
        raise _config_error(component, key, rule, value)
    return float(value)


def config_flag(component: object, config: Mapping[str, Any], key: str, default: bool) -> bool:
    """``config[key]`` (else ``default``) when it is true or false (not 0/1, not "yes")."""
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise _config_error(component, key, "true or false", value)
    return value


def config_whole_number(component: object, config: Mapping[str, Any], key: str, default: int, *, low: int) -> int:
    """``config[key]`` (else ``default``) as a whole number (``3`` or ``3.0``) of at least ``low``."""
    value = config.get(key, default)
    rule = f"a whole number >= {low}"
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value) or value < low):
        raise _config_error(component, key, rule, value)
    return int(value)


def config_mapping(component: object, config: Mapping[str, Any], key: str) -> dict:
    """``config[key]`` as a mapping; absent or null is an empty one."""
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _config_error(component, key, "a mapping of settings", value)
    return dict(value)


class CallBudget:
    """A per-episode budget of calls of one tool, kept outside the tool's episode state.

    ``Tool.create`` resets the episode's state; a runner that creates an instance again (verl creates each tool per
    trajectory, a tool server answers a repeated create) would so hand the model a fresh budget. The count here lives
    until :meth:`close` (call it from ``release``), whatever ``create`` does::

        async def create(self, instance_id=None, identity=None, **kwargs):
            instance_id = await super().create(instance_id, identity, **kwargs)
            self.budget.open(instance_id, (identity or {}).get("budget", 8))
            return instance_id

        async def execute(self, instance_id, parameters, **kwargs):
            if not self.budget.take(instance_id):
                return "Error: the budget of calls is used up.", 0.0, self.budget.metrics(instance_id)
            ...
    """

    def __init__(self) -> None:
        self._episodes: dict[str, dict[str, int]] = {}

    def open(self, instance_id: str, limit: Any) -> None:
        """Give the episode ``limit`` calls; an episode already open keeps its count and its limit."""
        if instance_id in self._episodes:
            return
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit != int(limit) or limit < 0:
            raise ConfigError(f"a call budget must be a whole number >= 0, got {limit!r}", field="budget")
        self._episodes[instance_id] = {"limit": int(limit), "calls": 0, "refused": 0}

    def _episode(self, instance_id: str) -> dict[str, int]:
        try:
            return self._episodes[instance_id]
        except KeyError:
            raise KeyError(f"no call budget for episode {instance_id!r}: call open() from create first") from None

    def take(self, instance_id: str) -> bool:
        """Count one call when the budget has one left (True); else count a refusal (False).

        Synchronous, so concurrent calls of one turn cannot overdraw: call it before the tool's first ``await``.
        """
        episode = self._episode(instance_id)
        if episode["calls"] >= episode["limit"]:
            episode["refused"] += 1
            return False
        episode["calls"] += 1
        return True

    def limit(self, instance_id: str) -> int:
        """The episode's budget."""
        return self._episode(instance_id)["limit"]

    def used(self, instance_id: str) -> int:
        """Calls counted so far."""
        return self._episode(instance_id)["calls"]

    def left(self, instance_id: str) -> int:
        """Calls left."""
        episode = self._episode(instance_id)
        return episode["limit"] - episode["calls"]

    def metrics(self, instance_id: str) -> dict[str, int]:
        """``{"calls", "calls_left", "refused"}`` for a tool's metrics."""
        episode = self._episode(instance_id)
        return {"calls": episode["calls"], "calls_left": episode["limit"] - episode["calls"],
                "refused": episode["refused"]}

    def close(self, instance_id: str) -> None:
        """Forget the episode (safe to call twice)."""
        self._episodes.pop(instance_id, None)


class AnswerFeedback(Interaction):
    """Checks each final answer with the bootcamp's own reward; a wrong one gets another try, up to ``max_attempts``.

    A subclass sets ``name`` and ``reward`` (its Reward class), and may set ``answer_format`` (quoted when no answer
    is found) and ``hint`` (said after a wrong answer). A turn whose text the reward extracts nothing from is
    unanswered: after ``max_unanswered`` such turns the episode ends with ``gave_up``. An answer scoring at least the
    reward's ``solved_threshold`` ends the episode with "Correct.". Config ``max_attempts``, ``max_unanswered``
    override the class values; ``reward_config`` is the reward's own config. The answer's value is never revealed.

    With ``reveal = False`` the first answer the reward can read ends the episode with ``received`` whatever it
    scores, so the feedback says nothing about the hidden truth (one attempt). Two methods shape the rest:
    :meth:`answer_text` (what the reward reads: the last assistant text) and :meth:`unanswered_feedback` (what a turn
    without a readable answer is told: say what is wrong with it).

    The reward's ``verify_score`` runs off the event loop, so a slow check costs only its own episode's time::

        class Feedback(AnswerFeedback):
            name = "feedback"
            reward = MyReward
            answer_format = "ANSWER: <number>"
    """

    reward: ClassVar[type[Reward]]
    max_attempts: ClassVar[int] = 3
    max_unanswered: ClassVar[int] = 3
    answer_format: ClassVar[str | None] = None
    hint: ClassVar[str] = "Check your work and answer again in the same form."
    reveal: ClassVar[bool] = True
    received: ClassVar[str] = "Answer received; the episode ends."
    gave_up: ClassVar[str] = "No final answer was given; the episode ends."

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        reward = getattr(type(self), "reward", None)
        if not (isinstance(reward, type) and issubclass(reward, Reward)):
            raise ConfigError(f"{type(self).__name__}.reward must be a Reward subclass, got {reward!r}", field="reward")
        # checked here, so a bad interaction config fails when the interaction is built, not in every episode
        self.attempt_limit = config_whole_number(self, config, "max_attempts", self.max_attempts, low=1)
        self.unanswered_limit = config_whole_number(self, config, "max_unanswered", self.max_unanswered, low=1)
        self.judge = reward(**config_mapping(self, config, "reward_config"))

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no answers given."""
        instance_id = await super().start_interaction(instance_id, identity, **kwargs)
        self.state(instance_id).update(attempts=0, unanswered=0, last_score=0.0)
        return instance_id

    def answer_text(self, messages: list[dict]) -> str:
        """The text the reward reads for this turn: the last assistant message's."""
        return last_assistant_text(messages)

    def unanswered_feedback(self, text: str) -> str:
        """The feedback to a turn whose ``text`` holds no answer the reward can read (the episode goes on)."""
        feedback = "I could not find a final answer."
        if self.answer_format:
            feedback += f" Give it in exactly this form:\n\n{self.answer_format}"
        return feedback

    def _extracts(self, text: str) -> bool:
        try:
            return self.judge.extract_output(text) is not None
        except Exception:  # a crash in extraction is no answer; verify_score records such crashes where it scores
            return False

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """Judge the last assistant message: (terminate, feedback, turn score, ``{"attempts", ...}``)."""
        from bootcamp_core.plugin.off_loop import run_off_loop

        state = self.state(instance_id)
        text = self.answer_text(messages)
        if not self._extracts(text):
            state["last_score"] = 0.0
            state["unanswered"] += 1
            extra = {"attempts": state["attempts"], "unanswered": state["unanswered"]}
            if state["unanswered"] >= self.unanswered_limit:
                return True, self.gave_up, 0.0, extra
            return False, self.unanswered_feedback(text), 0.0, extra
        state["attempts"] += 1
        extra = {"attempts": state["attempts"]}
        identity = state["identity"]
        # off the event loop: the check may be slow (a simulation), and it must not hold up other episodes
        score = await run_off_loop(lambda: self.judge.verify_score(text, identity, messages=messages))
        state["last_score"] = score
        if not self.reveal:
            return True, self.received, score, extra
        # DESIGN.md's solved rule; a reward that sets no threshold counts only a full score
        if score >= float(getattr(self.judge, "solved_threshold", 1.0)) - 1e-9:
            return True, "Correct.", score, extra
        left = self.attempt_limit - state["attempts"]
        if left <= 0:
            return True, "That is not correct, and no attempts are left.", score, extra
        feedback = f"That is not correct. {self.hint} {left} attempt{'s' if left != 1 else ''} left."
        return False, feedback, score, extra

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The score of the last judged turn."""
        return float(self.state(instance_id)["last_score"])
