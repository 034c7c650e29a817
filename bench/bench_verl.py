"""verl adapter benchmark: what keeping one bootcamp instance per trajectory costs a tool call, and what the idle
sweep costs with many trajectories open.

Printed next to a baseline measured in the same run:

(a) µs of CPU per tool call through ``bootcamp_verl.tool.BootcampTool`` exactly as verl 0.9's ``ToolAgentLoop``
    makes one (``create`` → ``execute(agent_data=...)`` → ``release``), 1,000 trajectories of 4 calls each on
    bootcamp-example's calculator, next to the same calls made straight on the bootcamp tool (create once per
    trajectory, execute, release) — the adapter's overhead is the difference (target: under 100 µs a call);
(b) ms for one idle sweep (``reap_idle``) over 10,000 open trajectories none of which is due, the cost a call pays
    at most every few seconds.

Run: ``hatch run verl:bench`` (or ``python bench/bench_verl.py [--quick]`` where bootcamp-verl is installed).
Never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import time


def agent_data():
    from verl.experimental.agent_loop.tool_agent_loop import AgentData

    return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id="r", tools_kwargs={})


async def through_adapter(trajectories: int, calls: int) -> float:
    from bootcamp_verl.tool import BootcampTool

    tool = BootcampTool({"type": "native", "tool_id": "example/calculator"})
    identity = {"create_kwargs": {"identity": '{"expression": "1+2", "expected_result": 3, "tolerance": 0}'}}
    started = time.process_time()
    for _ in range(trajectories):
        data = agent_data()
        for call in range(calls):
            handle, _ = await tool.create(create_kwargs=identity["create_kwargs"])
            await tool.execute(handle, {"expression": f"{call}+1"}, agent_data=data)
            await tool.release(handle)
        del data
    elapsed = time.process_time() - started
    await tool.reap_idle()
    return elapsed


async def straight(trajectories: int, calls: int) -> float:
    from bootcamp_core.plugin.loader import get_registry

    tool = get_registry().component("tool", "example/calculator")
    identity = {"expression": "1+2", "expected_result": 3, "tolerance": 0}
    started = time.process_time()
    for _ in range(trajectories):
        instance = await tool.create(identity=identity)
        for call in range(calls):
            await tool.execute(instance, {"expression": f"{call}+1"})
        await tool.release(instance)
    return time.process_time() - started


async def sweep(open_trajectories: int) -> float:
    from bootcamp_verl.tool import BootcampTool

    tool = BootcampTool({"type": "native", "tool_id": "example/calculator"})
    held = [agent_data() for _ in range(open_trajectories)]  # alive, recently used: nothing is due
    for data in held:
        handle, _ = await tool.create(create_kwargs={})
        await tool.execute(handle, {"expression": "1+1"}, agent_data=data)
        await tool.release(handle)
    started = time.perf_counter()
    released = await tool.reap_idle()
    elapsed = time.perf_counter() - started
    assert not released
    await tool.reap_idle(now=time.monotonic() + tool.idle_timeout_s + 1)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    args = parser.parse_args()
    trajectories, calls = (200, 4) if args.quick else (1000, 4)
    open_trajectories = 2000 if args.quick else 10000
    total = trajectories * calls
    best_adapter = min(asyncio.run(through_adapter(trajectories, calls)) for _ in range(3))
    best_straight = min(asyncio.run(straight(trajectories, calls)) for _ in range(3))
    overhead = (best_adapter - best_straight) / total * 1e6
    print(f"(a) per call: adapter {best_adapter / total * 1e6:.1f} µs, straight {best_straight / total * 1e6:.1f} µs, "
          f"ratio {best_adapter / best_straight:.2f}, overhead {overhead:.1f} µs "
          f"[{'PASS' if overhead < 100 else 'FAIL'}: target < 100 µs]")
    elapsed = asyncio.run(sweep(open_trajectories))
    print(f"(b) one idle sweep over {open_trajectories} open trajectories: {elapsed * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
