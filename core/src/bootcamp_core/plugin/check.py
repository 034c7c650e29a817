"""Checking plugins: each one imported and registered in its own subprocess, so none can take the listing down.

A plugin that raises, hangs, calls ``os._exit`` or crashes the interpreter becomes one line saying so; the others are
still checked. ``bootcamp plugins --check`` and ``--json`` show the result.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import attrs

from bootcamp_core.plugin.loader import FAILED, PENDING, PluginInfo, Registry, installed_plugins

#: Seconds one plugin may take to import before it counts as hanging (PyBaMM-sized imports take a few).
CHECK_TIMEOUT_S = 300.0
#: Starts the one line of a subprocess's stdout that carries its report (a plugin may print at import).
REPORT_MARKER = "bootcamp-plugin-check:"

# sys.path is the parent's, so the child finds exactly the distributions the parent found
_CHILD = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from bootcamp_core.plugin.check import report_one\n"
    "report_one(sys.argv[2])\n"
)


def report_one(namespace: str) -> None:
    """In a check's subprocess: import plugin ``namespace`` and print what became of it as one marked JSON line."""
    logging.getLogger("bootcamp_core").disabled = True  # other plugins' warnings are not this check's to report
    info = Registry.from_entry_points(strict=False).load(namespace)
    if info is None:
        report = {"state": FAILED, "error": f'Plugin "{namespace}": no entry point has this name. '
                                            "Run `bootcamp plugins` to list installed bootcamps.", "duplicate": False, "components": {}}
    else:
        report = {"state": info.state, "error": info.error, "duplicate": info.duplicate,
                  "components": info.components, "package": info.package}
    sys.stdout.write("\n" + REPORT_MARKER + json.dumps(report) + "\n")
    sys.stdout.flush()


def check_plugins(plugins: list[PluginInfo] | None = None, *, timeout_s: float = CHECK_TIMEOUT_S,
                  max_workers: int | None = None) -> list[PluginInfo]:
    """``plugins`` (default: every installed one) with components or an error, each checked in a subprocess."""
    plugins = installed_plugins() if plugins is None else plugins
    pending = [info for info in plugins if info.state == PENDING]  # broken metadata needs no import to tell
    if not pending:
        return list(plugins)
    workers = max_workers or min(len(pending), os.cpu_count() or 1, 8)
    with ThreadPoolExecutor(workers) as pool:
        checked = dict(zip(map(id, pending), pool.map(lambda info: _check_one(info, timeout_s), pending)))
    return [checked.get(id(info), info) for info in plugins]


def _check_one(info: PluginInfo, timeout_s: float) -> PluginInfo:
    module = (info.module or info.namespace).split(":", 1)[0].strip()
    retry = f'Run python -c "import {module}" to see why, and reinstall it or report it to the plugin\'s authors.'
    # the plugins to check were chosen already: the child checks this one whatever the allow and block lists say
    env = {key: value for key, value in os.environ.items()
           if key not in ("BOOTCAMP_LOAD_PLUGINS", "BOOTCAMP_BLOCK_PLUGINS")}
    try:
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", _CHILD, json.dumps(sys.path), info.namespace],
            capture_output=True, text=True, errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL, env=env,
        )
    except subprocess.TimeoutExpired:
        return _failed(info, f"{info.label}: importing it did not finish within {timeout_s:g} s. {retry}")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(REPORT_MARKER):
            report = json.loads(line[len(REPORT_MARKER):])
            return attrs.evolve(info, state=report["state"], error=report["error"], duplicate=report["duplicate"],
                                components=report["components"], package=report.get("package"))
    if done.returncode < 0:
        try:
            how = signal.Signals(-done.returncode).name
        except ValueError:
            how = f"signal {-done.returncode}"
    else:
        how = f"exit code {done.returncode}"
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    # faulthandler's headline says more than the innermost frame it prints last
    headline = next((line for line in lines if line.startswith("Fatal Python error")), lines[-1] if lines else "")
    said = f": {headline[:300].rstrip('.')}" if headline else ""
    return _failed(info, f"{info.label}: importing it ended the interpreter ({how}){said}. {retry}")


def _failed(info: PluginInfo, message: str) -> PluginInfo:
    return attrs.evolve(info, state=FAILED, error=" ".join(message.split()), components={})

