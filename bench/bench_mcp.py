"""MCP benchmark: tool calls/s, p50 and p99 through ``bootcamp mcp serve`` next to ``bootcamp serve``'s HTTP API in
the same run, and how many MCP sessions one server holds open at once.

- MCP: each concurrent caller is one MCP session (the ``mcp`` SDK's client over streamable HTTP) that started an
  episode of a bootcamp-example record and calls its calculator on "1 + 1"; every call runs through the rollout
  engine on the episode's instance and is recorded in its transcript.
- tool server: the same tool through ``bootcamp serve`` (master + one worker) with the project's client, on
  pre-created instances (``bench_tool_server.measure``).
- sessions: N sessions opened at once, each initialised and with its episode started, then held open together;
  target 1,000 with none failing.

Run: ``python bench/bench_mcp.py`` (``--quick``: fewer calls, 200 sessions). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_tool_server  # its server start-up and measurement, for the baseline


def start_mcp(dataset: Path, max_sessions: int) -> tuple[subprocess.Popen, str]:
    import httpx

    port = bench_tool_server.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "bootcamp_core.cli.main", "mcp", "serve", "--dataset-path", str(dataset), "--port",
         str(port), "--max-sessions", str(max_sessions), "--max-assistant-turns", "1000000", "--max-user-turns",
         "1000000"], env={**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
            return process, f"http://127.0.0.1:{port}/mcp"
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the MCP server did not start")


async def _session(url: str, stack) -> object:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    client = await stack.enter_async_context(httpx2.AsyncClient(timeout=300))
    read, write = await stack.enter_async_context(streamable_http_client(url, http_client=client))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def measure_mcp(url: str, concurrency: int, calls: int, index: int) -> dict:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        sessions = [await _session(url, stack) for _ in range(concurrency)]
        for session in sessions:
            started = await session.call_tool("start_episode", {"index": index})
            assert not started.is_error, started.content
            await session.call_tool("calculator", {"expression": "1 + 1"})  # warm
        latencies: list[float] = []
        left = [calls]

        async def lane(session) -> None:
            while left[0] > 0:
                left[0] -= 1
                started = time.perf_counter()
                result = await session.call_tool("calculator", {"expression": "1 + 1"})
                assert not result.is_error, result.content
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(lane(session) for session in sessions))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {"calls_per_s": len(latencies) / elapsed, "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}


async def hold_sessions(url: str, count: int) -> dict:
    """``count`` sessions, each opened in its own task and kept open until every one has opened (or failed)."""
    from contextlib import AsyncExitStack

    opened, failed, errors = 0, 0, []
    everyone = asyncio.Event()
    semaphore = asyncio.Semaphore(64)  # openings in flight at once; an opened session stays open
    started = time.perf_counter()

    async def one(position: int) -> None:
        nonlocal opened, failed
        async with AsyncExitStack() as stack:
            try:
                async with semaphore:
                    session = await _session(url, stack)
                    result = await session.call_tool("start_episode", {"index": position % 4})
                    assert not result.is_error, result.content
                opened += 1
            except Exception as error:  # noqa: BLE001 (counted)
                failed += 1
                errors.append(f"{type(error).__name__}: {error}"[:200])
            if opened + failed == count:
                everyone.set()
            await everyone.wait()

    await asyncio.gather(*(one(position) for position in range(count)))
    return {"asked": count, "held_open_at_once": opened, "failed": failed, "open_s": time.perf_counter() - started,
            "first_errors": errors[:3]}


async def run(levels: list[int], calls: int, sessions: int) -> dict:
    from bootcamp_core.data.generate import config_for_bootcamp, iter_records
    from bootcamp_core.data.io import write_records
    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.serve.client import ToolServerClient

    registry = get_registry()
    folder = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    records = list(iter_records(config_for_bootcamp("example", registry, overrides={"split_samples": "test:4"}),
                                "test", registry))
    write_records(folder / "data.jsonl", records)
    mcp_process, mcp_url = start_mcp(folder / "data.jsonl", max(sessions + 64, 256))
    tool_process, master_url, _worker, (master_pid, worker_pid) = bench_tool_server.start_server()
    results: dict = {}
    try:
        master = ToolServerClient(master_url, max_connections=1024)
        for level in levels:
            results[f"concurrency {level}"] = {
                "mcp": await measure_mcp(mcp_url, level, calls, 0),
                "tool server": await bench_tool_server.measure(master.tool("example/calculator"), level, calls,
                                                               (master_pid, worker_pid)),
            }
        await master.aclose()
        results["sessions"] = await hold_sessions(mcp_url, sessions)
    finally:
        for process in (mcp_process, tool_process):
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls, 200 sessions")
    parser.add_argument("--sessions", type=int, default=None, help="sessions to hold open at once (default 1000)")
    args = parser.parse_args()
    calls = 300 if args.quick else 2000
    sessions = args.sessions or (200 if args.quick else 1000)
    results = asyncio.run(run([1, 16, 64], calls, sessions))
    for key, value in results.items():
        if key == "sessions":
            continue
        line = "  ".join(f"{name}: {v['calls_per_s']:7.0f} calls/s p50 {v['p50_ms']:6.2f} ms p99 {v['p99_ms']:7.2f} ms"
                         for name, v in value.items())
        print(f"{key:>15}  {line}")
    held = results["sessions"]
    verdict = "PASS" if held["held_open_at_once"] == held["asked"] and held["asked"] >= 1000 else "FAIL"
    print(f"sessions held open at once: {held['held_open_at_once']} of {held['asked']} ({held['failed']} failed, "
          f"opened in {held['open_s']:.1f} s); target 1,000 with none failing: {verdict}")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
