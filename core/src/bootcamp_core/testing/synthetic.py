"""Synthetic results files: many long episodes of varied text, for tests and benchmarks of what reads results.

Deterministic: the same count gives the same file. The text is words drawn with natural-language frequencies (Zipf's
law: the n-th most frequent word is n times rarer than the first), so it compresses as real transcripts do.
"""

from __future__ import annotations

import itertools
import json
import os
import random

__all__ = ["synthetic_result_line", "write_synthetic_results"]

_ZIPF = list(itertools.accumulate(1 / rank for rank in range(1, 3001)))


def _vocabulary(rng: random.Random) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)]


def synthetic_result_line(index: int, rng: random.Random, words: list[str], turns: int = 40) -> dict:
    """A results line of episode ``index``: ``turns`` assistant turns, each a ``search`` tool call and its output.

    Its data source and generator are ``bootcamp/s{index % 3}`` and ``s{index % 3}/gen``, its id
    ``rec{index:05d}:0``, its ground truth ``{"answer": "x"}`` (a hidden field), its score 0, 0.25 or 1.
    """

    def text(count: int) -> str:
        return " ".join(rng.choices(words, cum_weights=_ZIPF, k=count))

    messages: list[dict] = [{"role": "system", "content": "You are a careful agent."},
                            {"role": "user", "content": f"Task {index}: " + text(60)}]
    calls = []
    for turn in range(turns):
        call = {"id": f"c{turn}", "name": "search", "arguments": json.dumps({"query": text(6)}),
                "output": text(25), "step_reward": 0.0, "error": None}
        calls.append(call)
        messages.append({"role": "assistant", "content": text(30), "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": "search", "arguments": call["arguments"]}}]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "name": "search", "content": call["output"]})
    score = rng.choice([0.0, 0.25, 1.0])
    return {"id": f"rec{index:05d}:0", "repeat": 0, "data_source": f"bootcamp/s{index % 3}",
            "generator": f"s{index % 3}/gen", "score": score, "solved": score >= 1, "success": True,
            "error_type": None, "error_kind": None, "finish_reason": rng.choice(["terminated", "max_turns"]),
            "reached_max_turns": False, "turn_record": {"assistant_turns": turns, "tool_calls": turns},
            "messages": messages, "tool_calls": calls, "extracted_output": text(1), "ground_truth": {"answer": "x"},
            "hidden_fields": ["answer"], "token_usage": {"total_tokens": 1000}}


def write_synthetic_results(path: str | os.PathLike, count: int, *, turns: int = 40, seed: int = 7) -> None:
    """Write ``count`` :func:`synthetic_result_line` lines to ``path`` (a results.jsonl)."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(synthetic_result_line(index, rng, words, turns)) + "\n" for index in range(count))
