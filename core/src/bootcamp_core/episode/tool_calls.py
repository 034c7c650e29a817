"""Tool calls of one assistant turn: each bounded by a timeout, the model's mistakes kept apart from failures.

:func:`execute_tool` (public as ``bootcamp_core.execute_tool``) is one call as every runner makes it (the rollout
engine here, the verl adapter): a :class:`ModelError` for what the model got wrong (arguments that are not an
object, a tool that raised or ran past its time), an :class:`InfrastructureError` passed on as it is::

    try:
        text, step_reward, metrics = await execute_tool(tool, instance_id, parameters, timeout_s=60)
    except ModelError as error:
        text, step_reward, metrics = f"Error: {error}", 0.0, {}
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import anyio

from bootcamp_core.data.records import ToolCall
from bootcamp_core.episode.messages import jsonable
from bootcamp_core.plugin.components import Tool
from bootcamp_core.plugin.errors import InfrastructureError, ModelError

__all__ = ["execute_tool", "parse_arguments", "run_tool_call", "run_tool_calls"]


def parse_arguments(name: str, arguments: str) -> dict:
    """The JSON object of a tool call's arguments text (empty text is ``{}``); :class:`ModelError` otherwise."""
    try:
        parameters = json.loads(arguments) if arguments.strip() else {}
    except ValueError as error:
        raise ModelError(f"arguments of {name} are not valid JSON ({error})") from None
    if not isinstance(parameters, dict):
        raise ModelError(f"arguments of {name} must be a JSON object, got {type(parameters).__name__}")
    return parameters


async def execute_tool(tool: Tool, instance_id: str, parameters: Any, *, timeout_s: float,
                       name: str | None = None) -> tuple[str, float, dict]:
    """``tool.execute`` within ``timeout_s``: (text shown to the model, step reward, metrics), normalised.

    Raises :class:`ModelError` when ``parameters`` is not a dict, the tool raised, or it timed out (``name``, the
    tool's name by default, says which); an :class:`InfrastructureError` of the tool passes through.
    """
    name = name or type(tool).name
    if not isinstance(parameters, dict):
        raise ModelError(f"arguments of {name} must be a JSON object, got {type(parameters).__name__}")
    try:
        with anyio.move_on_after(timeout_s) as scope:
            output, step_reward, metrics = await tool.execute(instance_id, parameters)
    except (ModelError, InfrastructureError):
        raise
    except Exception as error:  # the tool rejected what the model asked: the model sees why and goes on
        raise ModelError(f"{name} failed: {type(error).__name__}: {error}") from error
    if scope.cancelled_caught:
        raise ModelError(f"{name} timed out after {timeout_s:g} s")
    output = output if isinstance(output, str) else json.dumps(jsonable(output))
    return output, float(step_reward), metrics if isinstance(metrics, dict) else {}


async def run_tool_call(tools: Mapping[str, Tool], instance_id: str, call: dict, *, timeout_s: float) -> ToolCall:
    """One call of a normalised assistant message; the model's mistakes (bad JSON, an unknown tool, a raising or slow
    tool) become ``Error: ...`` text it reads, an :class:`InfrastructureError` is raised."""
    function = call["function"]
    name, arguments = function.get("name"), function["arguments"]
    started = time.perf_counter()
    error_text: str | None = None
    try:
        tool = tools.get(name)  # type: ignore[arg-type]
        if tool is None:
            raise ModelError(f"unknown tool {name!r}; available: {', '.join(sorted(tools)) or 'none'}")
        parameters = parse_arguments(name, arguments)  # type: ignore[arg-type]
        output, step_reward, metrics = await execute_tool(tool, instance_id, parameters, timeout_s=timeout_s,
                                                          name=name)
    except ModelError as error:
        error_text = str(error)
        output, step_reward, metrics = f"Error: {error}", 0.0, {}
    return ToolCall(id=call["id"], name=str(name), arguments=arguments, output=output, step_reward=step_reward,
                    metrics=metrics, error=error_text, duration_s=time.perf_counter() - started)


async def run_tool_calls(tools: Mapping[str, Tool], instance_id: str, calls: list[dict], *,
                         timeout_s: float) -> list[ToolCall]:
    """The calls of one assistant turn, in call order; concurrently only when every tool called is ``parallel_safe``.

    The first :class:`InfrastructureError` (or bug) stops the turn's other calls and is raised as itself.
    """
    # Unknown tools answer at once with an error, so they never force sequential execution.
    concurrent = len(calls) > 1 and all(
        getattr(tools.get(call["function"].get("name")), "parallel_safe", True) for call in calls
    )
    if not concurrent:
        return [await run_tool_call(tools, instance_id, call, timeout_s=timeout_s) for call in calls]
    results: list[ToolCall | None] = [None] * len(calls)
    failure: list[Exception] = []

    async def run(index: int, call: dict) -> None:
        try:
            results[index] = await run_tool_call(tools, instance_id, call, timeout_s=timeout_s)
        except Exception as error:
            # Kept out of the task group, which would wrap it in an ExceptionGroup whose text hides the cause;
            # raised below as itself, so it is classified exactly as on the sequential path.
            failure.append(error)
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    if failure:
        raise failure[0]
    return [result for result in results if result is not None]
