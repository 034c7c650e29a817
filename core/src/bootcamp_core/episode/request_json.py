"""Chat-completion request bodies built incrementally: each message of a conversation is encoded to JSON once and its
bytes reused by every later turn, so the CPU a request costs does not grow with the length of the episode.

A turn's body is the concatenation of fixed parts (the model, the fields after the history) and the cached bytes of
each message; it is byte for byte what ``json.dumps`` of the whole request would give (compact separators, UTF-8).
A message already sent is checked before its bytes are reused: the same object, with the same keys in order and
the very same value objects (an identity check each). A message removed, replaced or given a new value is encoded
again; an edit deep inside a value (a tool call's arguments changed in its list) is not seen, and the rollout engine
never makes one: it never edits a message once it is in the history.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from itertools import chain
from operator import is_
from typing import Any

__all__ = ["RequestEncoder", "encodable", "encode_json"]

#: The request fields whose places in the body the encoder owns; extra parameters that set one of them make the
#: policy encode whole requests instead.
OWN_FIELDS = frozenset({"model", "messages", "tools"})


#: One encoder for every request: ``json.dumps`` with arguments builds a new one on each call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON; text that is no valid Unicode (a lone surrogate, which ``json.loads`` makes
    of a server's ``"\\ud800"``) goes as U+FFFD instead of failing the request (:func:`encodable`)."""
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return _ENCODER.encode(encodable(value)).encode("utf-8")


def encodable(value: Any) -> Any:
    """``value`` with every lone surrogate in its text (keys included) replaced by U+FFFD, so it encodes as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, dict):
        return {encodable(key): encodable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(item) for item in value]
    return value


class _Conversation:
    """What was encoded of one conversation: its messages, their keys and values when encoded, their bytes."""

    __slots__ = ("keys", "messages", "parts", "sizes", "tools", "tools_count", "tools_part", "values")

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.parts: list[bytes] = []
        # each message's number of keys, and the keys and values of all of them one after the other: a history that
        # only grew is checked by whole-list comparisons, with nothing built per message
        self.sizes: list[int] = []
        self.keys: list = []
        self.values: list = []
        self.tools: Any = None
        self.tools_count = 0
        self.tools_part = b""


class RequestEncoder:
    """Request bodies of many conversations at once, each message encoded once.

    ``outgoing`` turns a message of the history into the message as sent (fields held back dropped); ``capacity``
    bounds the conversations remembered (the least recently used are forgotten, and encoded whole again should
    they come back), so memory stays flat however many episodes a run plays.
    """

    def __init__(self, outgoing: Callable[[dict], dict], *, capacity: int) -> None:
        self._outgoing = outgoing
        self.capacity = max(1, capacity)
        # keyed by the id of a conversation's first message: the engine starts each episode's history with its own
        # copies of the prompt messages, and an entry holds its messages, so an id is never reused while remembered
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()
        self._fields: tuple[Any, dict] | None = None
        self._head = self._tail = b""
        # the last tools list encoded and its bytes, for every conversation: the rollout engine passes each episode of
        # a kind of record the same list (encoding the calculator's schema anew cost about a twentieth of a
        # request's CPU in bench/bench_rollout.py (e1))
        self._tools: tuple[list, list, bytes] | None = None

    def __len__(self) -> int:
        """The conversations remembered now."""
        return len(self._conversations)

    def _frame(self, model: Any, fields: Mapping[str, Any]) -> None:
        """The fixed parts around the history, rebuilt only when the model or the other fields change."""
        if self._fields is not None and self._fields[0] == model and self._fields[1] == fields:
            return
        self._fields = (model, copy.deepcopy(dict(fields)))  # deep: a value edited in place must not go unseen
        self._head = b'{"model":' + encode_json(model) + b',"messages":['
        rest = encode_json(dict(fields))[1:-1]
        self._tail = (b"," + rest if rest else b"") + b"}"

    def encode(self, model: Any, messages: list[dict], tools: list[dict] | None, fields: Mapping[str, Any]) -> bytes:
        """The body of ``{"model": model, "messages": [outgoing(m) for m in messages], "tools": tools, **fields}``
        (no ``tools`` key when there are none); ``fields`` must not set model, messages or tools."""
        self._frame(model, fields)
        conversation = self._conversation(messages)
        known, sizes, keys, values = conversation.messages, conversation.sizes, conversation.keys, conversation.values
        parts = conversation.parts
        same = len(known)
        # the common case, a history that only grew since the last turn, checked in whole-list operations (each
        # message would cost a microsecond in a loop of Python, its memory long out of the cache): the same message
        # objects, each with as many keys as before (so the keys below fall in the same messages), the same keys in
        # order, and the very same value objects
        if same and not (len(messages) >= same and all(map(is_, messages, known))
                         and list(map(len, prefix := messages[:same])) == sizes
                         and list(chain.from_iterable(prefix)) == keys
                         and all(map(is_, chain.from_iterable(map(dict.values, prefix)), values))):
            same = start = 0  # the messages kept, and where the keys of the next one start
            while same < len(known) and same < len(messages) and messages[same] is known[same]:
                end = start + sizes[same]
                if list(messages[same]) != keys[start:end] or not all(map(is_, messages[same].values(),
                                                                           values[start:end])):
                    break
                same, start = same + 1, end
            del known[same:], sizes[same:], parts[same:], keys[start:], values[start:]
        for message in messages[same:]:
            known.append(message)
            sizes.append(len(message))
            keys.extend(message)
            values.extend(message.values())
            parts.append(encode_json(self._outgoing(message)))
        if not tools:
            tools_part = b""
        elif tools is conversation.tools and len(tools) == conversation.tools_count:
            tools_part = conversation.tools_part
        else:
            tools_part = self._tools_part(tools)
            conversation.tools, conversation.tools_count, conversation.tools_part = tools, len(tools), tools_part
        return b"".join((self._head, b",".join(parts), b"]", tools_part, self._tail))

    def _tools_part(self, tools: list[dict]) -> bytes:
        """``,"tools":`` and the JSON of ``tools``; reused when the last list encoded comes again, the very same list
        holding the very same schema objects (a schema edited in place is not seen, as a message's value is not)."""
        last = self._tools
        if last is not None and last[0] is tools and len(tools) == len(last[1]) and all(map(is_, tools, last[1])):
            return last[2]
        part = b',"tools":' + encode_json(tools)
        self._tools = (tools, list(tools), part)
        return part

    def _conversation(self, messages: list[dict]) -> _Conversation:
        if not messages:
            return _Conversation()  # nothing to reuse, nothing to remember
        key = id(messages[0])
        conversation = self._conversations.get(key)
        if conversation is not None and conversation.messages and conversation.messages[0] is messages[0]:
            self._conversations.move_to_end(key)
            return conversation
        conversation = self._conversations[key] = _Conversation()
        self._conversations.move_to_end(key)
        while len(self._conversations) > self.capacity:
            self._conversations.popitem(last=False)
        return conversation
