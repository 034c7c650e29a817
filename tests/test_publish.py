"""Every distribution is publishable: `hatch build` makes its wheel and sdist, `twine check --strict` accepts their
metadata (the README renders on the package index; license, classifiers, project URLs, requires-python are there),
the wheel holds its configs and none of its tests, and the wheel, installed with its dependencies into a fresh
virtual environment of its own (not editable, nothing else of this repository installed), works there: it passes a
subset of the package's tests against it (each bootcamp's fast tests (`-m "not slow"`) but its shortcut guards, with
the conformance kit's packaging checks; core's plugin, plugin-API, public-API and template tests), and `bootcamp
plugins` lists each bootcamp from the wheel's metadata with the plugin API it declares. bootcamp-verl's wheel is
installed without its dependencies (verl brings torch; its own suite has them) and passes the tests that need
neither. The whole of every package's tests runs against its installed wheel in the CI suites (.ci/suites.py installs
each suite's members as wheels); this file proves what only a fresh environment can: the wheel installs alone with
the dependencies it declares."""

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

from bootcamp_core.plugin.loader import PLUGIN_API

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ci_workflows_publish", REPO / ".ci/workflows.py")
workflows = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = workflows
spec.loader.exec_module(workflows)

DISTRIBUTIONS = workflows.distributions(REPO)
pytestmark = pytest.mark.slow

FAST = ["-m", "not slow"]
# a bootcamp's conformance tests that depend on how it is packaged: the plugin loads from the wheel, its version is
# the distribution's, loading stays light, its tool schemas are valid (the kit's domain checks, minutes with PyBaMM
# or PyBullet and bound by a watchdog, run editable in the bootcamp's own suite)
PACKAGING_CHECKS = "plugin_loads or package_version or loading_the_plugin or tool_parameters"
# test files a wheel skips (they run editable in the package's own suite): the shortcut guards replay benchmark
# figures for minutes; reasoning-gym's sweep over every dataset is about the dataset library, not the package
SKIPPED = ("test_shortcuts.py", "test_datasets.py", "test_conformance.py")
# core: its plugin discovery and plugin API, its public API from the installed package, and the templates
# `bootcamp new` renders from the wheel (test_layers walks the source tree's layout, which the wheel's bundled
# template is not part of)
CORE_WHEEL_TESTS = [
    ["core/tests/test_public_api.py", "core/tests/test_plugin_api.py", "core/tests/test_plugins.py", *FAST],
    ["core/tests/test_new_workflows.py", "-k", "both_templates"],
]
# bootcamp-verl without verl (and torch): the export's limits, which import neither
VERL_WHEEL_TESTS = [["plugins/verl/tests/test_export_limits.py"]]


def wheel_tests(dist) -> list[list[str]]:
    """The pytest invocations run against ``dist``'s installed wheel (paths relative to the repository)."""
    if dist.name == "bootcamp-core":
        return CORE_WHEEL_TESTS
    if dist.name == "bootcamp-verl":
        return VERL_WHEEL_TESTS
    tests = f"{dist.folder}/tests"
    files = [f"{tests}/{path.name}" for path in sorted((REPO / tests).glob("test_*.py")) if path.name not in SKIPPED]
    return [[*files, *FAST], [f"{tests}/test_conformance.py", "-k", PACKAGING_CHECKS]]


def declared_api(dist) -> dict[str, str]:
    """Namespace -> the plugin API ``dist``'s pyproject.toml declares for it."""
    project = workflows._load(REPO / dist.folder / "pyproject.toml")["project"]
    return dict(project.get("entry-points", {}).get("bootcamp.api", {}))


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
    homepages = set()
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
        urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
        assert set(urls) == {"Homepage", "Source", "Issues", "Changelog"}, (name, urls)
        homepages.add(urls["Homepage"])
        folder = next(dist.folder for dist in DISTRIBUTIONS if dist.name == name)
        assert urls["Source"] == f"{urls['Homepage']}/tree/main/{folder}", (name, urls)
        assert urls["Changelog"] == f"{urls['Homepage']}/blob/main/{folder}/CHANGELOG.md", (name, urls)
        assert urls["Issues"] == f"{urls['Homepage']}/issues", (name, urls)
        assert (REPO / folder / "CHANGELOG.md").is_file(), name
    # one repository for the whole monorepo, and a real address
    assert len(homepages) == 1 and homepages.pop().startswith("https://github.com/"), homepages


