"""`bootcamp new` renders a repository-ready plugin: its CI workflow's test job, run here step by step in a fresh
virtual environment (bootcamp-core from this repository's own wheel instead of the package index), passes."""

from __future__ import annotations

import os
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import pytest
import yaml

from bootcamp_core.cli.new import new_bootcamp

CORE = Path(__file__).resolve().parents[1]
# the actions a test job may use: here the checkout is the rendered folder and uv is this environment's
PROVIDED_ACTIONS = {"actions/checkout", "astral-sh/setup-uv", "actions/setup-python"}


def workflow(path: Path) -> dict:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as true
    return document


def expand(text: str, matrix: dict[str, str]) -> str:
    for key, value in matrix.items():
        text = text.replace(f"${{{{ matrix.{key} }}}}", value)
    assert "${{" not in text, f"an expression this test cannot evaluate: {text}"
    return text


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("new")
    return {"full": new_bootcamp("my_task", out / "full"), "minimal": new_bootcamp("my_task", out / "min", minimal=True)}


@pytest.mark.parametrize("kind", ["full", "minimal"])
def test_both_templates_render_ci_release_hatch_toml_and_gitignore(rendered, kind):
    root = rendered[kind]
    ci = workflow(root / ".github/workflows/ci.yml")
    job = ci["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lowest_python = project["requires-python"].removeprefix(">=")
    assert matrix["python"][0] == lowest_python and len(matrix["python"]) >= 3, matrix
    assert matrix["core"] == ["lowest", "newest"]
    assert {"push", "pull_request"} <= set(ci["on"])
    scripts = "\n".join(step.get("run", "") for step in job["steps"])
    assert "bootcamp check my_task" in scripts and "pytest tests" in scripts and "bootcamp-core[testing]" in scripts

    release = workflow(root / ".github/workflows/release.yml")
    build = "\n".join(step.get("run", "") for step in release["jobs"]["build"]["steps"])
    assert "hatch build" in build and "twine check" in build
    publish = release["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing: no token anywhere
    assert [step["uses"] for step in publish["steps"]][-1].startswith("pypa/gh-action-pypi-publish@")
    assert publish["needs"] == "build"

    hatch = tomllib.loads((root / "hatch.toml").read_text(encoding="utf-8"))
    assert hatch["envs"]["default"]["features"] == ["testing"]
    assert hatch["envs"]["default"]["scripts"]["test"].startswith("pytest tests")
    ignored = (root / ".gitignore").read_text(encoding="utf-8").split()
    assert {"dist/", ".venv/", "__pycache__/"} <= set(ignored)
    assert not any(part.startswith("dot-") for path in root.rglob("*") for part in path.relative_to(root).parts)


@pytest.mark.slow
def test_the_rendered_test_job_passes_on_its_first_run(rendered, tmp_path):
    """Every shell step of the test job, in order, for this Python and the lowest core the range allows."""
    uv = pytest.importorskip("uv").find_uv_bin()
    wheels = tmp_path / "wheels"
    built = subprocess.run([uv, "build", "--wheel", str(CORE), "-o", str(wheels)], capture_output=True, text=True,
                           timeout=300, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("bootcamp_core-*.whl")
    overrides = tmp_path / "overrides.txt"  # the package index's bootcamp-core replaced by this repository's
    overrides.write_text(f"bootcamp-core[testing] @ {wheel.as_uri()}\n", encoding="utf-8")

    root = rendered["full"]
    job = workflow(root / ".github/workflows/ci.yml")["jobs"]["test"]
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert python in job["strategy"]["matrix"]["python"]
    matrix = {"python": python, "core": "lowest"}
    env = {**os.environ, "UV_OVERRIDE": str(overrides), "UV_PYTHON_DOWNLOADS": "never",
           "PATH": os.pathsep.join([str(Path(uv).parent), os.environ.get("PATH", "")])}
    env.pop("VIRTUAL_ENV", None)
    ran = 0
    for step in job["steps"]:
        if "uses" in step:
            assert step["uses"].split("@")[0] in PROVIDED_ACTIONS, step
            continue
        step_env = {key: expand(str(value), matrix) for key, value in step.get("env", {}).items()}
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"], matrix)],
                                cwd=root, env={**env, **step_env}, capture_output=True, text=True, timeout=600,
                                check=False)
        assert result.returncode == 0, f"{step.get('name')}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        ran += 1
        if "bootcamp check" in step["run"]:
            assert "0 failed" in result.stdout, result.stdout[-3000:]
        if "pytest" in step["run"]:
            assert " passed" in result.stdout and "failed" not in result.stdout, result.stdout[-3000:]
        if "uv pip show" in step["run"]:
            assert f"Location: {root / '.venv'}" in result.stdout, result.stdout  # installed, not editable
    assert ran == 3
