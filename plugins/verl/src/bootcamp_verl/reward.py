"""``compute_score`` for verl: a bootcamp's reward, seeing what ``bootcamp eval`` shows it.

Configure ``reward.custom_reward_function.path=pkg://bootcamp_verl.reward`` and ``...name=compute_score``
(``bootcamp verl export`` writes both). verl calls it with the row's ``data_source``, the whole decoded response
(``solution_str``: every turn, tool output included), ``reward_model.ground_truth`` and ``extra_info`` merged with
the agent loop's ``extra_fields``. For a bootcamp row (``data_source`` ``bootcamp/<namespace>``, or an
``extra_info.bootcamp``):

- the reward is ``extra_info.bootcamp.reward``, else the namespace's only reward;
- the identity is the ground truth, an object or its JSON text;
- what the reward sees (DESIGN.md) comes from the episode :class:`~bootcamp_verl.agent_loop.BootcampAgentLoop` put
  in ``extra_info`` (``messages``, ``tool_rewards``, ``tool_scores``, ``turn_scores``); without it (verl's stock
  loop, or a reward manager that does not merge the agent loop's ``extra_fields`` into ``extra_info``: in verl 0.9
  only ``naive``, ``rate_limited`` and ``remote`` do, ``dapo`` and ``gdpo`` do not) the output is ``solution_str``,
  with ``tool_rewards`` and ``turn_scores`` as verl gives them, the metric ``bootcamp_fallback`` is 1 and a warning is
  logged once per process. Only what the model wrote after its last tool call or tool response is judged
  (:func:`final_text`), so nothing written in a tool call's arguments, and nothing a tool answered, scores;
- keyword arguments other than verl's own (``reward.custom_reward_function.reward_kwargs``) are verify kwargs;
- it never raises: a missing reward, a bad ground truth or an infrastructure failure in the episode score 0 with
  ``bootcamp_error`` 1 (and a warning in the log). The agent loop masks a trajectory with an infrastructure
  failure out of training (its ``response_mask`` is all 0).

Other data sources go to verl's ``default_compute_score``. The result is always a dict with the same keys
(:data:`RESULT_KEYS`), because verl stacks these metrics across a batch and fails on keys that differ between rows.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

import bootcamp_verl.advantage  # noqa: F401  (registers bootcamp_grpo where verl loads this reward)
from bootcamp_core import normalize_record, score_trajectory

__all__ = ["RESULT_KEYS", "TOOL_SPANS", "compute_score", "final_text"]

logger = logging.getLogger("bootcamp_verl")

#: Every result's keys: the score, then metrics verl logs (means over a batch).
RESULT_KEYS = ("score", "bootcamp_answered", "bootcamp_tool_calls", "bootcamp_tool_reward", "bootcamp_error",
               "bootcamp_fallback")
#: Keyword arguments verl's reward managers add for their own use: never verify kwargs.
_VERL_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer", "sandbox_fusion_url",
                          "concurrent_semaphore", "memory_limit_mb"})
_DATA_SOURCE_PREFIX = "bootcamp/"
#: Fallback kinds already warned about in this process.
_warned: set[str] = set()

#: The tool-call and tool-response spans of the formats verl 0.9's tool parsers read (``multi_turn.format``) and of
#: the chat templates that wrap tool output, as ``(opener, closer, closer_alone_ends_a_span)``. verl decodes
#: ``solution_str`` with ``skip_special_tokens=True``: role markers are gone, and so are the markers a tokenizer
#: declares special (gpt-oss's harmony tokens, for one); those that are added but not special (Qwen's
#: ``<tool_call>``, ``<tool_response>``) survive. A closer alone (its opener dropped, or echoed by a tool inside its
#: answer) still ends a span, except ``<|end|>``, which ends every harmony message, answers included.
TOOL_SPANS: tuple[tuple[str, str, bool], ...] = (
    ("<tool_call>", "</tool_call>", True),  # hermes, qwen3_coder (<function=...> inside), glm
    ("<tool_response>", "</tool_response>", True),  # Qwen, GLM: tool output
    ("<seed:tool_call>", "</seed:tool_call>", True),  # seed
    ("<minimax:tool_call>", "</minimax:tool_call>", True),  # minimax
    ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", True),  # kimi: a turn's calls
    ("<|tool_call_begin|>", "<|tool_call_end|>", True),  # kimi: one call (a section's end may be cut off)
    ("<\uff5cDSML\uff5ctool_calls>", "</\uff5cDSML\uff5ctool_calls>", True),  # deepseek_v4
    ("<|tool_call>", "<tool_call|>", True),  # gemma4: a call
    ("<|tool_response>", "<tool_response|>", True),  # gemma4: tool output
    (" to=functions.", "<|call|>", True),  # gpt-oss: a call, its recipient up to <|call|>
    ("<|start|>functions.", "<|end|>", False),  # gpt-oss: tool output, a message from the function
)


class _Markers:
    """The next occurrence of each marker in a text at or after a position that only moves forward: each marker's
    ``str.find`` scans any stretch of the text once, so a whole scan is linear in the text's length."""

    def __init__(self, text: str, markers: Iterable[str]) -> None:
        self.text = text
        self.next = {marker: at for marker in markers if (at := text.find(marker)) >= 0}  # only those in the text

    def first(self, position: int) -> tuple[int, str]:
        """The earliest marker at or after ``position`` (the longest on a tie), or ``(-1, "")``."""
        found, chosen, gone = -1, "", []
        for marker, at in self.next.items():
            if at < position:
                at = self.next[marker] = self.text.find(marker, position)
                if at < 0:
                    gone.append(marker)
                    continue
            if found < 0 or at < found or (at == found and len(marker) > len(chosen)):
                found, chosen = at, marker
        for marker in gone:
            del self.next[marker]
        return found, chosen


