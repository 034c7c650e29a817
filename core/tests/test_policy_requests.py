"""The requests OpenAIPolicy sends over a growing episode: each message is encoded once and its bytes reused by the
later turns, and every turn still carries the whole history exactly as it stands (edits, removals and copies of the
history included), on the lean path and the SDK's alike, and on the wire exactly the compact JSON of the request."""

from __future__ import annotations

import asyncio
import json
import random

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bootcamp_core import InfrastructureError
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.policies import OpenAIPolicy
from bootcamp_core.episode.request_json import RequestEncoder, encodable, encode_json
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.2)
RECORD = GeneratedSample.from_record({
    "data_source": "bootcamp/example", "prompt": [{"role": "user", "content": "1 + 2"}],
    "reward_model": {"ground_truth": {"expression": "1 + 2"}, "style": "rule"},
    "extra_info": {"index": 0, "split": "test", "generator_name": "level_1",
                   "bootcamp": {"generator": "example/arithmetic", "tools": [], "interaction": None,
                                "reward": "example/arithmetic", "versions": {}}},
})
TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "evaluates an expression",
                                           "parameters": {"type": "object",
                                                          "properties": {"expression": {"type": "string"}}}}}]


def calls_then_answer(request: dict) -> Reply:
    """A tool call with reasoning on every turn until the history holds five tool answers, then the answer."""
    done = sum(message.get("role") == "tool" for message in request["messages"])
    if done < 5:
        return Reply.calls(("calculator", {"expression": f"{done} + 1"}), reasoning_content=f"step {done}")
    return Reply.text("done")


def play(policy: OpenAIPolicy, turn_hook=None, tools=TOOLS) -> list[dict]:
    """One episode of :func:`calls_then_answer` through ``policy``, one history list growing as the engine grows it;
    ``turn_hook(history, turn)`` may edit the history before each turn after the first. The history as it ended."""

    async def main() -> list[dict]:
        history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "count to five"}]
        try:
            for turn in range(10):
                if turn and turn_hook is not None:
                    history = turn_hook(history, turn) or history
                answer = await policy(history, tools, RECORD, random.Random(0))
                history.append(answer.message)
                if not answer.message.get("tool_calls"):
                    return history
                for call in answer.message["tool_calls"]:
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": str(turn + 1)})
            raise AssertionError("the episode did not end")
        finally:
            await policy.aclose()

    return anyio.run(main)


def sent(message: dict) -> dict:
    return {key: value for key, value in message.items() if key != "reasoning_content"}


def as_sent(messages: list[dict]) -> list[dict]:
    return [sent(message) for message in messages]


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_every_turn_of_a_long_episode_carries_the_whole_history_as_it_stands(client):
    with ScriptedChatServer(calls_then_answer) as server:
        history = play(OpenAIPolicy(api_url=server.base_url, model="m", client=client, retry=FAST))
        sent = server.requests
    assert len(sent) == 6 and history[-1]["content"] == "done"
    assert history[2]["reasoning_content"] == "step 0"  # kept in the trajectory, never sent back
    for number, body in enumerate(sent):
        assert body == {"model": "m", "messages": as_sent(history[: 2 + 2 * number]), "tools": TOOLS}


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_an_edited_removed_or_copied_history_is_sent_as_it_stands(client):
    seen: list[list[dict]] = []

    def edit(history: list[dict], turn: int) -> list[dict] | None:
        if turn == 1:
            history[1]["content"] = "count to five, slowly"  # an edit in place of a message already sent
        elif turn == 2:
            history[2] = {**history[2], "content": "replaced"}  # a message replaced by another
        elif turn == 3:
            del history[-2:]  # the last tool turn taken back, then made again
            history.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": "again", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}]})
            history.append({"role": "tool", "tool_call_id": "again", "content": "again"})
        elif turn == 4:
            history = [dict(message) for message in history]  # a copy of every message, in a new list
        seen.append([dict(message) for message in history])
        return history

    with ScriptedChatServer(calls_then_answer) as server:
        play(OpenAIPolicy(api_url=server.base_url, model="m", client=client, retry=FAST), edit)
        sent = server.requests
    assert [body["messages"] for body in sent[1:5]] == [as_sent(history) for history in seen[:4]]
    assert sent[1]["messages"][1]["content"] == "count to five, slowly"
    assert sent[2]["messages"][2]["content"] == "replaced"
    assert sent[3]["messages"][-1] == {"role": "tool", "tool_call_id": "again", "content": "again"}


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_a_lone_surrogate_in_the_history_is_sent_as_a_replacement_character_and_answered(client):
    # json.loads makes a str of a server's "\ud800" that no UTF-8 encoder takes: it goes as U+FFFD, not as an error
    history = [{"role": "user", "content": "broken \ud800 text"}]
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="m", client=client, retry=FAST)

        async def main():
            try:
                return await policy(history, [], RECORD, random.Random(0))
            finally:
                await policy.aclose()

        assert anyio.run(main).message["content"] == "ok"
        assert server.requests[0]["messages"] == [{"role": "user", "content": "broken \ufffd text"}]
    assert history == [{"role": "user", "content": "broken \ud800 text"}]  # the trajectory keeps what came


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_extra_params_may_set_the_model_and_the_token_id_fields(client):
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="m", client=client, retry=FAST, return_token_ids=True,
                              extra_params={"model": "other", "return_prompt_token_ids": False, "seed": 3})
        play(policy)
        body = server.requests[0]
    assert body["model"] == "other" and body["return_token_ids"] is True
    assert body["return_prompt_token_ids"] is False and body["seed"] == 3


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_extra_params_edited_between_turns_reach_the_next_request(client):
    def edit(history: list[dict], turn: int) -> None:
        policy.extra_params["chat_template_kwargs"]["thinking"] = turn  # an edit in place, deep in a value
        policy.model = f"m{turn}"

    with ScriptedChatServer(calls_then_answer) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="m0", client=client, retry=FAST,
                              extra_params={"chat_template_kwargs": {"thinking": 0}})
        play(policy, edit)
        sent = server.requests
    assert [(body["model"], body["chat_template_kwargs"]["thinking"]) for body in sent] == [
        (f"m{turn}", turn) for turn in range(6)]


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_a_history_that_is_no_json_fails_at_once_and_sends_nothing(client):
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="m", client=client, retry=FAST)

        async def main():
            try:
                await policy([{"role": "user", "content": {1, 2}}], [], RECORD, random.Random(0))
            finally:
                await policy.aclose()

        with pytest.raises(InfrastructureError, match="not JSON serializable"):
            anyio.run(main)
        assert server.requests == []
    assert policy.retry_stats.retries == 0


