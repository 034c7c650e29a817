"""Policies through the real `openai` client against the scripted server, with bootcamp-example's real components."""

from __future__ import annotations

import json
import logging
import random

import anyio
import pytest

from bootcamp_core import ConfigError, InfrastructureError, ModelError
from bootcamp_core.data.generate import config_for_bootcamp, iter_records
from bootcamp_core.data.records import GeneratedSample
from bootcamp_core.episode.engine import RolloutLimits, run_episode
from bootcamp_core.episode.policies import (
    OpenAIPolicy,
    ReferencePolicy,
    make_policy,
    normalize_api_url,
    parse_extra_headers,
    parse_extra_params,
)
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing.chat_server import Reply, ScriptedChatServer, sequence

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.05)
SECRET = "sk-test-do-not-leak-0123456789"


@pytest.fixture(scope="module")
def records(example_registry: Registry) -> list[dict]:
    config = config_for_bootcamp("example", example_registry, overrides={"split_samples": "test:6"})
    return list(iter_records(config, "test", example_registry))


def answer(value) -> str:
    return f'```json\n{{"result": {value}}}\n```'


def policy_for(server: ScriptedChatServer, **kwargs) -> OpenAIPolicy:
    kwargs.setdefault("retry", FAST)
    return OpenAIPolicy(api_url=server.base_url, model="stub-model", api_key=SECRET, **kwargs)


def episode(record: dict, policy, registry: Registry, **kwargs):
    async def main():
        try:
            return await run_episode(record, policy, registry=registry, **kwargs)
        finally:
            await policy.aclose()

    return anyio.run(main)


def call_once(policy: OpenAIPolicy, record: dict):
    async def main():
        try:
            return await policy([{"role": "user", "content": "hi"}], [], GeneratedSample.from_record(record),
                                random.Random(0))
        finally:
            await policy.aclose()

    return anyio.run(main)


