"""Every distribution is publishable: `hatch build` makes its wheel and sdist, `twine check --strict` accepts their
metadata (the README renders on the package index), the wheel holds its configs and none of its tests, and the
wheel, installed into a fresh virtual environment (not editable), passes a representative subset of the package's
own tests: each bootcamp's packaging-related conformance tests, and for core the test that renders `bootcamp new`'s templates from
the installed wheel. bootcamp-verl's install is left to its own suite (verl brings torch): it is built and checked."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from email.parser import HeaderParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ci_workflows_publish", REPO / ".ci/workflows.py")
workflows = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = workflows
spec.loader.exec_module(workflows)

DISTRIBUTIONS = workflows.distributions(REPO)
# the subset of each package's tests run against its installed wheel (None: built and checked, not installed)
WHEEL_TESTS = {"bootcamp-core": ["core/tests/test_new_workflows.py", "-k", "both_templates"], "bootcamp-verl": None}
pytestmark = pytest.mark.slow


# a bootcamp's conformance tests that depend on how it is packaged (the whole file runs in its own suite: PyBaMM and
# PyBullet make it minutes long): the plugin loads from the wheel, its version is the distribution's, loading stays
# light, its tool schemas are valid
PACKAGING_CHECKS = "plugin_loads or package_version or loading_the_plugin or tool_parameters"


def wheel_tests(dist) -> list[str] | None:
    if dist.name in WHEEL_TESTS:
        return WHEEL_TESTS[dist.name]
    return [f"{dist.folder}/tests/test_conformance.py", "-k", PACKAGING_CHECKS]


def run(*command: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    # outside the hatch environment this test runs in: each distribution builds as its own project
    env = {key: value for key, value in os.environ.items() if not key.startswith("HATCH_ENV")}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(list(command), capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env,
                          check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Distribution name -> a folder with its wheel and sdist, all built side by side by `hatch build`."""
    hatch = shutil.which("hatch")
    assert hatch, "hatch is not on PATH"
    out = tmp_path_factory.mktemp("dist")

    def build(dist) -> tuple[str, Path]:
        target = out / dist.name
        result = run(hatch, "build", "-t", "wheel", "-t", "sdist", str(target), cwd=REPO / dist.folder)
        assert result.returncode == 0, f"{dist.name}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        return dist.name, target

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(build, DISTRIBUTIONS))


def only(folder: Path, pattern: str) -> Path:
    (found,) = folder.glob(pattern)
    return found


def test_twine_accepts_every_wheel_and_sdist_and_the_metadata_is_complete(built):
    files = [str(path) for folder in built.values() for path in sorted(folder.iterdir())]
    assert len(files) == 2 * len(DISTRIBUTIONS)
    checked = run(sys.executable, "-m", "twine", "check", "--strict", *files)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    for name, folder in built.items():
        wheel = only(folder, "*.whl")
        with zipfile.ZipFile(wheel) as archive:
            metadata_name = next(item for item in archive.namelist() if item.endswith(".dist-info/METADATA"))
            metadata = HeaderParser().parsestr(archive.read(metadata_name).decode())
        assert metadata["Name"] == name
        assert metadata["License-Expression"] == "Apache-2.0", name
        assert metadata["Requires-Python"] == ">=3.10", name
        assert metadata["Description-Content-Type"] == "text/markdown", name
        classifiers = metadata.get_all("Classifier") or []
        assert "Programming Language :: Python :: 3.10" in classifiers, name
        assert metadata.get_payload().strip(), f"{name}: no README in the long description"


def test_wheels_hold_their_configs_and_nothing_from_tests(built):
    for dist in DISTRIBUTIONS:
        with zipfile.ZipFile(only(built[dist.name], "*.whl")) as archive:
            names = archive.namelist()
        # core ships bootcamp-example and the --minimal skeleton, tests included, as what `bootcamp new` renders: data
        own = [name for name in names if not name.startswith(("bootcamp_core/_template/",
                                                               "bootcamp_core/cli/minimal_template/"))]
        assert not [name for name in own if "tests/" in name or name.startswith("test")], dist.name
        for namespace in dist.namespaces:
            assert f"bootcamp_{namespace}/configs/default.yaml" in names, dist.name
        if dist.name == "bootcamp-core":
            assert "bootcamp_core/_template/pyproject.toml" in names
            assert "bootcamp_core/cli/plugin_repo_template/dot-github/workflows/ci.yml.tmpl" in names


def test_each_installed_wheel_passes_its_tests_in_a_fresh_environment(built, tmp_path: Path):
    uv = pytest.importorskip("uv").find_uv_bin()
    core_wheel = only(built["bootcamp-core"], "*.whl")

    def install_and_test(dist) -> str | None:
        venv = tmp_path / dist.name
        created = run(uv, "venv", "--python", sys.executable, str(venv))
        assert created.returncode == 0, created.stderr
        python = venv / "bin" / "python"
        wheels = [f"bootcamp-core[testing] @ {core_wheel.as_uri()}"]
        if dist.name != "bootcamp-core":
            wheels.append(str(only(built[dist.name], "*.whl")))
        installed = run(uv, "pip", "install", "--python", str(python), *wheels)
        if installed.returncode != 0:
            return f"{dist.name}: install failed: {installed.stderr[-3000:]}"
        module = dist.name.replace("-", "_")
        where = run(str(python), "-c", f"import {module}; print({module}.__file__)")
        if not where.stdout.strip().startswith(str(venv)):
            return f"{dist.name}: imported from {where.stdout.strip() or where.stderr[-500:]}, not from its wheel"
        # from a folder outside the source tree, so nothing but the installed wheel can be imported
        tested = run(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(REPO),
                     *[str(REPO / arg) if arg.endswith(".py") else arg for arg in wheel_tests(dist)], cwd=tmp_path)
        if tested.returncode != 0 or " passed" not in tested.stdout:
            return f"{dist.name}: tests failed against the wheel:\n{tested.stdout[-3000:]}{tested.stderr[-1000:]}"
        return None

    chosen = [dist for dist in DISTRIBUTIONS if wheel_tests(dist) is not None]
    assert len(chosen) >= len(DISTRIBUTIONS) - 1
    with ThreadPoolExecutor(max_workers=3) as pool:
        failures = [failure for failure in pool.map(install_and_test, chosen) if failure]
    assert not failures, "\n\n".join(failures)
