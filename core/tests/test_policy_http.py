"""OpenAIPolicy's request path over real loopback HTTP: the lean client (plain http) and the SDK's (``client="sdk"``)
give the same turns, the same errors and the same retries against the scripted server."""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import threading

import anyio
import pytest

from bootcamp_core import InfrastructureError, ModelError
from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.http_client import usable_for
from bootcamp_core.episode.policies import OpenAIPolicy
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, sequence

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.2)
SECRET = "sk-http-path-secret-0123456789"
RECORD: GeneratedSample | None = None  # any task: the policy passes it on to no one


@pytest.fixture(autouse=True, scope="module")
def _record(example_registry) -> None:
    global RECORD
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:1"})
    RECORD = GeneratedSample.from_record(next(iter(iter_records(config, "test", example_registry))))


TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "evaluates an expression",
                                           "parameters": {"type": "object",
                                                          "properties": {"expression": {"type": "string"}}}}}]

pytestmark = pytest.mark.parametrize("client", ["auto", "sdk"])


def policy_for(url: str, client: str, **kwargs) -> OpenAIPolicy:
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("api_key", SECRET)
    return OpenAIPolicy(api_url=url, model="stub-model", client=client, **kwargs)


def turns(policy: OpenAIPolicy, conversations: list[list[dict]], tools=()) -> list:
    """One policy call per conversation, in order, on one event loop; then the policy is closed."""

    async def main():
        try:
            return [await policy(messages, list(tools), RECORD, random.Random(0)) for messages in conversations]
        finally:
            await policy.aclose()

    return anyio.run(main)


def test_http_and_https_take_the_lean_path_and_the_rest_the_sdk(client):
    async def inside() -> tuple:
        return (usable_for("http://127.0.0.1:8000/v1/chat/completions"), usable_for("https://api.example.com/v1"),
                usable_for("ftp://127.0.0.1/v1"))

    assert anyio.run(inside) == (True, True, False)
    assert not usable_for("http://127.0.0.1:8000/v1/chat/completions")  # no event loop running


