"""Test drivers a bootcamp's domain tests share: draw identities and prompts, hold a conversation with an
interaction, run one episode's tool calls.

Each runs the real component through its public methods, exactly as a runner would::

    from bootcamp_core.testing import converse, draws, run_tool_calls

    pairs = draws(MyGenerator(), seed=7, count=5)                 # [(identity, prompt), ...]
    responses, score = converse(MyFeedback(), identity, "ANSWER: 41", "ANSWER: 42")
    outputs, reward = run_tool_calls(MyTool(), identity, [{"x": 1}, {"x": 2}])
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["converse", "draws", "outputs", "run_tool_calls"]


def draws(generator: Any, seed: int, count: int = 20) -> list[tuple[dict, Any]]:
    """``count`` (identity, prompt) pairs of ``generator``, all drawn from one ``random.Random(seed)``."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        identity = generator.case_generator(rng)
        pairs.append((identity, generator.prompt_func(identity, rng)))
    return pairs


def _assistant(reply: Any) -> dict:
    if isinstance(reply, Mapping):
        return {"role": "assistant", **dict(reply)}
    return {"role": "assistant", "content": reply}


def converse(interaction: Any, identity: dict, *replies: Any, prompt: str | list | None = "Solve the task.",
             stop: bool = True) -> tuple[list[tuple], float]:
    """Each assistant reply in turn, judged by ``interaction``: (every response, the final score).

    A reply is the assistant's text (or a whole assistant message as a dict). The interaction's feedback becomes the
    next user turn, as in an episode; with ``stop`` (the default) the conversation ends at the first response that
    terminates, as a runner ends it. The interaction is finalized (twice: a second finalize must be harmless) and
    must hold no state for the episode afterwards.
    """
    import anyio

    async def episode() -> tuple[list[tuple], float]:
        instance_id = await interaction.start_interaction(None, identity=identity)
        messages: list[dict] = [] if prompt is None else [{"role": "user", "content": prompt}]
        responses = []
        for reply in replies:
            messages.append(_assistant(reply))
            response = await interaction.generate_response(instance_id, list(messages))
            responses.append(response)
            if stop and response[0]:
                break
            messages.append({"role": "user", "content": response[1]})
        score = await interaction.calculate_score(instance_id)
        await interaction.finalize_interaction(instance_id)
        await interaction.finalize_interaction(instance_id)
        held = getattr(interaction, "instances", {})
        assert instance_id not in held, f"{type(interaction).__name__} kept the state of a finalized episode"
        return responses, score

    return anyio.run(episode)


def run_tool_calls(tool: Any, identity: dict, calls: Iterable[Any], *,
                   instance_id: str | None = None, **create_kwargs: Any) -> tuple[list[tuple[str, float, dict]], float]:
    """One episode of ``tool``: create with ``identity``, execute each call's parameters in order, ``calc_reward``,
    release. Returns (every ``(text, step reward, metrics)``, the tool's reward).

    Parameters go to ``execute`` exactly as given, so a test can hand a tool what a careless runner might (a JSON
    string, a list)."""
    import anyio

    async def episode() -> tuple[list[tuple[str, float, dict]], float]:
        episode_id = await tool.create(instance_id, identity=identity, **create_kwargs)
        try:
            results = [await tool.execute(episode_id, parameters) for parameters in calls]
            return results, await tool.calc_reward(episode_id)
        finally:
            await tool.release(episode_id)

    return anyio.run(episode)


def outputs(results: Sequence[tuple[str, float, dict]]) -> list[str]:
    """The texts of :func:`run_tool_calls` results."""
    return [result[0] for result in results]
