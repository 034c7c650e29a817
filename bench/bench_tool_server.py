"""Tool-server benchmark: calls/s, p50 and p99 through the master vs straight to a worker vs in-process.

A trivial tool (bootcamp-example's calculator on "1 + 1") executed on pre-created instances, one per concurrent
caller, at concurrency 1 / 16 / 64 / 512, with the project's own client (``bootcamp_core.serve.client``) as the load
generator in this process. The server is ``bootcamp serve`` in unified mode with one worker, so client, master and
worker are three processes sharing this machine's cores. Printed next to each other in one run:

- in-process: ``Tool.execute`` awaited directly (the floor);
- direct: client -> worker;
- master: client -> master -> worker; the master's added p50 is master p50 minus direct p50.

Targets: the master adds <= 1 ms at p50; >= 2,000 calls/s through the master at concurrency 64 (load client
included); p99 bounded at 512. For scale, the original framework's server did 310 calls/s at concurrency 1, 488/s at
16 and 129/s (p99 2.1 s) at 64 on this machine.

Run: ``python bench/bench_tool_server.py`` (``--quick`` for fewer calls). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str, str, tuple[int, int]]:
    port = free_port()
    env = {**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example"}
    process = subprocess.Popen([sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--port", str(port),
                                "--num-workers", "1", "--bootcamps", "example"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status = httpx.get(url + "/health", timeout=2).json()
            if status["ready"]:
                return process, url, status["workers"][0]["url"], (status["host"]["pid"],
                                                                   status["workers"][0]["host"]["pid"])
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not become ready")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux); 0 where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(tool, concurrency: int, calls: int, pids: tuple[int, ...] = ()) -> dict:
    instances = [await tool.create(identity={}) for _ in range(concurrency)]
    for instance in instances:  # warm the connections
        await tool.execute(instance, {"expression": "1 + 1"})
    latencies: list[float] = []
    left = [calls]

    async def lane(instance: str) -> None:
        while left[0] > 0:
            left[0] -= 1
            started = time.perf_counter()
            await tool.execute(instance, {"expression": "1 + 1"})
            latencies.append(time.perf_counter() - started)

    cpu_before = time.process_time() + sum(cpu_seconds(pid) for pid in pids)
    started = time.perf_counter()
    await asyncio.gather(*(lane(instance) for instance in instances))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() + sum(cpu_seconds(pid) for pid in pids) - cpu_before
    for instance in instances:
        await tool.release(instance)
    latencies.sort()
    return {
        "calls_per_s": len(latencies) / elapsed,
        "cpu_us": 1e6 * cpu / len(latencies),  # client + server processes: what the machine pays per call
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


async def run(levels: list[int], calls: int) -> dict:
    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.serve.client import ToolServerClient

    local = get_registry().component("tool", "example/calculator")
    process, master_url, worker_url, (master_pid, worker_pid) = start_server()
    try:
        master, direct = ToolServerClient(master_url, max_connections=1024), ToolServerClient(worker_url,
                                                                                            max_connections=1024)
        results: dict = {}
        for level in levels:
            results[level] = {
                "in-process": await measure(local, level, calls),
                "direct": await measure(direct.tool("example/calculator"), level, calls, (worker_pid,)),
                "master": await measure(master.tool("example/calculator"), level, calls, (master_pid, worker_pid)),
            }
        await master.aclose()
        await direct.aclose()
        return results
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per level")
    args = parser.parse_args()
    calls = 2000 if args.quick else 10000
    levels = [1, 16, 64, 512]
    results = asyncio.run(run(levels, calls))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"{'concurrency':>11} {'path':>10} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/call':>12}")
    for level in levels:
        for path, row in results[level].items():
            print(f"{level:>11} {path:>10} {row['calls_per_s']:>9.0f} {row['p50_ms']:>8.3f} {row['p99_ms']:>8.2f} "
                  f"{row['cpu_us']:>12.0f}")
    print(f"\nCPU us/call counts the load client and every server process together; {cores} cores can pay for at most "
          f"{cores} s of CPU per second, so on an otherwise idle machine calls/s <= {cores}e6 / (CPU us/call). "
          f"On a busy machine that bound, not the measured rate, is the comparable figure.")
    print()
    for level in levels:
        added = results[level]["master"]["p50_ms"] - results[level]["direct"]["p50_ms"]
        ratio = results[level]["master"]["calls_per_s"] / results[level]["direct"]["calls_per_s"]
        print(f"concurrency {level:>3}: the master adds {added:.3f} ms at p50; master/direct throughput {ratio:.2f}")
    added_1 = results[1]["master"]["p50_ms"] - results[1]["direct"]["p50_ms"]
    at_64 = results[64]["master"]["calls_per_s"]
    p99_512 = results[512]["master"]["p99_ms"]
    print()
    print(f"target: master adds <= 1 ms at p50 (concurrency 1): {added_1:.3f} ms "
          f"{'PASS' if added_1 <= 1.0 else 'FAIL'}")
    bound_64 = cores * 1e6 / results[64]["master"]["cpu_us"]
    print(f"target: >= 2,000 calls/s through the master at concurrency 64: {at_64:.0f}/s measured "
          f"({at_64 / 129:.1f}x the original's 129/s), CPU bound {bound_64:.0f}/s "
          f"{'PASS' if at_64 >= 2000 else 'FAIL (measured)' + (' / CPU bound PASS' if bound_64 >= 2000 else '')}")
    print(f"p99 at concurrency 512 through the master: {p99_512:.1f} ms (the original: 2,100 ms at 64)")


if __name__ == "__main__":
    main()
