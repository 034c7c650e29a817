"""Rollout benchmark: harness CPU per assistant turn, turns/s at concurrency 1, 64 and 1,000, no collapse at 1,000.

Every number is printed next to a baseline measured in the same run, and the targets with PASS/FAIL:

(a) harness CPU per assistant turn — everything except the HTTP client library's work: bootcamp-example's level-1
    tasks played by its reference agent (``ReferencePolicy``, so no HTTP client at all) through ``run_episode`` at
    concurrency 64, process CPU time over assistant turns, the plugins' own work (agent, calculator, reward)
    included, so the figure is an upper bound (median of three runs; target < 0.3 ms), next to a naive sequential
    loop that wires the same agent, tool, interaction and reward by hand;
(b) informational: client CPU per turn over HTTP (the same tasks played by the scripted server in its own process,
    through ``OpenAIPolicy``) next to a bare ``openai`` client loop at the same concurrency in the same run. Both
    are dominated by the openai SDK and httpx (about 3 ms per request here) and by how the two cores are shared
    with the server, so their difference swings by a millisecond from run to run and is not a measure of the
    harness; ``OpenAIPolicy``'s own work per turn (building the request, reading the answer) is what (a) leaves
    out, and it is a few dict operations;
(c) turns/s and episodes/s at concurrency 1, 64 and 1,000, and episodes/s at 1,000 over the best level
    (target >= 0.8: no collapse);
(d) the storm: episodes/s at concurrency 64 when 30% of requests fail at random (HTTP 500, 429 with and without
    ``Retry-After``, reset connections, requests that hang past a 1 s request timeout, malformed 200 bodies), with
    the default retry budget and backoff, next to the fault-free run of (c); every episode must end solved.

Run: ``python bench/bench_rollout.py`` (``--quick`` for a smaller run). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import anyio


def level_1_records(count: int) -> list[dict]:
    from bootcamp_core.data.config import parse_instruction_config
    from bootcamp_core.data.generate import iter_records

    data = {
        "instruction_generators": {
            "level_1": {
                "config": {"min_value": 100, "max_value": 10000, "min_operands": 2, "max_operands": 8,
                           "tolerance": 1e-8}
            }
        },
        "global_config": {"class_name": "example/arithmetic", "default_seed": 7},
    }
    config = parse_instruction_config(data, name="level_1", overrides={"split_samples": {"test": count}})
    return list(iter_records(config, "test"))


# ------------------------------------------------------------------------------------------ the stub's script
def play_reference_agent(request: dict):
    """The reference agent over HTTP: calculator on the prompt's expression, then the tool's output as the answer."""
    from bootcamp_core.testing.chat_server import Reply

    messages = request["messages"]
    tool = next((message for message in reversed(messages) if message.get("role") == "tool"), None)
    if tool is None:
        prompt = next(message["content"] for message in messages if message.get("role") == "user")
        expression = prompt.split("\n\n")[1]  # the generator's prompt puts the expression in its own paragraph
        return Reply.calls(("calculator", {"expression": expression}), usage={"prompt_tokens": 150,
                                                                              "completion_tokens": 20})
    return Reply.text(f'```json\n{{"result": {tool["content"]}}}\n```', usage={"prompt_tokens": 200,
                                                                                 "completion_tokens": 10})


def serve(storm_rate: float = 0.0) -> None:
    """Child process: run the scripted server until stdin closes, printing its base URL first; ``storm_rate`` of
    the requests get a random fault."""
    from bootcamp_core.testing.chat_server import ScriptedChatServer, storm

    script = storm(play_reference_agent, storm_rate, seed=15, hang_s=3.0) if storm_rate else play_reference_agent
    with ScriptedChatServer(script) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


# -------------------------------------------------------------------------------------------------- runners
async def run_many(records: list[dict], policy, concurrency: int, registry) -> list:
    from bootcamp_core.episode.engine import run_episode

    results: list = []
    pending = iter(records)

    async def worker() -> None:
        for record in pending:  # one shared iterator: workers pull the next record as they free up
            results.append(await run_episode(record, policy, registry=registry))

    async with anyio.create_task_group() as group:
        for _ in range(min(concurrency, len(records))):
            group.start_soon(worker)
    return results


async def naive_in_process(records: list[dict], registry) -> int:
    """Baseline without HTTP: the same components wired by hand in a sequential loop, no limits, no bookkeeping."""
    import random

    agent = registry.component("reference_agent", "example/calculator_agent")
    tool = registry.component("tool", "example/calculator")
    interaction = registry.component("interaction", "example/feedback")
    reward = registry.component("reward", "example/arithmetic")
    turns = 0
    for index, record in enumerate(records):
        identity = record["reward_model"]["ground_truth"]
        instance_id = await tool.create(None, identity=identity)
        await interaction.start_interaction(instance_id, identity=identity)
        messages = list(record["prompt"])
        rng = random.Random(index)
        for _ in range(10):
            message = await agent.act(messages, [tool.openai_schema()], identity, rng)
            messages.append(message)
            turns += 1
            if message.get("tool_calls"):
                for call in message["tool_calls"]:
                    text, _, _ = await tool.execute(instance_id, json.loads(call["function"]["arguments"]))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                continue
            terminate, feedback, _, _ = await interaction.generate_response(instance_id, messages)
            if terminate:
                break
            messages.append({"role": "user", "content": feedback})
        reward.verify_score(messages[-1]["content"], identity, messages=messages)
        await tool.release(instance_id)
        await interaction.finalize_interaction(instance_id)
    return turns


async def bare_http(records: list[dict], base_url: str, concurrency: int) -> int:
    """Baseline over HTTP: bare ``openai`` calls, ``concurrency`` conversations at once, the tool run inline, no
    engine; one client with as many connections as conversations (at most 64, as each of ``OpenAIPolicy``'s)."""
    import httpx
    import openai

    from bootcamp_core.plugin.loader import get_registry

    tool = get_registry().component("tool", "example/calculator")
    schema = [tool.openai_schema()]
    size = min(concurrency, 64)
    clients = [
        openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, http_client=openai.DefaultAsyncHttpxClient(
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size)))
        for _ in range(max(1, concurrency // 64))
    ]
    turns = 0
    pending = iter(records)

    async def worker(client) -> None:
        nonlocal turns
        for record in pending:
            identity = record["reward_model"]["ground_truth"]
            instance_id = await tool.create(None, identity=identity)
            messages = list(record["prompt"])
            while True:
                completion = await client.chat.completions.create(model="stub", messages=messages, tools=schema)
                turns += 1
                message = completion.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    text, _, _ = await tool.execute(instance_id, json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
            await tool.release(instance_id)

    async with anyio.create_task_group() as group:
        for index in range(min(concurrency, len(records))):
            group.start_soon(worker, clients[index % len(clients)])
    for client in clients:
        await client.close()
    return turns


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def measure(label: str, work) -> tuple[float, float, object]:
    """(wall seconds, process CPU seconds, result) of ``anyio.run(work)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = anyio.run(work)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--storm-rate", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.storm_rate)
        return
    os.environ.setdefault("BOOTCAMP_LOAD_PLUGINS", "example")
    from bootcamp_core.episode.policies import OpenAIPolicy, ReferencePolicy
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    scale = 1 if args.quick else 4
    records = level_1_records(1000 * scale)
    ReferencePolicy(registry).check(records)  # builds the agent table outside the timed part

    print("== (a) harness CPU per assistant turn, in process (no HTTP client), concurrency 64 ==")
    anyio.run(run_many, records[:50], ReferencePolicy(registry), 8, registry)  # warm-up: imports, component builds
    samples = []
    for _ in range(3):
        wall, cpu, results = measure("engine", lambda: run_many(records, ReferencePolicy(registry), 64, registry))
        turns = sum(result.turn_record["assistant_turns"] for result in results)
        assert all(result.score == 1.0 for result in results), "the reference agent must solve every episode"
        samples.append((cpu / turns * 1e3, turns / wall, turns))
    ours, rate, turns = sorted(samples)[1]
    base_wall, base_cpu, base_turns = measure("naive", lambda: naive_in_process(records, registry))
    naive = base_cpu / base_turns * 1e3
    print(f"engine : {turns} turns, {ours:.3f} ms CPU/turn (median of {', '.join(f'{s[0]:.3f}' for s in samples)}), "
          f"{rate:,.0f} turns/s")
    print(f"naive  : {base_turns} turns, {naive:.3f} ms CPU/turn, {base_turns / base_wall:,.0f} turns/s")
    print(f"ratio  : engine/naive CPU per turn = {ours / naive:.2f}; engine overhead = {ours - naive:.3f} ms/turn")
    print(f"(a) harness CPU per turn, plugin work included: {ours:.3f} ms (target < 0.3 ms): {verdict(ours < 0.3)}")

    print("\n== end to end against the scripted server (own process, instant answers) ==")
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        base_url = server.stdout.readline().strip()
        sizes = {1: 200 * scale, 64: 1000 * scale, 1000: 1000 * scale}
        rates: dict[int, float] = {}
        engine_cpu: dict[int, float] = {}
        bare_cpu: dict[int, float] = {}
        for concurrency, count in sizes.items():
            bare_wall, bare_cpu_s, bare_turns = measure(
                "bare-http", lambda count=count, concurrency=concurrency: bare_http(records[:count], base_url,
                                                                                   concurrency))
            bare_cpu[concurrency] = bare_cpu_s / bare_turns * 1e3
            policy = OpenAIPolicy(api_url=base_url, model="stub")

            async def work(count: int = count, concurrency: int = concurrency, policy=policy) -> list:
                try:
                    return await run_many(records[:count], policy, concurrency, registry)
                finally:
                    await policy.aclose()

            wall, cpu, results = measure(f"c={concurrency}", work)
            turns = sum(result.turn_record["assistant_turns"] for result in results)
            failed = sum(not result.success for result in results)
            solved = sum(result.score == 1.0 for result in results)
            rates[concurrency] = len(results) / wall
            engine_cpu[concurrency] = cpu / turns * 1e3
            print(
                f"concurrency {concurrency:>5}: {len(results):>5} episodes, {turns / wall:8,.0f} turns/s, "
                f"{rates[concurrency]:8,.0f} episodes/s, {engine_cpu[concurrency]:.3f} ms CPU/turn (incl. HTTP "
                f"client), solved {solved}, infrastructure errors {failed}; bare openai loop: "
                f"{bare_turns / bare_wall:8,.0f} turns/s, {bare_cpu[concurrency]:.3f} ms CPU/request, "
                f"difference {engine_cpu[concurrency] - bare_cpu[concurrency]:+.3f} ms"
            )
        print(f"(b) informational: client CPU per turn over HTTP at concurrency 64, ours {engine_cpu[64]:.3f} ms vs a "
              f"bare openai loop {bare_cpu[64]:.3f} ms per request (both mostly the HTTP client library; see (a))")
        best = max(rates.values())
        ratio = rates[1000] / best
        print(f"(c) episodes/s at 1,000 over the best level: {ratio:.2f} (target >= 0.80): {verdict(ratio >= 0.8)}")
    finally:
        server.stdin.close()
        server.wait(timeout=30)

    print("\n== (d) the storm: 30% of requests fail at random, concurrency 64, default retry budget and backoff ==")
    stormy = subprocess.Popen([sys.executable, __file__, "--serve", "--storm-rate", "0.3"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        storm_url = stormy.stdout.readline().strip()
        count = 250 * scale
        policy = OpenAIPolicy(api_url=storm_url, model="stub", request_timeout_s=1.0, max_concurrency=64)

        async def storm_work() -> list:
            try:
                return await run_many(records[:count], policy, 64, registry)
            finally:
                await policy.aclose()

        wall, _, results = measure("storm", storm_work)
        solved = sum(result.score == 1.0 for result in results)
        failed = sum(not result.success for result in results)
        stats = policy.retry_stats.to_dict()
        storm_rate = len(results) / wall
        print(f"storm      : {len(results)} episodes, {storm_rate:8,.1f} episodes/s, solved {solved}, infrastructure "
              f"errors {failed}, retries {stats['retries']} (waited {stats['waiting_s']:.1f} s in all), lowest "
              f"concurrency {policy.concurrency.lowest}; by kind {stats['retries_by_kind']}")
        print(f"fault-free : {rates[64]:8,.1f} episodes/s at concurrency 64 (c)")
        print(f"(d) storm episodes/s {storm_rate:,.1f} vs fault-free {rates[64]:,.1f}; every episode solved: "
              f"{verdict(solved == len(results))}")
    finally:
        stormy.stdin.close()
        stormy.wait(timeout=30)


if __name__ == "__main__":
    main()
