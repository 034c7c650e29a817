"""Per-package CI: one workflow per distribution, generated from one template (.ci/workflows.py), each running
`bash .ci/run --package NAME`: that package's tests beside core, its conformance check and core's contract tests."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"ci_{name}", REPO / ".ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


workflows = load("workflows")


def test_every_distribution_has_its_workflow_and_none_drifted():
    assert workflows.problems(REPO) == []
    found = workflows.distributions(REPO)
    on_disk = {path.parent.relative_to(REPO).as_posix() for pattern in ("*/pyproject.toml", "plugins/*/pyproject.toml")
               for path in REPO.glob(pattern)}
    assert {dist.folder for dist in found} == on_disk
    assert {"bootcamp-core", "bootcamp-example", "bootcamp-verl"} <= {dist.name for dist in found}


def test_each_workflow_runs_on_its_folder_or_core_and_calls_ci_run_for_its_package():
    suites = load("suites").suites(load("suites").load_config())
    for dist in workflows.distributions(REPO):
        document = yaml.safe_load((REPO / ".github/workflows" / f"{dist.name}.yml").read_text(encoding="utf-8"))
        triggers = document[True]  # YAML 1.1 reads the key `on` as true
        for event in ("push", "pull_request"):
            assert {f"{dist.folder}/**", "core/**"} <= set(triggers[event]["paths"]), (dist.name, event)
        runs = [step["run"] for step in document["jobs"]["test"]["steps"] if "run" in step]
        assert runs == [f"bash .ci/run --package {dist.name}"]
        # what .ci/run --package runs: the very suites `hatch run test:all` runs for it, then its checks
        steps = workflows.commands(dist)
        assert dist.env in suites and steps[0] == ["hatch", "run", f"{dist.env}:test"]
        assert steps[1:1 + len(dist.more_envs)] == [["hatch", "run", f"{env}:test"] for env in dist.more_envs]
        checks = [step[-1] for step in steps if step[2:4] == [f"{dist.env}:bootcamp", "check"]]
        assert checks == dist.namespaces
        if dist.name != "bootcamp-core":
            assert steps[-1][-len(workflows.CONTRACT_TESTS):] == list(workflows.CONTRACT_TESTS)
        assert all((REPO / path).is_file() for path in workflows.CONTRACT_TESTS)


def test_every_suite_of_the_full_run_but_the_cross_package_one_is_in_some_package_workflow():
    # a package's own CI misses none of its suites: core's runs its Ray suite (core/tests_ray) too
    suites = load("suites").suites(load("suites").load_config())
    run_by = {}
    for dist in workflows.distributions(REPO):
        for step in workflows.commands(dist):
            if step[:2] == ["hatch", "run"] and step[2].endswith(":test") and len(step) == 3:
                run_by.setdefault(step[2].removesuffix(":test"), []).append(dist.name)
    assert set(suites) - set(run_by) == {"all"}, run_by  # `all` is tests/: every package together, no package's own
    assert all(len(names) == 1 for names in run_by.values()), run_by
    assert run_by["ray"] == ["bootcamp-core"] and run_by["core"] == ["bootcamp-core"]


def test_drift_a_missing_workflow_a_stray_one_and_a_package_without_environment_are_reported(tmp_path: Path):
    shutil.copy(REPO / "hatch.toml", tmp_path / "hatch.toml")
    for folder in ("core", "bootcamp-example"):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / "pyproject.toml", tmp_path / folder / "pyproject.toml")
    (tmp_path / "bootcamp-new").mkdir()
    (tmp_path / "bootcamp-new/pyproject.toml").write_text('[project]\nname = "bootcamp-new"\n', encoding="utf-8")
    missing = workflows.problems(tmp_path)
    assert any("bootcamp-new: no hatch environment" in line for line in missing), missing
    assert sum("missing" in line for line in missing) == 3, missing

    workflows.write(tmp_path)
    assert [line for line in workflows.problems(tmp_path) if "bootcamp-new" in line and "hatch" in line]
    edited = tmp_path / ".github/workflows/bootcamp-example.yml"
    edited.write_text(edited.read_text(encoding="utf-8").replace("3.11", "3.12"), encoding="utf-8")
    (tmp_path / ".github/workflows/bootcamp-gone.yml").write_text("name: gone\n", encoding="utf-8")
    found = workflows.problems(tmp_path)
    assert any("bootcamp-example.yml: differs from the template" in line for line in found), found
    assert any("bootcamp-gone.yml: no distribution" in line for line in found), found


@pytest.mark.parametrize("args", [["--package", "bootcamp-nope"], ["--package"], ["--pkg", "bootcamp-example"]])
def test_ci_run_refuses_an_unknown_package_or_bad_arguments_before_installing_anything(args):
    result = subprocess.run(["bash", str(REPO / ".ci/run"), *args], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout, result.stderr
    assert result.stderr.startswith(("error: no distribution named 'bootcamp-nope'", "usage: bash .ci/run"))