def test_lean_path_is_off_behind_a_proxy(client, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def inside() -> bool:
        return usable_for("http://10.1.2.3:8000/v1/chat/completions")

    assert anyio.run(inside) is False
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert anyio.run(inside) is True

    monkeypatch.delenv("NO_PROXY")
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # the SDK's client takes it for https only

    async def both() -> tuple:
        return usable_for("https://10.1.2.3/v1/chat/completions"), usable_for("http://10.1.2.3/v1/chat/completions")

    assert anyio.run(both) == (False, True)


def test_https_is_verified_with_the_sdks_trust_and_plays_like_http(client, tls, monkeypatch):
    server_pem, ca_pem = tls
    monkeypatch.setenv("SSL_CERT_FILE", ca_pem)  # as a user trusts a private CA, for the SDK and for us
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    script = sequence(Reply.calls(("calculator", {"expression": "1 + 2"}), usage={"prompt_tokens": 5}),
                      Reply.text("3"), Reply.text("again"))
    first = [{"role": "user", "content": "hi"}]
    with ScriptedChatServer(script, tls_certfile=server_pem) as server:
        assert server.base_url.startswith("https://127.0.0.1:")
        policy = policy_for(server.base_url, client)
        one = turns(policy, [first])[0]
        second = [*first, one.message, {"role": "tool", "tool_call_id": one.message["tool_calls"][0]["id"],
                                        "content": "3"}]
        policy = policy_for(server.base_url, client)
        two, three = turns(policy, [second, second], TOOLS)  # the second turn on the kept-alive TLS connection
        sent, headers = server.requests, server.request_headers
    assert one.message["tool_calls"][0]["function"]["arguments"] == '{"expression": "1 + 2"}'
    assert two.message["content"] == "3" and three.message["content"] == "again"
    assert sent[1]["messages"] == second and sent[1]["tools"] == TOOLS
    # the SDK's client announces itself in x-stainless-* headers; the lean client sends the prepared body alone
    assert all(("x-stainless-lang" in header) == (client == "sdk") for header in headers)
    assert all(header["authorization"] == f"Bearer {SECRET}" for header in headers)


def test_an_untrusted_certificate_fails_at_once_and_says_how_to_trust_it_on_either_path(client, tls, monkeypatch):
    server_pem, _ = tls
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with ScriptedChatServer(tls_certfile=server_pem) as server:
        policy = policy_for(server.base_url, client, retry=RetryPolicy(attempts=5, base_s=0.01))
        with pytest.raises(InfrastructureError, match="TLS certificate failed verification .*SSL_CERT_FILE") as error:
            turns(policy, [[{"role": "user", "content": "hi"}]])
        assert server.requests == []  # nothing was sent to a server the client could not verify
    # the same certificate fails the same way: no retry (a refused or reset connection is retried, see above)
    assert policy.retry_stats.retries == 0
    assert error.value.kind == "endpoint_unreachable"
    assert SECRET not in str(error.value)


def test_tool_calls_reasoning_and_usage_and_the_history_as_sent(client):
    script = sequence(
        Reply.calls(("calculator", {"expression": "1 + 2"}), ("calculator", "not json {"), content="let me see",
                    reasoning_content="two calls", usage={"prompt_tokens": 11, "completion_tokens": 7}),
        Reply.text("3 ünïcödé", usage={"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 99}),
    )
    first = [{"role": "user", "content": "hi"}]
    with ScriptedChatServer(script) as server:
        policy = policy_for(server.base_url, client)
        one = turns(policy, [first])[0]
        second = [*first, {**one.message}, {"role": "tool", "tool_call_id": "call_1_0", "content": "3"}]
        two = turns(policy_for(server.base_url, client), [second], TOOLS)[0]
        sent = server.requests
    assert one.message == {
        "role": "assistant", "content": "let me see", "reasoning_content": "two calls",
        "tool_calls": [
            {"id": "call_1_0", "type": "function",
             "function": {"name": "calculator", "arguments": '{"expression": "1 + 2"}'}},
            {"id": "call_1_1", "type": "function", "function": {"name": "calculator", "arguments": "not json {"}},
        ],
    }
    assert one.usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    assert two.message == {"role": "assistant", "content": "3 ünïcödé"} and two.usage["total_tokens"] == 99
    assert sent[0] == {"model": "stub-model", "messages": first}  # no tools key when there are none
    # reasoning_content stays in the trajectory but is never sent back
    assert sent[1]["messages"][1] == {key: value for key, value in one.message.items() if key != "reasoning_content"}
    assert sent[1]["tools"] == TOOLS and sent[1]["messages"][2]["content"] == "3"


def test_an_answer_without_reasoning_has_no_reasoning_key_and_zero_usage(client):
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        plain = turns(policy_for(server.base_url, client), [[{"role": "user", "content": "hi"}]])[0]
    assert "reasoning_content" not in plain.message and plain.usage == {
        "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_extra_headers_params_and_the_key_reach_the_server(client):
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        policy = policy_for(server.base_url, client, extra_headers={"X-Team": "rl"},
                            extra_params={"temperature": 0.25, "chat_template_kwargs": {"thinking": False}})
        turns(policy, [[{"role": "user", "content": "hi"}]] * 2)
        bodies, headers = server.requests, server.request_headers
    assert len(bodies) == 2
    for body, header in zip(bodies, headers):
        assert body["temperature"] == 0.25 and body["chat_template_kwargs"] == {"thinking": False}
        assert header["x-team"] == "rl" and header["authorization"] == f"Bearer {SECRET}"
        assert header["content-type"] == "application/json" and "x-bootcamp-preflight" not in header


def test_the_preflight_sends_its_header_and_the_extra_params(client):
    with ScriptedChatServer(models=["stub-model"]) as server:
        policy = policy_for(server.base_url, client, extra_params={"top_k": 5})

        async def main():
            try:
                await policy.check()
            finally:
                await policy.aclose()

        anyio.run(main)
        assert server.requests == [] and len(server.preflight_requests) == 1
    assert server.preflight_requests[0]["max_tokens"] == 1 and server.preflight_requests[0]["top_k"] == 5


def test_401_is_an_infrastructure_error_at_once_with_the_key_masked(client):
    with ScriptedChatServer(sequence(Reply.error(401, message=f"key {SECRET} refused"), then=Reply.text("ok"))
                            ) as server:
        with pytest.raises(InfrastructureError) as error:
            turns(policy_for(server.base_url, client), [[{"role": "user", "content": "hi"}]])
        assert len(server.requests) == 1
        url = server.base_url
    assert type(error.value) is InfrastructureError and error.value.kind == "auth"
    assert str(error.value) == f"HTTP 401 from {url}: key *** refused"


def test_422_ends_the_episode_as_a_model_error(client):
    with ScriptedChatServer(sequence(Reply.error(422, message="context too long"), then=Reply.text("ok"))) as server:
        with pytest.raises(ModelError, match="context too long"):
            turns(policy_for(server.base_url, client), [[{"role": "user", "content": "hi"}]])
        assert len(server.requests) == 1


def test_429_honours_retry_after_and_500_is_retried(client):
    script = sequence(Reply.error(429, retry_after="0.15"), Reply.error(500), Reply.text("ok"))
    with ScriptedChatServer(script) as server:
        policy = policy_for(server.base_url, client, retry=RetryPolicy(attempts=4, base_s=0.001, max_s=1.0))
        turn = turns(policy, [[{"role": "user", "content": "hi"}]])[0]
        assert len(server.requests) == 3
    assert turn.message["content"] == "ok"
    stats = policy.retry_stats.to_dict()
    assert stats["retries_by_kind"] == {"rate_limited": 1, "server_error": 1}
    assert stats["waiting_s"] >= 0.15 - 1e-3  # the server's Retry-After over a millisecond of backoff


@pytest.mark.parametrize("kind", ["cut_json", "empty_choices", "null_message", "reset"])
def test_malformed_answers_and_resets_are_retried(client, kind):
    script = sequence(Reply.fault(kind), Reply.fault(kind), Reply.text("ok"))
    with ScriptedChatServer(script) as server:
        policy = policy_for(server.base_url, client)
        assert turns(policy, [[{"role": "user", "content": "hi"}]])[0].message["content"] == "ok"
        assert len(server.requests) == 3
    expected = "endpoint_unreachable" if kind == "reset" else "malformed_response"
    assert policy.retry_stats.kinds == {expected: 2}


def test_malformed_answers_until_the_budget_ends(client):
    with ScriptedChatServer(lambda request: Reply.fault("empty_choices")) as server, \
            pytest.raises(InfrastructureError, match="after 3 attempts: no choices") as error:
        turns(policy_for(server.base_url, client), [[{"role": "user", "content": "hi"}]])
    assert error.value.kind == "malformed_response"


def test_a_hang_past_the_request_timeout_is_a_timeout(client):
    with ScriptedChatServer(lambda request: Reply.text("late", delay_s=1.0)) as server:
        policy = policy_for(server.base_url, client, request_timeout_s=0.1, retry=RetryPolicy(attempts=2, base_s=0.01))
        with pytest.raises(InfrastructureError, match="after 2 attempts") as error:
            turns(policy, [[{"role": "user", "content": "hi"}]])
    assert error.value.kind == "timeout"


def test_a_refused_connection_is_endpoint_unreachable(client):
    with ScriptedChatServer() as server:
        url = server.base_url
    with pytest.raises(InfrastructureError, match="after 3 attempts") as error:
        turns(policy_for(url, client), [[{"role": "user", "content": "hi"}]])
    assert error.value.kind == "endpoint_unreachable"


def test_many_concurrent_turns_reuse_connections_and_all_arrive(client):
    def echo(request: dict) -> Reply:
        return Reply.text(request["messages"][0]["content"])

    with ScriptedChatServer(echo) as server:
        policy = policy_for(server.base_url, client)

        async def main() -> list:
            answers: dict[int, str] = {}

            async def one(index: int) -> None:
                for round_ in range(3):
                    turn = await policy([{"role": "user", "content": f"{index}/{round_}"}], [], RECORD,
                                        random.Random(0))
                    answers[index * 10 + round_] = turn.message["content"]

            try:
                async with anyio.create_task_group() as group:
                    for index in range(40):
                        group.start_soon(one, index)
            finally:
                await policy.aclose()
            return answers

        answers = anyio.run(main)
    assert answers == {index * 10 + round_: f"{index}/{round_}" for index in range(40) for round_ in range(3)}


# ------------------------------------------------------------------ framings the scripted server never sends
class RawServer:
    """A loopback HTTP/1.1 server answering every request with fixed bytes (chunked, gzip, Connection: close)."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length:")), 0)
                    self.requests.append(head + await reader.readexactly(length))
                    writer.write(self.answer)
                    await writer.drain()
                    if b"connection: close" in self.answer.lower():
                        break
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            writer.close()

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            async with server:
                await server.serve_forever()

        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(main())
        except RuntimeError:  # stopped
            pass

    def __enter__(self) -> RawServer:  # noqa: PYI034
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def completion_json(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}).encode()


@pytest.mark.parametrize("framing", ["chunked", "gzip", "close"])
def test_chunked_gzip_and_close_delimited_answers(client, framing):
    body = completion_json(f"framed {framing}")
    if framing == "chunked":
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
        answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + chunks + b"0\r\n\r\n")
    elif framing == "gzip":
        packed = gzip.compress(body)
        answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(packed) + packed)
    else:
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + body
    with RawServer(answer) as server:
        policy = policy_for(f"http://127.0.0.1:{server.port}/v1", client)
        got = turns(policy, [[{"role": "user", "content": "hi"}]] * 2)
        requests = list(server.requests)
    assert [turn.message["content"] for turn in got] == [f"framed {framing}"] * 2
    assert got[0].usage == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert len(requests) == 2 and requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")

