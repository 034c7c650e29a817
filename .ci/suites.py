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

Every suite runs against the installed wheels of its environment's workspace members, as the package index would
install them, not against the source tree: before the suite, each member's wheel is built (``hatch build -t wheel``,
once per run for every suite that needs it, about a second each) and installed into the suite's environment without
its dependencies (hatch has installed those); the runner then checks that each member's package is imported from the
environment's site-packages, not from the repository, and writes where from at the top of the suite's log. After
the suite, passed, failed or interrupted (Ctrl-C, SIGTERM: the suites are stopped first), the members are
re-installed editable, so a later ``hatch run`` sees the tree again. A build adds seconds, and every package's whole
suite runs against its wheel.

    BOOTCAMP_CI_WHEELS=0     run against the editable tree instead: the members are re-installed editable without
                             their dependencies (seconds), since hatch syncs an existing environment's dependencies
                             but not the metadata of the members it installed editable (a version bump or a new
                             entry point would otherwise stay invisible in an environment kept from an earlier run)
    BOOTCAMP_CI_REFRESH=0    install nothing: each suite runs against what its environment holds

``.ci/workflows.py run NAME`` (``bash .ci/run --package NAME``) runs its suites through :func:`run_suite` the same way.
A run killed outright (SIGKILL) leaves the wheels installed; the next run, or ``BOOTCAMP_CI_WHEELS=0`` with the
suite's name, puts the editable installs back.

Standard library only (and tomli on Python 3.10): it runs before any environment exists.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
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


def wheel_command(suite: str, wheels: list[Path]) -> list[str]:
    """The command that installs ``wheels`` into ``suite``'s environment in place of the editable members."""
    return ["hatch", "run", f"{suite}:uv", "pip", "install", "--quiet", "--no-deps", "--reinstall",
            *[str(wheel) for wheel in wheels]]


def package_of(member: str) -> str:
    """The import name of the package ``member`` (a folder relative to the root) ships in its wheel."""
    with open(ROOT / member / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)
    packages = project.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    packages = packages.get("packages", [])
    return Path(packages[0]).name if packages else project["project"]["name"].replace("-", "_")


# Run in the suite's environment (through `hatch run`, which reads braces as its context fields: none here): each
# package's location, one per line; exit 1 when one is the repository's
WHERE = """\
import importlib.util, pathlib, sys
root = pathlib.Path(sys.argv[1]).resolve()
bad = 0
for member, package in zip(sys.argv[2::2], sys.argv[3::2]):
    spec = importlib.util.find_spec(package)
    origin = pathlib.Path(spec.origin).resolve() if spec and spec.origin else None
    tree = origin is None or origin.is_relative_to(root / member) or 'site-packages' not in origin.parts
    bad |= tree
    print(('FROM THE TREE' if tree else 'wheel') + ': ' + package + ' from ' + str(origin))
sys.exit(bad)
"""


def where_command(config: dict, suite: str) -> list[str]:
    """The command that prints where ``suite``'s environment imports each member's package from, and fails when
    one comes from the repository rather than an installed wheel."""
    pairs = [arg for member in members(config, suite) for arg in (member, package_of(member))]
    return ["hatch", "run", f"{suite}:python", "-c", WHERE, str(ROOT), *pairs]


class Wheels:
    """Each workspace member's wheel, built once into ``folder`` (``hatch build -t wheel``) for every suite."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._built: dict[str, tuple[Path | None, bytes]] = {}

    def build(self, member: str) -> tuple[Path | None, bytes]:
        """``member``'s wheel (None when the build failed) and the build's output."""
        with self._lock:
            lock = self._locks.setdefault(member, threading.Lock())
        with lock:
            if member not in self._built:
                target = self.folder / member.replace("/", "-")
                # outside the hatch environment this may run in: each member builds as its own project
                env = {key: value for key, value in os.environ.items() if not key.startswith("HATCH_ENV")}
                env.pop("VIRTUAL_ENV", None)
                result = subprocess.run(["hatch", "build", "-t", "wheel", str(target)], cwd=ROOT / member, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
                wheels = sorted(target.glob("*.whl")) if result.returncode == 0 else []
                self._built[member] = (wheels[0] if len(wheels) == 1 else None, result.stdout)
            return self._built[member]


# Interrupting a run: the suites run in sessions of their own, so a signal reaches them only through stop()
_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()
_stopping = threading.Event()


def _call(command: list[str], out, stoppable: bool = True) -> int:
    """Run ``command`` from the root with its output to ``out``; an interrupted caller stops it first."""
    out.flush()
    process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    if stoppable:
        with _running_lock:
            _running.add(process)
    try:
        return process.wait()
    except BaseException:  # KeyboardInterrupt (or SIGTERM, turned into one) while this thread waits
        _stop([process])
        raise
    finally:
        with _running_lock:
            _running.discard(process)


def _stop(processes, grace: float = 30.0) -> None:
    """SIGINT to each process's session (pytest ends its run, hatch passes the exit on), SIGKILL after ``grace``."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGINT)
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def stop_all() -> None:
    """Stop every suite running now; their runners then put the editable installs back."""
    _stopping.set()
    with _running_lock:
        processes = list(_running)
    _stop(processes)


