"""The CI's suite runner finds every test suite of the repository and refuses names it does not know, and runs each
suite against its members' installed wheels (not the editable tree), putting the editable installs back after the
suite, whether it passed, failed or was interrupted. ``BOOTCAMP_CI_WHEELS=0`` runs against the editable tree
(re-installed first), ``BOOTCAMP_CI_REFRESH=0`` against what is installed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


# Wheel mode, on a throwaway monorepo of one package with the runner copied in: the suite's own process reports what
# it imported, then the test looks at the environment the runner left behind.
TINY_CHECK = """\
import importlib.metadata, json, os, pathlib, sys, time
import tiny
install = json.loads(importlib.metadata.distribution("tiny-pkg").read_text("direct_url.json"))
pathlib.Path("seen.json").write_text(json.dumps({"file": tiny.__file__, "install": install}))
mode = os.environ.get("TINY_MODE", "pass")
if mode == "sleep":
    time.sleep(120)
sys.exit(3 if mode == "fail" else 0)
"""


def tiny_environment(project: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HATCH_ENV", "BOOTCAMP_CI"))}
    env.pop("VIRTUAL_ENV", None)
    env["HATCH_DATA_DIR"] = str(project.parent / "hatch-data")  # its environments stay in the test's folder
    return {**env, **extra}


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory) -> Path:
    """A root with hatch.toml, the runner, and one workspace member ``pkg`` (distribution tiny-pkg, package tiny)."""
    assert shutil.which("hatch"), "hatch is not on PATH"
    project = tmp_path_factory.mktemp("tiny") / "repo"
    (project / ".ci").mkdir(parents=True)
    shutil.copy(RUNNER, project / ".ci" / "suites.py")
    (project / "pyproject.toml").write_text("# a monorepo root: its packages are the members\n", encoding="utf-8")
    (project / "hatch.toml").write_text(
        '[envs.default]\ninstaller = "uv"\nskip-install = true\ndependencies = ["uv>=0.4"]\n\n'
        '[envs.tiny]\nworkspace.members = ["pkg"]\n\n[envs.tiny.scripts]\ntest = "python check.py"\n',
        encoding="utf-8")
    (project / "check.py").write_text(TINY_CHECK, encoding="utf-8")
    (project / "pkg" / "src" / "tiny").mkdir(parents=True)
    (project / "pkg" / "src" / "tiny" / "__init__.py").write_text('"""A throwaway package."""\n', encoding="utf-8")
    (project / "pkg" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "tiny-pkg"\nversion = "0.1"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["src/tiny"]\n', encoding="utf-8")
    created = subprocess.run(["hatch", "env", "create", "tiny"], cwd=project, env=tiny_environment(project),
                             capture_output=True, text=True, timeout=300, check=False)
    assert created.returncode == 0, created.stdout + created.stderr
    return project


def run_tiny(project: Path, **extra: str) -> subprocess.CompletedProcess:
    (project / "seen.json").unlink(missing_ok=True)
    return subprocess.run([sys.executable, ".ci/suites.py", "tiny"], cwd=project, env=tiny_environment(project, **extra),
                          capture_output=True, text=True, timeout=300, check=False)


def seen(project: Path) -> dict:
    """What the suite's own process imported and how its distribution was installed (direct_url.json)."""
    return json.loads((project / "seen.json").read_text(encoding="utf-8"))


def installed_now(project: Path) -> dict:
    """How the environment holds tiny-pkg after the runner is done: the location of tiny and its direct_url.json."""
    probe = ("import importlib.metadata, json, tiny; print(json.dumps([tiny.__file__, json.loads("
             "importlib.metadata.distribution('tiny-pkg').read_text('direct_url.json'))]))")
    # through a file: hatch reads the braces of a command line as its own context fields
    (project / "probe.py").write_text(probe, encoding="utf-8")
    result = subprocess.run(["hatch", "run", "tiny:python", "probe.py"], cwd=project, env=tiny_environment(project),
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    where, install = json.loads(result.stdout.strip().splitlines()[-1])
    return {"file": where, "install": install}


def assert_editable(project: Path) -> None:
    now = installed_now(project)
    assert Path(now["file"]).resolve().is_relative_to((project / "pkg" / "src").resolve()), now
    assert now["install"].get("dir_info", {}).get("editable") is True, now


@pytest.mark.slow
def test_a_suite_runs_against_its_members_installed_wheel_and_the_editable_install_comes_back(tiny_project: Path):
    result = run_tiny(tiny_project)
    assert result.returncode == 0, result.stdout + result.stderr
    during = seen(tiny_project)
    assert "site-packages" in Path(during["file"]).parts, during
    assert during["install"]["url"].endswith(".whl") and "archive_info" in during["install"], during
    # the runner's own proof, in the suite's log
    assert "against the installed wheels of tiny_pkg-0.1-" in result.stdout, result.stdout
    assert "wheel: tiny from " in result.stdout and "FROM THE TREE" not in result.stdout, result.stdout
    assert_editable(tiny_project)


@pytest.mark.slow
def test_the_editable_install_comes_back_after_a_failing_suite(tiny_project: Path):
    result = run_tiny(tiny_project, TINY_MODE="fail")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "tiny: FAILED (exit 3)" in result.stdout, result.stdout
    assert "site-packages" in Path(seen(tiny_project)["file"]).parts
    assert_editable(tiny_project)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_stops_the_suite_and_puts_the_editable_install_back(tiny_project: Path, signum):
    (tiny_project / "seen.json").unlink(missing_ok=True)
    runner = subprocess.Popen([sys.executable, ".ci/suites.py", "tiny"], cwd=tiny_project,
                              env=tiny_environment(tiny_project, TINY_MODE="sleep"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):  # the suite is sleeping once it has written what it imported
            if (tiny_project / "seen.json").is_file() or runner.poll() is not None:
                break
            time.sleep(0.1)
        assert runner.poll() is None, runner.communicate()
        assert "site-packages" in Path(seen(tiny_project)["file"]).parts
        runner.send_signal(signum)
        # the suite sleeps for two minutes: an exit well before means it was stopped
        out, err = runner.communicate(timeout=90)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 130, out + err
    assert "interrupted: stopping the suites, then re-installing their members editable" in err, err
    assert_editable(tiny_project)


@pytest.mark.slow
def test_without_wheels_the_suite_runs_against_the_editable_tree(tiny_project: Path):
    result = run_tiny(tiny_project, BOOTCAMP_CI_WHEELS="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "against the editable tree" in result.stdout
    during = seen(tiny_project)
    assert Path(during["file"]).resolve().is_relative_to((tiny_project / "pkg" / "src").resolve()), during
    assert during["install"]["dir_info"]["editable"] is True, during
    # BOOTCAMP_CI_REFRESH=0 installs nothing: the suite runs against what the environment holds (editable here)
    kept = run_tiny(tiny_project, BOOTCAMP_CI_REFRESH="0")
    assert kept.returncode == 0 and "against what is installed" in kept.stdout, kept.stdout + kept.stderr
    assert seen(tiny_project)["install"]["dir_info"]["editable"] is True