def test_a_new_bootcamp_carries_no_link_of_this_repository_and_declares_its_plugin_api(tmp_path: Path):
    from bootcamp_core.cli.new import new_bootcamp
    from bootcamp_core.plugin.loader import PLUGIN_API

    homepage = workflows._load(REPO / "core/pyproject.toml")["project"]["urls"]["Homepage"]
    for minimal in (False, True):
        root = new_bootcamp("my_task", tmp_path / str(minimal), minimal=minimal)
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
        project = workflows.tomllib.loads(text)["project"]
        assert "urls" not in project and homepage not in text, text  # the links to fill in stay commented out
        assert '# Source = "https://github.com/OWNER/bootcamp-my-task"' in text, text
        assert project["entry-points"]["bootcamp.api"] == {"my_task": PLUGIN_API}


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
    example_wheel = only(built["bootcamp-example"], "*.whl")

    def install_and_test(dist) -> str | None:
        venv = tmp_path / dist.name
        created = run(uv, "venv", "--python", sys.executable, str(venv))
        assert created.returncode == 0, created.stderr
        python = venv / "bin" / "python"
        wheels = [f"bootcamp-core[testing] @ {core_wheel.as_uri()}"]
        if dist.name in ("bootcamp-core", "bootcamp-verl"):  # their tests' first bootcamp, the test double
            wheels.append(str(example_wheel))
        else:
            wheels.append(str(only(built[dist.name], "*.whl")))
        installed = run(uv, "pip", "install", "--python", str(python), *wheels)
        if installed.returncode == 0 and dist.name == "bootcamp-verl":
            # verl and torch are for its own suite: the wheel alone, on the installed core
            installed = run(uv, "pip", "install", "--python", str(python), "--no-deps",
                            str(only(built[dist.name], "*.whl")))
        if installed.returncode != 0:
            return f"{dist.name}: install failed: {installed.stderr[-3000:]}"
        module = dist.name.replace("-", "_")
        where = run(str(python), "-c", f"import {module}; print({module}.__file__)")
        if not where.stdout.strip().startswith(str(venv)):
            return f"{dist.name}: imported from {where.stdout.strip() or where.stderr[-500:]}, not from its wheel"
        # from a folder outside the source tree, so nothing but the installed wheel can be imported
        for args in wheel_tests(dist):
            tested = run(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(REPO),
                         *[str(REPO / arg) if arg.endswith(".py") else arg for arg in args], cwd=tmp_path)
            if tested.returncode != 0 or " passed" not in tested.stdout:
                return f"{dist.name}: tests failed against the wheel:\n{tested.stdout[-3000:]}{tested.stderr[-1000:]}"
        # the listing reads the wheel's metadata: each namespace, its distribution and the plugin API it declares
        listed = run(str(venv / "bin" / "bootcamp"), "plugins", cwd=tmp_path)
        owner = built_dist(dist)
        lines = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
        for namespace in owner.namespaces:
            line = lines.get(namespace, "")
            api = declared_api(owner).get(namespace)
            shown = line.endswith(f"  (plugin API {api})") if api else "plugin API" not in line
            if listed.returncode != 0 or owner.name not in line or not shown:
                return f"{dist.name}: `bootcamp plugins` shows {line!r} for {namespace}:\n{listed.stdout}{listed.stderr}"
        return None

    def built_dist(dist):
        # core's and verl's environments hold bootcamp-example as their bootcamp
        name = "bootcamp-example" if dist.name in ("bootcamp-core", "bootcamp-verl") else dist.name
        return next(item for item in DISTRIBUTIONS if item.name == name)

    example = next(dist for dist in DISTRIBUTIONS if dist.name == "bootcamp-example")
    assert declared_api(example) == {"example": PLUGIN_API}  # the living template declares its API
    with ThreadPoolExecutor(max_workers=3) as pool:
        failures = [failure for failure in pool.map(install_and_test, DISTRIBUTIONS) if failure]
    assert not failures, "\n\n".join(failures)