# ------------------------------------------------------------------------------------------- whole episodes
def test_several_calls_in_one_turn_then_a_wrong_and_a_right_answer(records, example_registry):
    record = records[0]
    identity = record["reward_model"]["ground_truth"]
    operands = identity["expression"].split()
    script = sequence(
        Reply.calls(("calculator", {"expression": identity["expression"]}),
                    ("calculator", {"operation": "add", "operand1": 1, "operand2": 2}),
                    reasoning_content="two calls at once", usage={"prompt_tokens": 100, "completion_tokens": 10}),
        Reply.text(answer(identity["expected_result"] * 2 + 1), usage={"prompt_tokens": 200, "completion_tokens": 5}),
        Reply.text(answer(identity["expected_result"]), usage={"prompt_tokens": 300, "completion_tokens": 5}),
    )
    with ScriptedChatServer(script) as server:
        result = episode(record, policy_for(server), example_registry)
        requests = server.requests
    assert operands  # the expression is real
    assert (result.score, result.finish_reason, result.success, result.error_type) == (1.0, "terminated", True, None)
    roles = [message["role"] for message in result.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    calls = result.messages[1]["tool_calls"]
    assert [message["tool_call_id"] for message in result.messages[2:4]] == [call["id"] for call in calls]
    assert result.messages[3]["content"] == "3"
    assert result.messages[1]["reasoning_content"] == "two calls at once"
    assert result.turn_scores == [0.0, 1.0]
    assert "not correct" in result.messages[5]["content"]
    assert result.token_usage == {"prompt_tokens": 600, "completion_tokens": 20, "total_tokens": 620}
    # what the model was offered, and that reasoning_content stays out of what is sent back
    assert requests[0]["tools"] == result.tools and requests[0]["model"] == "stub-model"
    assert [message["role"] for message in requests[1]["messages"]] == ["user", "assistant", "tool", "tool"]
    assert "reasoning_content" not in requests[1]["messages"][1]


def test_malformed_arguments_and_unknown_tools_are_model_errors_and_the_episode_goes_on(records, example_registry):
    record = records[1]
    identity = record["reward_model"]["ground_truth"]
    script = sequence(
        Reply.malformed_arguments("calculator"),
        Reply.unknown_tool("browser", {"url": "x"}),
        Reply.calls(("calculator", {"expression": identity["expression"]})),
        Reply.text(answer(identity["expected_result"])),
    )
    with ScriptedChatServer(script) as server:
        result = episode(record, policy_for(server), example_registry)
    errors = [message["content"] for message in result.messages if message["role"] == "tool"][:2]
    assert "not valid JSON" in errors[0] and "unknown tool 'browser'" in errors[1]
    assert (result.score, result.success, result.error_type) == (1.0, True, "model")
    assert result.turn_record == {"assistant_turns": 4, "user_turns": 4, "tool_calls": 3, "model_errors": 2}


def test_500_and_429_are_retried_then_the_answer_arrives(records, example_registry, caplog):
    record = records[2]
    script = sequence(Reply.error(500), Reply.error(429, retry_after="0.02"), Reply.text(answer(0)))
    caplog.set_level(logging.INFO, logger="bootcamp_core")
    with ScriptedChatServer(script) as server:
        result = episode(record, policy_for(server), example_registry,
                         limits=RolloutLimits(max_assistant_turns=1))
        assert len(server.requests) == 3
    assert result.success and result.finish_reason == "max_assistant_turns"
    assert "Retry-After 0.02 s" in caplog.text
    assert SECRET not in caplog.text


def test_retries_exhausted_is_an_infrastructure_error_that_keeps_the_trajectory(records, example_registry, caplog):
    record = records[3]
    identity = record["reward_model"]["ground_truth"]
    script = sequence(
        Reply.calls(("calculator", {"expression": identity["expression"]})),
        then=Reply.error(503, message=f"overloaded; your key {SECRET} is fine"),
    )
    caplog.set_level(logging.DEBUG, logger="bootcamp_core")
    with ScriptedChatServer(script) as server:
        result = episode(record, policy_for(server), example_registry)
        assert len(server.requests) == 1 + FAST.attempts
    assert (result.success, result.error_type, result.finish_reason) == (False, "infrastructure", "error")
    assert result.error == f"HTTP 503 from {server.base_url} after 3 attempts: overloaded; your key *** is fine"
    assert [message["role"] for message in result.messages] == ["user", "assistant", "tool"]
    assert SECRET not in result.error and SECRET not in caplog.text and "***" in result.error
    assert SECRET not in json.dumps(result.to_dict())


@pytest.mark.parametrize(("status", "kind"), [(400, ModelError), (413, ModelError), (422, ModelError),
                                              (401, InfrastructureError), (403, InfrastructureError),
                                              (404, InfrastructureError)])
def test_other_4xx_are_never_retried_and_only_configuration_ones_are_infrastructure(records, status, kind):
    with ScriptedChatServer(sequence(Reply.error(status, message=f"bad {SECRET}"), then=Reply.text("ok"))) as server:
        with pytest.raises(BaseException) as error:
            call_once(policy_for(server), records[0])
        assert len(server.requests) == 1
        assert str(error.value) == f"HTTP {status} from {server.base_url}: bad ***"
    assert type(error.value) is kind


def test_a_rejected_request_ends_the_episode_as_a_scored_model_error(records, example_registry):
    record = records[4]
    identity = record["reward_model"]["ground_truth"]
    script = sequence(
        Reply.calls(("calculator", {"expression": identity["expression"]})),
        then=Reply.error(400, message="This model's maximum context length is 4096 tokens"),
    )
    with ScriptedChatServer(script) as server:
        result = episode(record, policy_for(server), example_registry)
        assert len(server.requests) == 2  # not retried
        url = server.base_url
    assert (result.success, result.error_type, result.finish_reason) == (True, "model", "error")
    assert result.error == f"HTTP 400 from {url}: This model's maximum context length is 4096 tokens"
    assert result.score == 0.0 and set(result.tool_scores) == {"calculator"}  # scored as usual, calc_reward ran
    assert [message["role"] for message in result.messages] == ["user", "assistant", "tool"]


def test_the_final_error_says_what_failed_once_with_the_attempts(records):
    with ScriptedChatServer(lambda request: Reply.error(500)) as server:
        with pytest.raises(InfrastructureError) as error:
            call_once(policy_for(server), records[0])
        url = server.base_url
    text = str(error.value)
    assert text == f"HTTP 500 from {url} after 3 attempts: scripted error"
    assert text.count(url) == 1 and "Error code" not in text and "RetryableError" not in text and SECRET not in text


def test_slow_answers_within_the_timeout_succeed_and_beyond_it_are_retried_then_fail(records):
    with ScriptedChatServer(lambda request: Reply.text("slow but fine", delay_s=0.3)) as server:
        assert call_once(policy_for(server, request_timeout_s=5), records[0]).message["content"] == "slow but fine"
        with pytest.raises(InfrastructureError, match="after 2 attempts.*(?i:timed out|timeout)"):
            call_once(policy_for(server, request_timeout_s=0.05, retry=RetryPolicy(attempts=2, base_s=0.01)),
                      records[0])


def test_a_refused_connection_is_an_infrastructure_error(records):
    with ScriptedChatServer() as server:
        url = server.base_url
    with pytest.raises(InfrastructureError, match="after 3 attempts"):
        call_once(OpenAIPolicy(api_url=url, model="m", retry=FAST), records[0])


def test_extra_headers_and_params_reach_the_server_and_the_url_suffix_is_stripped(records):
    with ScriptedChatServer(lambda request: Reply.text("ok")) as server:
        policy = OpenAIPolicy(
            api_url=server.base_url + "/chat/completions/",
            model="m",
            api_key=SECRET,
            extra_headers=parse_extra_headers("X-Team:rl, X-Run : 7"),
            extra_params=parse_extra_params('{"temperature": 0.25, "chat_template_kwargs": {"thinking": false}}'),
        )
        assert policy.api_url == server.base_url and SECRET not in repr(policy)
        call_once(policy, records[0])
        body, headers = server.requests[0], server.request_headers[0]
    assert headers["x-team"] == "rl" and headers["x-run"] == "7"
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert body["temperature"] == 0.25 and body["chat_template_kwargs"] == {"thinking": False}


def test_check_lists_models_and_fails_clearly_when_the_endpoint_is_down():
    with ScriptedChatServer() as server:
        policy = OpenAIPolicy(api_url=server.base_url, model="stub", retry=FAST)
        anyio.run(policy.check)
        url = server.base_url
    with pytest.raises(InfrastructureError, match="endpoint check failed"):
        anyio.run(OpenAIPolicy(api_url=url, model="stub", api_key=SECRET).check)


# -------------------------------------------------------------------------------------------------- parsing
def test_parsers(tmp_path):
    assert normalize_api_url(" http://h:1/v1/chat/completions ") == "http://h:1/v1"
    assert normalize_api_url("http://h:1/v1/") == "http://h:1/v1"
    assert parse_extra_headers(None) == {} and parse_extra_headers('{"A": 1}') == {"A": "1"}
    assert parse_extra_headers("a:b:c,d:e") == {"a": "b:c", "d": "e"}
    with pytest.raises(ConfigError):
        parse_extra_headers("no-colon")
    path = tmp_path / "params.json"
    path.write_text('{"top_p": 0.5}')
    assert parse_extra_params(f"@{path}") == {"top_p": 0.5}
    for bad in ("[1]", "{", f"@{tmp_path / 'missing.json'}"):
        with pytest.raises(ConfigError):
            parse_extra_params(bad)


def test_make_policy_picks_reference_without_a_url_and_reads_the_key_from_the_environment(monkeypatch):
    assert isinstance(make_policy(None), ReferencePolicy)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    policy = make_policy(None, api_url="http://127.0.0.1:9/v1", api_model="m")
    assert isinstance(policy, OpenAIPolicy) and policy._client.api_key == SECRET
    monkeypatch.delenv("OPENAI_API_KEY")
    assert make_policy("openai", api_url="http://127.0.0.1:9/v1", api_model="m")._client.api_key == "EMPTY"
    with pytest.raises(ConfigError, match="api_url") as raised:  # a field; `bootcamp eval` names its flag
        make_policy("openai")
    assert raised.value.field == "api_url"
    with pytest.raises(ConfigError, match="unknown policy"):
        make_policy("gpt")


def test_reference_policy_check_lists_every_generator_without_an_agent(records, example_registry):
    policy = ReferencePolicy(example_registry)
    policy.check(records)
    other = json.loads(json.dumps(records[0]))
    other["extra_info"]["bootcamp"]["generator"] = "poker/headsup"
    third = json.loads(json.dumps(records[0]))
    third["extra_info"]["bootcamp"]["generator"] = "chess/endgame"
    with pytest.raises(ConfigError, match="chess/endgame, poker/headsup"):
        policy.check([*records, other, third])


def test_the_environment_can_send_everything_through_the_sdk(monkeypatch):
    monkeypatch.setenv("BOOTCAMP_HTTP_CLIENT", "sdk")
    assert OpenAIPolicy(api_url="http://127.0.0.1:8000/v1", model="m")._http is False  # never the lean client
    monkeypatch.setenv("BOOTCAMP_HTTP_CLIENT", "auto")
    assert OpenAIPolicy(api_url="http://127.0.0.1:8000/v1", model="m")._http is None  # decided at the first request
    monkeypatch.setenv("BOOTCAMP_HTTP_CLIENT", "curl")
    with pytest.raises(ConfigError, match='BOOTCAMP_HTTP_CLIENT .* must be "auto" or "sdk"'):
        OpenAIPolicy(api_url="http://127.0.0.1:8000/v1", model="m")
