"""Generation on Ray against a local run, in the same run: records/s of each, the overhead ratio, and the driver's
peak memory growth (it holds at most ``--ray-tasks`` ranges, so it stays flat as the record count grows).

    hatch run ray:bench [--records N] [--tasks 1,2,4]

A local Ray instance is started for the run (loopback, no dashboard) with as many CPUs as the machine has; on a
machine with few cores the throughput with more tasks in flight shows the driver's share, not the cluster's.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # keep a local instance on loopback
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback instance of its own: no token file written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tasks", default="1,2,4", help="ranges in flight, comma-separated")
    args = parser.parse_args()

    from bootcamp_core.data.generate import config_for_bootcamp, generate_many
    from bootcamp_core.plugin.loader import get_registry
    from bootcamp_core.scale.cluster import connected
    from bootcamp_core.scale.generate import generate_many as generate_on_ray

    registry = get_registry()
    config = config_for_bootcamp("example", registry, {"split_samples": {"train": args.records}})
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        generate_many([config], Path(scratch) / "local", registry=registry)
        local = args.records / (time.perf_counter() - started)
        print(f"local (one process): {local:,.0f} records/s")
        with connected(""):
            for tasks in (int(item) for item in args.tasks.split(",")):
                before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                started = time.perf_counter()
                generate_on_ray([config], Path(scratch) / f"ray{tasks}", in_flight=tasks, registry=registry)
                rate = args.records / (time.perf_counter() - started)
                grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
                same = (Path(scratch) / f"ray{tasks}" / "example_train.jsonl").read_bytes() == (
                    Path(scratch) / "local" / "example_train.jsonl").read_bytes()
                print(f"ray, {tasks} ranges in flight: {rate:,.0f} records/s ({rate / local:.2f}x local), "
                      f"driver peak memory +{grown:.0f} MiB, byte-identical: {same}")


if __name__ == "__main__":
    main()
