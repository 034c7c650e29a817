"""Token ids kept: ``bootcamp eval --return-token-ids`` against the scripted server (vLLM's and SGLang's shapes, the
lean HTTP client and the SDK's) -> results.jsonl -> ``bootcamp postprocess --extract-training`` -> SFT columns made
of exactly the ids the server returned, nothing re-tokenised."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import anyio
import pytest

from bootcamp_core.cli.main import main
from bootcamp_core.data.generate import config_for_bootcamp, generate
from bootcamp_core.data.records import EpisodeResult, GeneratedSample
from bootcamp_core.episode.http_client import ChatHTTPClient
from bootcamp_core.episode.policies import HTTP_CLIENT_ENV, OpenAIPolicy
from bootcamp_core.episode.retries import RetryPolicy
from bootcamp_core.evaluate.dataset import load_dataset
from bootcamp_core.postprocess import IGNORE_INDEX, TOKEN_ID_KEYS, extract_for_training, training_id
from bootcamp_core.testing.chat_server import (
    Reply,
    ScriptedChatServer,
    first_user_text,
    sequence,
    toy_completion_ids,
    toy_prompt_ids,
)

pytestmark = pytest.mark.usefixtures("only_example")

FAST = RetryPolicy(attempts=3, base_s=0.01, max_s=0.2)
TOOLS = [{"type": "function", "function": {"name": "calculator", "description": "evaluates an expression",
                                           "parameters": {"type": "object",
                                                          "properties": {"expression": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def dataset(example_registry, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("data")
    config = config_for_bootcamp("example", example_registry, {"split_samples": {"test": 3}}, name="example")
    generate(config, directory, registry=example_registry)
    return directory / "example_test.jsonl"


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def runs_of_ones(mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of every maximal run of 1s."""
    runs, start = [], None
    for position, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = position
        elif not bit and start is not None:
            runs.append((start, position))
            start = None
    return runs


