"""The CI's suite runner finds every test suite of the repository and refuses names it does not know."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / ".ci" / "suites.py"


def run(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(RUNNER), *args]
    return subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_every_package_of_the_repository_has_a_suite():
    listed = run("--list")
    assert listed.returncode == 0, listed.stderr
    suites = listed.stdout.split()
    bootcamps = sorted(path.name for path in ROOT.glob("bootcamp-*") if (path / "pyproject.toml").is_file())
    assert bootcamps, "no bootcamp package found"
    for name in bootcamps:
        assert f"bootcamp.{name}" in suites, f"{name} is tested by no suite"
    for name in ("core", "all", "verl"):
        assert name in suites
    assert len(suites) == len(set(suites))
    # the slowest suites start first
    assert suites[0] == "bootcamp.bootcamp-battery-design"


def test_an_unknown_suite_is_a_usage_error_and_runs_nothing():
    result = run("no-such-suite")
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown suite 'no-such-suite'")
    assert "running" not in result.stdout


def test_members_lists_each_suites_workspace_packages_with_the_matrix_expanded():
    """The runner re-installs these before a suite, so the metadata in use (version, entry points) is the tree's."""
    core = run("--members", "core")
    assert core.returncode == 0, core.stderr
    assert core.stdout.split() == ["core", "bootcamp-example"]
    alone = run("--members", "bootcamp.bootcamp-texas-holdem")
    assert alone.stdout.split() == ["core", "bootcamp-texas-holdem"]
    verl = run("--members", "verl").stdout.split()
    assert "plugins/verl" in verl and "core" in verl
    every = run("--members", "all").stdout.split()
    bootcamps = sorted(path.name for path in ROOT.glob("bootcamp-*") if (path / "pyproject.toml").is_file())
    assert set(bootcamps) <= set(every)
    assert run("--members", "nope").returncode == 2
