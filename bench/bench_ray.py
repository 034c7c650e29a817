"""Generation and evaluation on Ray against a local run, in the same run.

Generation: records/s of each, the overhead ratio, and the driver's peak resident memory above its level before
the run (it holds at most ``--ray-tasks`` ranges, so it stays flat as the record count grows: compare
``--records 100000`` with ``--records 1000000``). Evaluation: episodes/s of ``bootcamp eval``
locally and with ``--ray`` at the same number of episodes at once (the overhead ratio), then with 1, 2, 4 ...
actors of ``--per-actor`` episodes each (the scaling).

    hatch run ray:bench [--records N] [--tasks 1,2,4] [--episodes N] [--actors 1,2,4] [--latency S]

A local Ray instance is started for the run (loopback, no dashboard) with as many CPUs as the machine has; on a
machine with few cores the throughput with more tasks in flight shows the driver's share, not the cluster's.

The evaluation's endpoint is simulated: a scripted OpenAI-compatible server on loopback (in this process) that
answers every request after ``--latency`` seconds, as a model server under load would, and plays the example
bootcamp's calculator like a model (two requests an episode). An episode thus mostly waits, as with a real model,
and more actors run more episodes at once however few cores the machine has: the scaling shows what the pool
adds when the endpoint, not the CPUs, bounds each episode; actors beyond the CPUs share them.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep a local instance on loopback
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback instance of its own: no token file written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tasks", default="1,2,4", help="ranges in flight, comma-separated")
    parser.add_argument("--episodes", type=int, default=160, help="episodes of each evaluation run")
    parser.add_argument("--actors", default="1,2,4", help="pool sizes of the scaling runs, comma-separated")
    parser.add_argument("--per-actor", type=int, default=4, help="episodes at once per actor")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the simulated endpoint takes a request")
    args = parser.parse_args()

    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.scale.cluster import connected

    registry = get_registry()
    with tempfile.TemporaryDirectory() as scratch, connected(""):
        verdicts = bench_generation(args, registry, Path(scratch))
        verdicts += bench_evaluation(args, registry, Path(scratch))
    for line in verdicts:
        print(line)
    if any(line.startswith("FAIL") for line in verdicts):
        raise SystemExit(1)


class RssPeak:
    """The driver's peak resident memory above its level at entry, sampled every 20 ms (``/proc/self/statm``, so
    an earlier, higher peak of this process cannot hide growth the way ``ru_maxrss`` would); 0 where there is no
    ``/proc``."""

    def __init__(self) -> None:
        self.grown_mib = 0.0
        self._stop = threading.Event()

    @staticmethod
    def _rss() -> int:
        try:
            with open("/proc/self/statm") as handle:
                return int(handle.read().split()[1]) * resource.getpagesize()
        except OSError:
            return 0

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.grown_mib = max(self.grown_mib, (self._rss() - self._start) / 2**20)

    def __enter__(self) -> RssPeak:  # noqa: PYI034 (typing.Self needs Python 3.11)
        self._start = self._rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_generation(args: argparse.Namespace, registry: object, scratch: Path) -> list[str]:
    from bootcamp_core.data.generate import config_for_bootcamp, generate_many
    from bootcamp_core.scale.generate import generate_many as generate_on_ray

    config = config_for_bootcamp("example", registry, {"split_samples": {"train": args.records}})
    started = time.perf_counter()
    generate_many([config], scratch / "local", registry=registry)
    local = args.records / (time.perf_counter() - started)
    print(f"generate, local (one process): {local:,.0f} records/s")
    verdicts = []
    for tasks in (int(item) for item in args.tasks.split(",")):
        started = time.perf_counter()
        with RssPeak() as peak:
            generate_on_ray([config], scratch / f"ray{tasks}", in_flight=tasks, registry=registry)
        rate = args.records / (time.perf_counter() - started)
        grown = peak.grown_mib
        same = (scratch / f"ray{tasks}" / "example_train.jsonl").read_bytes() == (
            scratch / "local" / "example_train.jsonl").read_bytes()
        print(f"generate, ray, {tasks} ranges in flight: {rate:,.0f} records/s ({rate / local:.2f}x local), "
              f"driver peak memory +{grown:.0f} MiB, byte-identical: {same}")
        verdicts.append(f"{'PASS' if same else 'FAIL'} generate --ray, {tasks} ranges in flight: byte-identical")
    return verdicts


def _solver(latency: float):
    """A model that plays the example calculator: call it on the expression, then answer its output."""
    from bootcamp_core.testing.chat_server import Reply, first_user_text

    def script(request: dict):
        output = next((message.get("content") for message in reversed(request.get("messages") or [])
                       if message.get("role") == "tool"), None)
        if output is None:
            expression = first_user_text(request).split("\n\n")[1]
            return Reply.calls(("calculator", {"expression": expression}), delay_s=latency)
        return Reply.text(f'```json\n{{"result": {output}}}\n```', delay_s=latency)

    return script


def bench_evaluation(args: argparse.Namespace, registry: object, scratch: Path) -> list[str]:
    import ray

    from bootcamp_core.data.generate import config_for_bootcamp, generate
    from bootcamp_core.evaluate.config import EvalConfig
    from bootcamp_core.evaluate.run import run_evaluation
    from bootcamp_core.scale.cluster import cluster_cpus
    from bootcamp_core.scale.evaluate import RayEpisodes
    from bootcamp_core.testing.chat_server import ScriptedChatServer

    config = config_for_bootcamp("example", registry, {"split_samples": {"test": args.episodes}}, name="example")
    generate(config, scratch / "data", registry=registry)
    dataset = scratch / "data" / "example_test.jsonl"
    runs = iter(range(1_000))
    per_actor = args.per_actor
    print(f"eval: {args.episodes} episodes of 2 requests each, the simulated endpoint answering after "
          f"{args.latency * 1000:.0f} ms; {cluster_cpus(ray)} CPUs in the Ray instance")

    class TimedPool(RayEpisodes):
        """The pool, noting when its actors are up: their start (a process each, importing the bootcamps) is
        reported apart from the episodes' throughput."""

        async def start(self, *start_args: object) -> int:
            began = time.perf_counter()
            concurrent = await super().start(*start_args)
            self.ready_at = time.perf_counter()
            self.start_s = self.ready_at - began
            return concurrent

    with ScriptedChatServer(_solver(args.latency)) as server:

        def rate(concurrent: int, runner: TimedPool | None = None) -> float:
            out = scratch / f"eval{next(runs)}"
            eval_config = EvalConfig(dataset_path=dataset, output_dir=out, api_url=server.base_url, api_model="stub",
                                     max_concurrent=concurrent, preflight=False)
            started = time.perf_counter()
            summary = run_evaluation(eval_config, registry=registry, progress=False, runner=runner)
            ended = time.perf_counter()
            assert summary["overall"]["successes"] == args.episodes, summary["overall"]
            if runner is not None:
                print(f"  (the pool of {runner.actors} actors started in {runner.start_s:.1f} s, not counted)")
                started = runner.ready_at
            return args.episodes / (ended - started)

        pool = 2 * per_actor
        local = rate(pool)
        print(f"eval, local, {pool} episodes at once: {local:,.1f} episodes/s")
        on_ray = rate(pool, TimedPool(ray, actors=2, concurrency=per_actor))
        overhead = on_ray / local
        print(f"eval, ray, 2 actors x {per_actor}: {on_ray:,.1f} episodes/s ({overhead:.2f}x local at the same "
              "episodes at once)")
        scaling = {}
        for actors in (int(item) for item in args.actors.split(",")):
            scaling[actors] = rate(actors * per_actor, TimedPool(ray, actors=actors, concurrency=per_actor))
        base = min(scaling)
        for actors, value in scaling.items():
            print(f"eval, ray, {actors} actors x {per_actor}: {value:,.1f} episodes/s ({value / scaling[base]:.2f}x "
                  f"{base} actor{'s' if base > 1 else ''}; ideal {actors / base:.0f}x)")
    top = max(scaling)
    growth = scaling[top] / scaling[base]
    target = 0.5 * top / base
    return [
        (f"{'PASS' if overhead >= OVERHEAD_TARGET else 'FAIL'} eval --ray at the same episodes at once: "
         f"{overhead:.2f}x local (target >= {OVERHEAD_TARGET}x)"),
        (f"{'PASS' if growth >= target else 'FAIL'} eval --ray, {top} actors against {base}: {growth:.2f}x "
         f"(target >= {target:.1f}x, half the ideal)"),
    ]


#: Ray's share of an endpoint-bound episode: its throughput at the same episodes at once, at least this share of local.
OVERHEAD_TARGET = 0.7


if __name__ == "__main__":
    main()