# ------------------------------------------------------------------------------------------ the whole path
def test_ids_survive_eval_results_and_extraction(dataset, tmp_path, capsys):
    records = list(load_dataset(dataset))
    retried = first_user_text({"messages": records[0]["prompt"]})  # its first answer is wrong: a feedback turn

    def script(request: dict) -> Reply:
        messages = request["messages"]
        tool = next((message["content"] for message in reversed(messages) if message["role"] == "tool"), None)
        if tool is None:
            expression = first_user_text(request).split("\n\n")[1]
            return Reply.calls(("calculator", {"expression": expression}))
        answers = sum(message["role"] == "assistant" for message in messages) - 1
        value = "-12345.5" if first_user_text(request) == retried and answers == 0 else tool
        return Reply.text(f'```json\n{{"result": {value}}}\n```')

    out = tmp_path / "out"
    with ScriptedChatServer(script, keep_responses=True) as server:
        code = main(["eval", "--dataset-path", str(dataset), "--output-dir", str(out), "--quiet", "--api-url",
                     server.base_url, "--api-model", "stub", "--return-token-ids", "--max-concurrent", "2"])
    assert code == 0, capsys.readouterr().err
    # every request asked in both servers' words, and never sent ids back
    assert all(request["return_token_ids"] is True and request["return_prompt_token_ids"] is True
               for request in server.requests)
    assert not any(key in message for request in server.requests for message in request["messages"]
                   for key in TOKEN_ID_KEYS)
    served = [(answer["prompt_token_ids"], answer["choices"][0]["token_ids"]) for answer in server.responses]
    assert len(served) == len(server.requests) == 7  # 2 turns each, the retried record 3

    # results.jsonl: on every assistant message, exactly what the server returned for that turn
    results = lines_of(out / "results.jsonl")
    kept = [(message["prompt_token_ids"], message["completion_token_ids"]) for line in results
            for message in line["messages"] if message["role"] == "assistant"]
    assert sorted(kept) == sorted(served)
    for line in results:  # and the ids are the answer's: the sampled ids are its toy tokenisation
        assert line["score"] == 1.0 and line["evaluation_config"]["return_token_ids"] is True
        for message in line["messages"]:
            if message["role"] == "assistant":
                plain = {key: value for key, value in message.items() if key not in TOKEN_ID_KEYS}
                assert message["completion_token_ids"] == toy_completion_ids(plain)
        assert EpisodeResult.from_dict(line).messages == line["messages"]  # results load as before

    # postprocess --extract-training: the server's ids as columns, split where a prompt re-rendered a tool call
    train = tmp_path / "train.jsonl"
    assert main(["postprocess", str(out / "results.jsonl"), str(train), "--extract-training"]) == 0
    assert "note:" not in capsys.readouterr().out
    written = lines_of(train)
    sampled = Counter()
    for record in written:
        ids, labels, mask = record["input_ids"], record["labels"], record["loss_mask"]
        assert len(ids) == len(labels) == len(mask)
        assert labels == [token if bit else IGNORE_INDEX for token, bit in zip(ids, mask)]
        runs = runs_of_ones(mask)
        assert all(tuple(ids[start:end]) in {tuple(completion) for _, completion in served} for start, end in runs)
        sampled.update(tuple(ids[start:end]) for start, end in runs)
        # each sequence starts with the whole prompt of its first turn, as the server tokenised it
        first_prompt = ids[: runs[0][0]]
        assert any(first_prompt == prompt for prompt, _ in served)
        assert not any(key in message for message in record["messages"] for key in TOKEN_ID_KEYS)
        assert record["id"] == training_id(record["messages"])
    # every sampled token is trained on exactly once
    assert sampled == Counter(tuple(completion) for _, completion in served)
    # the tool call's compact JSON is re-rendered with spaces: its record splits after the call (2 records each);
    # the feedback turn's prompt extends the wrong answer's ids, so those two answers make one sequence
    assert len(written) == 6
    retried_line = next(line for line in results if first_user_text({"messages": line["input"]["prompt"]}) == retried)
    second, third = [message for message in retried_line["messages"] if message["role"] == "assistant"][1:]
    stitched = next(record for record in written if len(runs_of_ones(record["loss_mask"])) == 2)
    assert stitched["input_ids"] == third["prompt_token_ids"] + third["completion_token_ids"]
    assert stitched["input_ids"][: len(second["prompt_token_ids"])] == second["prompt_token_ids"]
    assert stitched["messages"] == [{key: value for key, value in message.items() if key not in TOKEN_ID_KEYS}
                                    for message in retried_line["messages"]]

    # a turn without ids: that record falls back to text, and one line says so
    broken = dict(results[0], messages=[dict(message) for message in results[0]["messages"]])
    next(message for message in broken["messages"] if message["role"] == "assistant").pop("prompt_token_ids")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(line) + "\n" for line in [broken, *results[1:]]), encoding="utf-8")
    assert main(["postprocess", str(mixed), str(train), "--extract-training"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "note:" in line]
    assert len(notes) == 1 and "1 of 3 records have assistant turns without token ids" in notes[0]
    fallback = lines_of(train)[0]
    assert sorted(fallback) == ["data_source", "id", "messages", "prompt", "tools"]
    assert fallback == extract_for_training({**broken, "messages": [
        {key: value for key, value in message.items() if key not in TOKEN_ID_KEYS} for message in broken["messages"]]})

    # reference agents sample no tokens: a one-line configuration error
    assert main(["eval", "--dataset-path", str(dataset), "--output-dir", str(tmp_path / "ref"), "--quiet",
                 "--return-token-ids"]) == 1
    assert capsys.readouterr().err.strip().startswith("error: --return-token-ids needs --policy openai")


# ------------------------------------------------------------------------------ both HTTP paths, both shapes
@pytest.mark.parametrize("client", ["auto", "sdk"])
@pytest.mark.parametrize("shape", ["vllm", "sglang"])
def test_both_http_paths_keep_the_ids_of_both_servers(dataset, client, shape, monkeypatch):
    if client == "sdk":
        monkeypatch.setenv(HTTP_CLIENT_ENV, "sdk")
    record = GeneratedSample.from_record(next(iter(load_dataset(dataset))))
    script = sequence(Reply.calls(("calculator", {"expression": "1 + 2"})), Reply.text("3"), Reply.text("3"))
    prompt = [{"role": "user", "content": "1 + 2?"}]

    async def run(policy: OpenAIPolicy) -> list:
        try:
            first = await policy(prompt, TOOLS, record, random.Random(0))
            history = [*prompt, first.message, {"role": "tool", "tool_call_id": first.message["tool_calls"][0]["id"],
                                               "content": "3"}]
            second = await policy(history, TOOLS, record, random.Random(0))
            fast = policy._http
            return [first, second, fast]
        finally:
            await policy.aclose()

    with ScriptedChatServer(script, token_ids=shape, keep_responses=True) as server:
        first, second, fast = anyio.run(run, OpenAIPolicy(api_url=server.base_url, model="stub", retry=FAST,
                                                          return_token_ids=True))
    assert isinstance(fast, ChatHTTPClient) if client == "auto" else fast is False
    for turn, request, answer in zip((first, second), server.requests, server.responses):
        choice = answer["choices"][0]
        expected_prompt = choice["prompt_token_ids"] if shape == "sglang" else answer["prompt_token_ids"]
        assert turn.message["prompt_token_ids"] == expected_prompt == toy_prompt_ids(request)
        assert turn.message["completion_token_ids"] == choice["token_ids"]
        assert turn.usage["prompt_tokens"] == len(expected_prompt)
    # the second request carried the first turn without its ids
    sent = server.requests[1]["messages"][1]
    assert sent["tool_calls"] == first.message["tool_calls"] and not set(TOKEN_ID_KEYS) & set(sent)


@pytest.mark.parametrize("client", ["auto", "sdk"])
def test_without_the_flag_nothing_is_asked_or_kept(dataset, client):
    record = GeneratedSample.from_record(next(iter(load_dataset(dataset))))

    async def run(policy: OpenAIPolicy):
        try:
            return await policy([{"role": "user", "content": "hi"}], [], record, random.Random(0))
        finally:
            await policy.aclose()

    with ScriptedChatServer(keep_responses=True) as server:
        turn = anyio.run(run, OpenAIPolicy(api_url=server.base_url, model="stub", retry=FAST, client=client))
    assert "return_token_ids" not in server.requests[0] and "token_ids" not in server.responses[0]["choices"][0]
    assert not set(TOKEN_ID_KEYS) & set(turn.message)


def test_an_endpoint_without_ids_is_counted_and_the_preflight_says_so(dataset, caplog):
    record = GeneratedSample.from_record(next(iter(load_dataset(dataset))))
    # the user's extra params win over the flag's: this server is asked for no ids, as one that ignores the flag
    policy_args = {"model": "stub", "retry": FAST, "return_token_ids": True, "extra_params": {"return_token_ids": False}}

    async def run(policy: OpenAIPolicy):
        try:
            await policy.check()
            return await policy([{"role": "user", "content": "hi"}], [], record, random.Random(0))
        finally:
            await policy.aclose()

    with ScriptedChatServer() as server, caplog.at_level("WARNING", logger="bootcamp_core"):
        policy = OpenAIPolicy(api_url=server.base_url, **policy_args)
        turn = anyio.run(run, policy)
    assert policy.turns_without_token_ids == 1 and not set(TOKEN_ID_KEYS) & set(turn.message)
    expected = (f"{server.base_url} returned no token ids for the test request (vLLM >= 0.10.2 and SGLang return "
                "them when asked): the results keep text only")
    assert [rec.getMessage() for rec in caplog.records if "returned no token ids" in rec.getMessage()] == [expected]