def _note(out, text: str) -> None:
    out.write(f"{text}\n".encode())
    out.flush()


def run_suite(name: str, out, config: dict, wheels: Wheels | None, refresh: bool = True) -> int:
    """Run suite ``name`` with its output to the binary file ``out``; its exit status.

    With ``wheels``, the suite runs against its members' installed wheels and the editable installs are put back
    afterwards, whatever happens; without, the members are re-installed editable first (``refresh``)."""
    restore = refresh_command(config, name) if refresh else None
    if restore is None or wheels is None:
        code = _call(restore, out) if restore else 0
        if code == 0 and not _stopping.is_set():
            code = _call(["hatch", "run", f"{name}:test"], out)
        return code
    built = []
    for member in members(config, name):
        wheel, log = wheels.build(member)
        if wheel is None:
            out.write(log)
            _note(out, f"error: the wheel of {member} did not build (hatch build -t wheel, above)")
            return 1
        built.append(wheel)
    if _stopping.is_set():
        return 130
    _note(out, f"{name}: against the installed wheels of {', '.join(wheel.name for wheel in built)}")
    try:
        code = _call(wheel_command(name, built), out)
        if code == 0:
            code = _call(where_command(config, name), out)
            if code != 0:
                _note(out, f"error: {name} would import a package from the repository, not from its wheel")
        if code == 0 and not _stopping.is_set():
            code = _call(["hatch", "run", f"{name}:test"], out)
    finally:
        # the tree again for a later `hatch run`, also after a failure or an interruption (never stopped midway)
        restored = _call(restore, out, stoppable=False)
        if restored != 0:
            _note(out, f"error: could not re-install {name}'s members editable: {' '.join(restore)}")
    return code or restored


def mode() -> tuple[bool, bool]:
    """(refresh, wheels) as ``BOOTCAMP_CI_REFRESH`` and ``BOOTCAMP_CI_WHEELS`` ask."""
    refresh = os.environ.get("BOOTCAMP_CI_REFRESH", "1") != "0"
    return refresh, refresh and os.environ.get("BOOTCAMP_CI_WHEELS", "1") != "0"


def load_config() -> dict:
    with open(ROOT / "hatch.toml", "rb") as handle:
        return tomllib.load(handle)


def _logged(name: str, logs: Path, config: dict, wheels: Wheels | None, refresh: bool) -> tuple[str, int, float, Path]:
    log = logs / f"{name}.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        code = run_suite(name, out, config, wheels, refresh)
    return name, code, time.monotonic() - started, log


def _terminate(signum, frame):
    raise KeyboardInterrupt


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
    refresh, wheel_mode = mode()
    against = "their installed wheels" if wheel_mode else "the editable tree" if refresh else "what is installed"
    print(f"running {len(chosen)} suites, {jobs} at a time, against {against}: {', '.join(chosen)}", flush=True)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    results = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bootcamp-suites-") as tmp:
        wheels = Wheels(Path(tmp) / "wheels") if wheel_mode else None
        pool = ThreadPoolExecutor(jobs)
        try:
            futures = [pool.submit(_logged, name, Path(tmp), config, wheels, refresh) for name in chosen]
            for future in as_completed(futures):
                name, code, seconds, log = future.result()
                print(f"\n===== {name}: {'passed' if code == 0 else f'FAILED (exit {code})'} in {seconds:.0f} s =====")
                sys.stdout.flush()
                with open(log, "rb") as handle:
                    sys.stdout.buffer.write(handle.read())
                sys.stdout.buffer.flush()
                results.append((name, code, seconds))
        except KeyboardInterrupt:
            print("\ninterrupted: stopping the suites" + (", then re-installing their members editable"
                                                         if wheel_mode else ""), file=sys.stderr, flush=True)
            pool.shutdown(wait=False, cancel_futures=True)
            stop_all()
            pool.shutdown(wait=True)
            return 130
        finally:
            pool.shutdown(wait=True)
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
