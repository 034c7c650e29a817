"""The scripted OpenAI-compatible server, through the real `openai` client."""

from __future__ import annotations

import json

import anyio
import openai
import pytest

from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, per_conversation, sequence

ASK = [{"role": "user", "content": "hi"}]


def client(server: ScriptedChatServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)


def test_text_tool_calls_reasoning_and_usage_arrive_as_the_sdk_parses_them():
    script = sequence(
        Reply.text("hello", usage={"prompt_tokens": 7, "completion_tokens": 3}, reasoning_content="thinking"),
        Reply.calls(("add", {"a": 1}), ("add", {"a": 2})),
        Reply.malformed_arguments("add"),
        Reply.unknown_tool("nope"),
    )
    with ScriptedChatServer(script) as server:
        sdk = client(server)
        first = sdk.chat.completions.create(model="m", messages=ASK)
        assert first.choices[0].message.content == "hello"
        assert first.choices[0].message.model_extra["reasoning_content"] == "thinking"
        assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (7, 3, 10)
        calls = sdk.chat.completions.create(model="m", messages=ASK).choices[0].message.tool_calls
        assert [json.loads(call.function.arguments) for call in calls] == [{"a": 1}, {"a": 2}]
        assert len({call.id for call in calls}) == 2
        bad = sdk.chat.completions.create(model="m", messages=ASK).choices[0]
        assert bad.finish_reason == "tool_calls"
        with pytest.raises(ValueError):
            json.loads(bad.message.tool_calls[0].function.arguments)
        unknown = sdk.chat.completions.create(model="m", messages=ASK).choices[0].message.tool_calls[0]
        assert unknown.function.name == "nope"
        # the script is exhausted: a clear 500, never a hang
        with pytest.raises(openai.InternalServerError, match="no more replies"):
            sdk.chat.completions.create(model="m", messages=ASK)
        assert [request["model"] for request in server.requests] == ["m"] * 5
        assert server.request_headers[0]["authorization"] == "Bearer k"


def test_errors_carry_status_and_retry_after():
    with ScriptedChatServer(sequence(Reply.error(429, retry_after=3), Reply.error(503), Reply.error(400))) as server:
        sdk = client(server)
        with pytest.raises(openai.RateLimitError) as limited:
            sdk.chat.completions.create(model="m", messages=ASK)
        assert limited.value.response.headers["retry-after"] == "3"
        with pytest.raises(openai.InternalServerError):
            sdk.chat.completions.create(model="m", messages=ASK)
        with pytest.raises(openai.BadRequestError):
            sdk.chat.completions.create(model="m", messages=ASK)


def test_a_delay_outlasts_a_short_client_timeout():
    with ScriptedChatServer(lambda request: Reply.text("late", delay_s=1.0)) as server:
        with pytest.raises(openai.APITimeoutError):
            openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=0.1).chat.completions.create(
                model="m", messages=ASK
            )


def test_a_server_told_to_keep_no_request_answers_as_usual_and_holds_none():
    with ScriptedChatServer(lambda request: Reply.text(f"seen {len(request['messages'])}"), keep_requests=False,
                            keep_responses=True) as server:
        sdk = client(server)
        answers = [sdk.chat.completions.create(model="m", messages=ASK * count).choices[0].message.content
                   for count in (1, 2, 3)]
        assert answers == ["seen 1", "seen 2", "seen 3"]
        assert server.requests == [] and server.request_headers == []
        assert [answer["choices"][0]["message"]["content"] for answer in server.responses] == answers


def test_models_are_listed():
    with ScriptedChatServer(models=["a", "b"]) as server:
        assert [model.id for model in client(server).models.list()] == ["a", "b"]


def test_a_thousand_concurrent_conversations_each_get_their_own_script():
    def script(request: dict, turn: int) -> Reply:
        return Reply.text(f"{request['messages'][0]['content']}:{turn}")

    async def main(server: ScriptedChatServer) -> list[str]:
        # generous connect timeout: 1,000 connections at once on a busy 2-core machine take a while to accept
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=300.0)
        answers = [""] * 1000

        async def ask(index: int) -> None:
            messages = [{"role": "user", "content": str(index)}, {"role": "assistant", "content": "x"}]
            completion = await sdk.chat.completions.create(model="m", messages=messages)
            answers[index] = completion.choices[0].message.content

        async with anyio.create_task_group() as group:
            for index in range(1000):
                group.start_soon(ask, index)
        await sdk.close()
        return answers

    with ScriptedChatServer(per_conversation(script)) as server:
        answers = anyio.run(main, server)
    assert answers == [f"{index}:1" for index in range(1000)]
    assert len(server.requests) == 1000
