"""Messages of a trajectory: their text, JSON-safe values, and the policy's assistant message as the trajectory keeps it."""

from __future__ import annotations

import json
from typing import Any

from bootcamp_core.blocks import message_text  # defined with the building blocks: bootcamps use it too
from bootcamp_core.plugin.errors import ModelError

__all__ = ["jsonable", "message_text", "normalize_assistant_message"]


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its repr (an extracted answer may be any object)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def normalize_assistant_message(message: Any, turn: int) -> dict:
    """The policy's message as a trajectory entry: role set, content present, every tool call with an id and JSON text
    arguments (reference agents may give a dict); other keys such as ``reasoning_content`` kept as they are."""
    if not isinstance(message, dict):
        raise ModelError(f"the policy returned {type(message).__name__}, not an assistant message")
    message = dict(message)
    message["role"] = "assistant"
    message.setdefault("content", None)
    calls = message.get("tool_calls")
    if calls:
        normalised = []
        for index, call in enumerate(calls):
            call = dict(call) if isinstance(call, dict) else {}
            function = dict(call.get("function") or {})
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                function["arguments"] = json.dumps(arguments if arguments is not None else {})
            call["function"] = function
            call.setdefault("type", "function")
            if not call.get("id"):
                call["id"] = f"call_{turn}_{index}"
            normalised.append(call)
        message["tool_calls"] = normalised
    elif "tool_calls" in message:
        del message["tool_calls"]  # an empty list confuses chat templates
    return message
