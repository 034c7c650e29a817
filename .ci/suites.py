"""Run every test suite of the monorepo: each hatch environment that defines a ``test`` script, matrices expanded.

This is what ``hatch run test:all`` runs. The suites are independent processes (one hatch environment each), so they
run side by side, as many at once as the machine has cores (``--jobs N`` or ``BOOTCAMP_CI_JOBS`` to change it;
``--jobs 1`` runs them one after another). Each suite's output goes to a log and is printed whole when the suite
ends, so logs never interleave; the last lines are a table of every suite with its exit status and wall time. The
exit status is 0 only when every suite passed.

    python .ci/suites.py                 every suite
    python .ci/suites.py --list          the suites, one per line, and nothing run
    python .ci/suites.py core verl       only these (names as --list prints them)
    python .ci/suites.py --members core  an environment's workspace members, one path per line

Before a suite runs, its environment's workspace members are re-installed editable without their dependencies
(seconds): hatch syncs an existing environment's dependencies but not the metadata of the members it installed
editable, so a version bump or a new entry point would otherwise stay invisible in an environment kept from an
earlier run (``BOOTCAMP_CI_REFRESH=0`` skips this).

Standard library only (and tomli on Python 3.10): it runs before any environment exists.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the test environment installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
# The slowest suites first, so that two long ones never end up running last on their own; unknown suites go after.
LONGEST_FIRST = (
    "bootcamp.bootcamp-battery-design",
    "core",
    "bootcamp.bootcamp-texas-holdem",
    "verl",
    "bootcamp.bootcamp-bot-trajectory",
)


def suites(config: dict) -> list[str]:
    """Every environment with a ``test`` script, a matrix expanded into one suite per entry (``env.value``)."""
    names: list[str] = []
    for env, table in config.get("envs", {}).items():
        if env == "test" or "test" not in table.get("scripts", {}):
            continue
        matrix = table.get("matrix")
        if not matrix:
            names.append(env)
            continue
        for entry in matrix:
            # one variable per matrix entry in this repository; several would join as hatch does: env.a-b
            values = [entry[key] for key in entry]
            combos = [[]]
            for value in values:
                combos = [combo + [item] for combo in combos for item in (value if isinstance(value, list) else [value])]
            names.extend(f"{env}.{'-'.join(combo)}" for combo in combos)
    order = {name: i for i, name in enumerate(LONGEST_FIRST)}
    return sorted(names, key=lambda name: order.get(name, len(order)))


def members(config: dict, suite: str) -> list[str]:
    """The workspace members of ``suite``'s environment as paths relative to the root (globs and matrix expanded)."""
    env, _, variant = suite.partition(".")
    table = config.get("envs", {}).get(env, {})
    values: dict[str, str] = {}
    if variant:
        entry = next((entry for entry in table.get("matrix", []) if len(entry) == 1), {})
        values = {key: variant for key in entry}
    paths: list[str] = []
    for member in table.get("workspace", {}).get("members", []):
        pattern = member["path"] if isinstance(member, dict) else member
        for key, value in values.items():
            pattern = pattern.replace(f"{{matrix:{key}}}", value)
        found = sorted(path for path in ROOT.glob(pattern) if (path / "pyproject.toml").is_file())
        paths.extend(str(path.relative_to(ROOT)) for path in found)
    return paths


def refresh_command(config: dict, suite: str) -> list[str] | None:
    """The command that re-installs ``suite``'s members editable with their current metadata, or None."""
    paths = members(config, suite)
    if not paths:
        return None
    editable = [arg for path in paths for arg in ("-e", path)]
    return ["hatch", "run", f"{suite}:uv", "pip", "install", "--quiet", "--no-deps", "--reinstall", *editable]


def load_config() -> dict:
    with open(ROOT / "hatch.toml", "rb") as handle:
        return tomllib.load(handle)


def run_suite(name: str, logs: Path, refresh: list[str] | None = None) -> tuple[str, int, float, Path]:
    log = logs / f"{name}.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        code = 0
        if refresh:
            code = subprocess.call(refresh, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        if code == 0:
            code = subprocess.call(["hatch", "run", f"{name}:test"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    return name, code, time.monotonic() - started, log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the monorepo's test suites, side by side.")
    parser.add_argument("names", nargs="*", help="suites to run (default: all of them)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("BOOTCAMP_CI_JOBS", "0") or 0),
                        help="suites at once (default: the number of CPU cores)")
    parser.add_argument("--list", action="store_true", help="print the suites and exit")
    parser.add_argument("--members", metavar="SUITE", help="print SUITE's workspace members and exit")
    args = parser.parse_args(argv)
    config = load_config()
    known = suites(config)
    if args.list:
        print("\n".join(known))
        return 0
    if args.members:
        if args.members not in known:
            print(f"error: unknown suite {args.members!r}; the suites are: {', '.join(known)}", file=sys.stderr)
            return 2
        print("\n".join(members(config, args.members)))
        return 0
    unknown = [name for name in args.names if name not in known]
    if unknown:
        print(f"error: unknown suite {unknown[0]!r}; the suites are: {', '.join(known)}", file=sys.stderr)
        return 2
    chosen = [name for name in known if name in args.names] if args.names else known
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(chosen)))
    print(f"running {len(chosen)} suites, {jobs} at a time: {', '.join(chosen)}", flush=True)
    results = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bootcamp-suites-") as tmp, ThreadPoolExecutor(jobs) as pool:
        refresh = os.environ.get("BOOTCAMP_CI_REFRESH", "1") != "0"
        futures = [pool.submit(run_suite, name, Path(tmp), refresh_command(config, name) if refresh else None)
                   for name in chosen]
        for future in as_completed(futures):
            name, code, seconds, log = future.result()
            print(f"\n===== {name}: {'passed' if code == 0 else f'FAILED (exit {code})'} in {seconds:.0f} s =====")
            sys.stdout.flush()
            with open(log, "rb") as handle:
                sys.stdout.buffer.write(handle.read())
            sys.stdout.buffer.flush()
            results.append((name, code, seconds))
    results.sort(key=lambda result: chosen.index(result[0]))
    print(f"\n{'suite':<40} {'result':<10} {'seconds':>8}")
    for name, code, seconds in results:
        print(f"{name:<40} {'passed' if code == 0 else f'exit {code}':<10} {seconds:>8.0f}")
    failed = [name for name, code, _ in results if code != 0]
    print(f"{len(results) - len(failed)} of {len(results)} suites passed in {time.monotonic() - started:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