def final_text(solution_str: str) -> str:
    """What the model wrote after the last tool-call or tool-response span of ``solution_str`` (all of it if there
    is none): the answer verl's whole decoded response ends with.

    Spans are read front to back (:data:`TOOL_SPANS`): an opener runs to its own closer, so markers inside a span
    (a tool call's arguments quoting ``</tool_response>``) are part of it; a closer alone ends a span too. A span
    left open (a call cut off by the response length) runs to the end: nothing after its opener scores. Linear in
    the text's length (``str.find``, no patterns).
    """
    text = solution_str if isinstance(solution_str, str) else ""
    pairs = {opener: closer for opener, closer, _ in TOOL_SPANS}
    stray = [closer for _, closer, alone in TOOL_SPANS if alone]
    markers = _Markers(text, [*pairs, *stray])
    position = end = 0
    while True:
        at, marker = markers.first(position)
        if at < 0:
            return text[end:]
        if marker in pairs:
            close = text.find(pairs[marker], at + len(marker))
            if close < 0:
                return ""
            position = end = close + len(pairs[marker])
        else:  # a closer without its opener
            position = end = at + len(marker)


def _result(score: float, *, answered: bool = False, tool_rewards: Iterable[float] = (), error: bool = False,
            fallback: bool = False) -> dict:
    rewards = list(tool_rewards)
    return {
        "score": float(score),
        "bootcamp_answered": float(answered),
        "bootcamp_tool_calls": float(len(rewards)),
        "bootcamp_tool_reward": float(sum(rewards)),
        "bootcamp_error": float(error),
        "bootcamp_fallback": float(fallback),
    }


def _warn_fallback(data_source: str, extra_info: dict) -> None:
    """Warn once per process that the reward sees ``solution_str`` instead of the episode's messages."""
    if "tool_rewards" in extra_info or "turn_scores" in extra_info:
        kind, why = "stock", "ran under verl's tool_agent loop, not bootcamp_agent (agent_name / default_agent_loop)"
    else:
        kind, why = "unmerged", ("carries none of the agent loop's extra_fields: the reward manager does not merge "
                                 "them into extra_info (in verl 0.9 only naive, rate_limited and remote do)")
    if kind not in _warned:
        _warned.add(kind)
        logger.warning("compute_score for %s: the row %s; the reward judges the decoded response (solution_str) "
                       "instead of the episode's messages, tool scores and turn scores (metric bootcamp_fallback)",
                       data_source, why)


