"""Tool-server benchmark, measured as users run it: the load client in a process of its own, one and two workers.

A trivial tool (bootcamp-example's calculator on "1 + 1") executed on pre-created instances, one per concurrent
caller, at concurrency 1 / 16 / 64 / 512, with the project's own client (``bootcamp_core.serve.client``) as the load
generator in a separate process (``--load``), as an evaluation would be. The server is ``bootcamp serve`` in unified
mode with one worker, then with two. For each, side by side in one run:

- direct: load client -> worker(s) (with two workers the callers are split between them): the baseline;
- master: load client -> master -> worker(s).

Printed per row: calls/s, p50/p99 latency, and CPU per call of the master, of the workers and of the load client,
read from ``/proc`` over the measured window only (creates and warm-up excluded).

Targets (two workers, through the master): calls/s at 512 >= 0.9 x calls/s at 64; the master's CPU per call at 512
within 1.2 x its value at 64. Then 4,096 concurrent episodes: 4,096 instances created at once through one master with
two workers, each executed, scored and released, all concurrent, with no failed call.

Run: ``python bench/bench_tool_server.py`` (``--quick`` for fewer calls, ``--workers 2`` for one configuration).
Never part of the test suite. The machine's other load moves every figure; the ratios compare rows measured
minutes apart in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

LEVELS = (1, 16, 64, 512)
EPISODES = 4096
TOOL = "example/calculator"
ARGS = {"expression": "1 + 1"}


# ------------------------------------------------------------------------------------------- the load process
async def load(urls: list[str], concurrency: int, calls: int) -> dict:
    """Run in the load process: create ``concurrency`` instances (round robin over ``urls``), warm them, wait for
    the word on stdin, then ``calls`` executes from ``concurrency`` lanes; the figures as JSON on stdout."""
    from bootcamp_core.serve.client import ToolServerClient

    clients = [ToolServerClient(url, max_connections=max(concurrency, 64)) for url in urls]
    tools = [client.tool(TOOL) for client in clients]
    lanes = [tools[index % len(tools)] for index in range(concurrency)]
    instances = await asyncio.gather(*(tool.create(identity={}) for tool in lanes))
    await asyncio.gather(*(tool.execute(instance, ARGS) for tool, instance in zip(lanes, instances)))
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    latencies: list[float] = []
    left = [calls]

    async def lane(tool, instance: str) -> None:
        while left[0] > 0:
            left[0] -= 1
            started = time.perf_counter()
            await tool.execute(instance, ARGS)
            latencies.append(time.perf_counter() - started)

    cpu = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(lane(tool, instance) for tool, instance in zip(lanes, instances)))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    print(json.dumps({"elapsed_s": elapsed, "calls": len(latencies), "client_cpu_s": cpu,
                      "p50_ms": 1000 * _quantile(latencies, 0.5), "p99_ms": 1000 * _quantile(latencies, 0.99)}),
          flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # after the CPU was read
    await asyncio.gather(*(tool.release(instance) for tool, instance in zip(lanes, instances)))
    for client in clients:
        await client.aclose()
    return {}


async def episodes(url: str, count: int) -> dict:
    """Run in the load process: ``count`` episodes at once, each create, execute, calc_reward, release, phase by
    phase so that every instance is held at the same time (the master's ``/health`` counts them then)."""
    from bootcamp_core.serve.client import ToolServerClient

    client = ToolServerClient(url, max_connections=count)
    tool = client.tool(TOOL)
    failures: list[str] = []

    def failed(outcome: object) -> bool:
        if isinstance(outcome, BaseException):
            failures.append(f"{type(outcome).__name__}: {outcome}")
            return True
        return False

    started = time.perf_counter()
    created = await asyncio.gather(*(tool.create(identity={}) for _ in range(count)), return_exceptions=True)
    instances = [instance for instance in created if not failed(instance)]
    answers = await asyncio.gather(*(tool.execute(instance, ARGS) for instance in instances), return_exceptions=True)
    for answer in answers:
        if not failed(answer) and answer[0] != "2":
            failures.append(f"execute answered {answer[0]!r}")
    held = (await client.health()).get("instances")
    for outcome in await asyncio.gather(*(tool.calc_reward(instance) for instance in instances),
                                        return_exceptions=True):
        failed(outcome)
    for outcome in await asyncio.gather(*(tool.release(instance) for instance in instances), return_exceptions=True):
        failed(outcome)
    elapsed = time.perf_counter() - started
    after = (await client.health()).get("instances")
    await client.aclose()
    return {"episodes": count, "failed": len(failures), "first_failures": failures[:3], "elapsed_s": elapsed,
            "held_peak": held, "instances_after": after}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


# ------------------------------------------------------------------------------------------- the benchmark
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(workers: int) -> tuple[subprocess.Popen, dict]:
    import httpx

    port = free_port()
    env = {**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example"}
    process = subprocess.Popen([sys.executable, "-m", "bootcamp_core.cli.main", "serve", "--port", str(port),
                                "--num-workers", str(workers), "--bootcamps", "example"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            status = httpx.get(url + "/health", timeout=2).json()
            if status["ready"]:
                return process, {"url": url, "pid": status["host"]["pid"],
                                 "workers": [(w["url"], w["host"]["pid"]) for w in status["workers"] if w["alive"]]}
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not become ready")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load_process(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "BOOTCAMP_LOAD_PLUGINS": "example"})


def measure(urls: list[str], concurrency: int, calls: int, master_pid: int | None, worker_pids: list[int]) -> dict:
    """One row: the load process warms up, then the CPU of the server processes is read around its measured run."""
    client = _load_process("--load", ",".join(urls), "--concurrency", str(concurrency), "--calls", str(calls))
    try:
        line = client.stdout.readline()
        if line.strip() != "READY":
            raise SystemExit(f"the load process failed: {line!r}")
        master_cpu = cpu_seconds(master_pid) if master_pid else 0.0
        worker_cpu = sum(cpu_seconds(pid) for pid in worker_pids)
        client.stdin.write("go\n")
        client.stdin.flush()
        result = json.loads(client.stdout.readline())
        master_cpu = (cpu_seconds(master_pid) if master_pid else 0.0) - master_cpu
        worker_cpu = sum(cpu_seconds(pid) for pid in worker_pids) - worker_cpu
        client.stdin.write("done\n")
        client.stdin.flush()
        client.wait(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
    calls_done = result["calls"]
    return {
        "calls_per_s": calls_done / result["elapsed_s"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "master_us": 1e6 * master_cpu / calls_done if master_pid else None,
        "workers_us": 1e6 * worker_cpu / calls_done,
        "client_us": 1e6 * result["client_cpu_s"] / calls_done,
    }


def _median_row(rows: list[dict]) -> dict:
    """Each figure's median over repeated measurements of one row."""
    return {key: None if rows[0][key] is None else statistics.median(row[key] for row in rows) for key in rows[0]}


def run_configuration(workers: int, calls: int, rounds: int, with_episodes: bool) -> tuple[dict, dict | None]:
    """Every row; the rows the targets compare (64 and 512) are measured ``rounds`` times, alternating, and each
    figure is the median: the machine's other load drifts, and alternation spreads it over both levels alike."""
    process, server = start_server(workers)
    try:
        worker_urls = [url for url, _ in server["workers"]]
        worker_pids = [pid for _, pid in server["workers"]]
        samples: dict = {level: {"direct": [], "master": []} for level in LEVELS}
        schedule = [1, 16] + [64, 512] * rounds
        for level in schedule:
            n = max(calls // 4, 500) if level == 1 else calls  # one caller at a time: fewer calls, same precision
            samples[level]["direct"].append(measure(worker_urls, level, n, None, worker_pids))
            samples[level]["master"].append(measure([server["url"]], level, n, server["pid"], worker_pids))
        rows = {level: {path: _median_row(found) for path, found in paths.items()} for level, paths in samples.items()}
        held = None
        if with_episodes:
            client = _load_process("--episodes", server["url"], "--concurrency", str(EPISODES))
            out, _ = client.communicate(timeout=600)
            held = json.loads(out.strip().splitlines()[-1])
        return rows, held
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def _fmt(value: float | None, width: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per row")
    parser.add_argument("--workers", type=int, action="append", help="worker counts to run (default: 1 and 2)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="alternating measurements of the 64 and 512 rows, medians reported (default: 3; 2 quick)")
    parser.add_argument("--load", help=argparse.SUPPRESS)  # the load process: comma-separated URLs
    parser.add_argument("--episodes", help=argparse.SUPPRESS)  # the load process of the 4,096-episode check
    parser.add_argument("--concurrency", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        asyncio.run(load(args.load.split(","), args.concurrency, args.calls))
        return
    if args.episodes:
        print(json.dumps(asyncio.run(episodes(args.episodes, args.concurrency))))
        return

    calls = 3000 if args.quick else 10000
    rounds = args.rounds or (2 if args.quick else 3)
    configurations = args.workers or [1, 2]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"{cores} CPU cores; load client in its own process; {calls} calls per row (a quarter at concurrency 1); "
          f"rows 64 and 512 are medians of {rounds} alternating measurements")
    results, held = {}, None
    for workers in configurations:
        results[workers], this_held = run_configuration(workers, calls, rounds, with_episodes=workers == 2)
        held = this_held or held
        print(f"\n{workers} worker(s)")
        print(f"{'concurrency':>11} {'path':>7} {'calls/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'master us/call':>15} "
              f"{'workers us/call':>16} {'client us/call':>15}")
        for level in LEVELS:
            for path, row in results[workers][level].items():
                print(f"{level:>11} {path:>7} {row['calls_per_s']:>8.0f} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.1f} "
                      f"{_fmt(row['master_us'], 15)} {_fmt(row['workers_us'], 16)} {_fmt(row['client_us'], 15)}",
                      flush=True)
        for level in LEVELS:
            master, direct = results[workers][level]["master"], results[workers][level]["direct"]
            print(f"  concurrency {level:>3}: master/direct calls/s {master['calls_per_s'] / direct['calls_per_s']:.2f}, "
                  f"the master adds {master['p50_ms'] - direct['p50_ms']:.2f} ms at p50")
    print()
    for workers in configurations:
        rows = results[workers]
        rate = rows[512]["master"]["calls_per_s"] / rows[64]["master"]["calls_per_s"]
        cpu = rows[512]["master"]["master_us"] / rows[64]["master"]["master_us"]
        label = "target" if workers == 2 else "(one worker, for reference)"
        print(f"{label}: {workers} worker(s), through the master calls/s at 512 >= 0.9 x at 64: "
              f"{rows[512]['master']['calls_per_s']:.0f} vs {rows[64]['master']['calls_per_s']:.0f} = {rate:.2f} "
              f"{'PASS' if rate >= 0.9 else 'FAIL'}")
        print(f"{label}: {workers} worker(s), master CPU per call at 512 <= 1.2 x at 64: "
              f"{rows[512]['master']['master_us']:.0f} vs {rows[64]['master']['master_us']:.0f} us = {cpu:.2f} "
              f"{'PASS' if cpu <= 1.2 else 'FAIL'}")
    if held is not None:
        ok = held["failed"] == 0 and held["held_peak"] >= EPISODES and held["instances_after"] == 0
        print(f"target: {EPISODES} concurrent episodes through one master with two workers, no failed call: "
              f"{held['failed']} failed, {held['held_peak']} instances held at the peak, {held['instances_after']} "
              f"left after, {held['elapsed_s']:.1f} s {'PASS' if ok else 'FAIL'}"
              + (f" {held['first_failures']}" if held["failed"] else ""))


if __name__ == "__main__":
    main()