def test_the_body_on_the_wire_is_the_compact_json_of_the_request():
    """A raw HTTP server on loopback keeps the bytes each request arrived with."""
    bodies: list[bytes] = []
    answer = json.dumps({"id": "c", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine ✓"}}]}).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                bodies.append(await reader.readexactly(length))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(answer), answer))
                await writer.drain()
        except asyncio.IncompleteReadError:
            writer.close()

    async def main() -> list[list[dict]]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        policy = OpenAIPolicy(api_url=f"http://127.0.0.1:{port}/v1", model="m", retry=FAST,
                              extra_params={"temperature": 0.5})
        history = [{"role": "user", "content": "héllo \"quoted\"\n", "reasoning_content": "held back"}]
        sent = []
        try:
            for turn in range(3):
                sent.append(as_sent(history))
                history.append((await policy(history, TOOLS, RECORD, random.Random(0))).message)
                history.append({"role": "user", "content": f"again {turn} ✓"})
        finally:
            await policy.aclose()
            server.close()
            await server.wait_closed()
        return sent

    sent = anyio.run(main, backend="asyncio")
    assert bodies == [json.dumps({"model": "m", "messages": messages, "tools": TOOLS, "temperature": 0.5},
                                 ensure_ascii=False, separators=(",", ":")).encode("utf-8") for messages in sent]


TEXT = st.text(max_size=12)  # lone surrogates included
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=8)
MESSAGES = st.dictionaries(st.sampled_from(["role", "content", "reasoning_content", "tool_calls", "name"]), VALUES,
                           min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(first=st.lists(MESSAGES, min_size=1, max_size=4),
       steps=st.lists(st.tuples(st.sampled_from(["append", "edit", "replace", "truncate", "copy", "rename", "shift"]),
                                MESSAGES, st.integers(0, 10)), max_size=8))
def test_each_body_is_the_json_of_the_whole_request_however_the_history_changes(first, steps):
    encoder = RequestEncoder(sent, capacity=4)
    history = list(first)
    for action, message, position in [("append", first[0], 0), *steps]:
        at = position % len(history)
        if action == "append":
            history.append(dict(message))
        elif action == "edit":
            history[at].update(message)
        elif action == "rename" and history[at]:  # a key renamed in place: the same value object, the same size
            key = next(reversed(history[at]))
            new_key = next(iter(message))
            if new_key not in history[at]:
                history[at][new_key] = history[at].pop(key)
        elif action == "shift" and at + 1 < len(history) and len(history[at]) > 1:
            # a message's last key moved to the start of the next: the keys and values one after the other unchanged
            key, value = history[at].popitem()
            if key not in history[at + 1]:
                rest = dict(history[at + 1])
                history[at + 1].clear()
                history[at + 1].update({key: value, **rest})
        elif action == "replace":
            history[at] = dict(message)
        elif action == "truncate" and len(history) > 1:
            del history[max(1, at):]
        elif action == "copy":
            history = [dict(item) for item in history]
        body = encoder.encode("m", history, TOOLS, {"temperature": 0.5})
        expected = {"model": "m", "messages": [sent(item) for item in history], "tools": TOOLS, "temperature": 0.5}
        assert json.loads(body) == json.loads(json.dumps(encodable(expected)))
        assert body == encode_json(expected)


def test_the_tools_encoded_for_one_conversation_are_reused_by_others_only_while_the_same():
    encoder = RequestEncoder(sent, capacity=8)
    tools = [dict(TOOLS[0])]
    for number in range(3):  # the engine hands every episode of a kind of record the same list
        history = [{"role": "user", "content": f"task {number}"}]
        assert json.loads(encoder.encode("m", history, tools, {}))["tools"] == tools
    renamed = {"type": "function", "function": {**TOOLS[0]["function"], "name": "adder"}}
    tools[0] = renamed  # the same list, another schema in it
    assert json.loads(encoder.encode("m", [{"role": "user", "content": "next"}], tools, {}))["tools"] == [renamed]
    tools.append(dict(TOOLS[0]))  # one more
    assert json.loads(encoder.encode("m", [{"role": "user", "content": "last"}], tools, {}))["tools"] == tools
    other = [dict(TOOLS[0])]  # an equal list of other objects
    assert json.loads(encoder.encode("m", [{"role": "user", "content": "other"}], other, {}))["tools"] == other


def test_the_conversations_remembered_are_bounded_and_a_forgotten_one_is_encoded_whole():
    encoder = RequestEncoder(sent, capacity=8)
    histories = [[{"role": "user", "content": f"task {number}"}] for number in range(100)]
    for history in histories:
        encoder.encode("m", history, [], {})
    assert len(encoder) == 8
    histories[0].append({"role": "assistant", "content": "late"})
    assert json.loads(encoder.encode("m", histories[0], [], {})) == {"model": "m", "messages": histories[0]}