def _floats(value: Any) -> list[float]:
    if value is None or isinstance(value, (str, bytes, dict)):
        return []
    try:
        return [float(item) for item in value]
    except (TypeError, ValueError):
        return []


def _reward_id(data_source: str, bootcamp: Any, registry: Any) -> str:
    reward = bootcamp.get("reward") if isinstance(bootcamp, dict) else None
    if reward:
        return str(reward)
    namespace = data_source[len(_DATA_SOURCE_PREFIX):] if data_source.startswith(_DATA_SOURCE_PREFIX) else ""
    owned = registry.ids("reward", namespace=namespace)
    if len(owned) != 1:
        found = ", ".join(owned) or "none"
        raise LookupError(f"{data_source}: no extra_info.bootcamp.reward and {len(owned)} rewards in the namespace "
                          f"({found}); export the dataset with `bootcamp verl export`")
    return owned[0]


def _score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict, verify_kwargs: dict) -> dict:
    from bootcamp_core import get_registry

    failure = extra_info.get("infrastructure_error")
    if failure:  # the episode did not run to its end: nothing to judge (bootcamp eval does not score it either)
        return _result(0.0, tool_rewards=_floats(extra_info.get("tool_rewards")), error=True)
    if extra_info.get("finish_reason") == "reward_timeout":  # the interaction gave up on this answer: score 0, as eval
        return _result(0.0, tool_rewards=_floats(extra_info.get("tool_rewards")))
    registry = get_registry()
    reward = registry.component("reward", _reward_id(data_source, extra_info.get("bootcamp"), registry))
    identity = normalize_record({"reward_model": {"ground_truth": ground_truth}})["reward_model"]["ground_truth"]
    if not isinstance(identity, dict):
        raise TypeError(f"{data_source}: the ground truth is not an identity (a JSON object): {str(ground_truth)[:80]!r}")
    fallback = "messages" not in extra_info
    if fallback:  # not our agent loop's data: the whole response is all there is
        _warn_fallback(data_source, extra_info)
    messages = extra_info.get("messages")
    messages = list(messages) if messages is not None and len(messages) else []
    if not messages:
        messages = [{"role": "assistant", "content": final_text(solution_str)}]
    tool_rewards = _floats(extra_info.get("tool_rewards"))
    tool_scores = extra_info.get("tool_scores")
    tool_scores = {str(name): float(value) for name, value in tool_scores.items()} if isinstance(tool_scores, dict) else {}
    score, extracted = score_trajectory(
        reward, identity, messages=messages, tool_rewards=tool_rewards, tool_scores=tool_scores,
        turn_scores=_floats(extra_info.get("turn_scores")), verify_kwargs=verify_kwargs,
    )
    return _result(score if math.isfinite(score) else 0.0, answered=extracted is not None, tool_rewards=tool_rewards,
                   fallback=fallback)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs: Any) -> dict:
    """The reward of one rollout as ``{"score": ..., <metrics>}`` (see the module docstring)."""
    extra_info = extra_info if isinstance(extra_info, dict) else {}
    source = data_source if isinstance(data_source, str) else str(data_source)
    if not (source.startswith(_DATA_SOURCE_PREFIX) or isinstance(extra_info.get("bootcamp"), dict)):
        from verl.utils.reward_score import default_compute_score

        result = default_compute_score(data_source, solution_str, ground_truth, extra_info or None, **kwargs)
        return _result(result["score"] if isinstance(result, dict) else result)
    verify_kwargs = {key: value for key, value in kwargs.items() if key not in _VERL_KWARGS}
    try:
        return _score(source, solution_str, ground_truth, extra_info, verify_kwargs)
    # a bad record or a broken plugin costs this rollout its reward, never the run
    except Exception as error:  # noqa: BLE001
        logger.warning("compute_score for %s scored 0: %s: %s", source, type(error).__name__, error)
        return _result(0.0, error=True)
