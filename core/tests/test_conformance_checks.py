"""The conformance checks about a plugin's package and reference agents: each passes for the test double and the
legacy rendering, and fails for a distribution that breaks its rule, naming what to fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.cli.check import CHECKS, run_checks, top_level_names
from bootcamp_core.testing import MINIMAL_HOOKS, registry_of, write_distribution

NEW_CHECKS = ("package_version_matches_distribution", "loading_the_plugin_stays_light",
              "reference_agents_play_registered_generators")
LEGACY = Path(__file__).parent / "data" / "legacy_bootcamp"

#: a reference agent for MINIMAL_HOOKS's generator ``g``, naming what it plays as ``{generators}``
AGENT = """
from bootcamp_core import ReferenceAgent

class Agent(ReferenceAgent):
    name = "agent"
    generators = {generators}
    async def act(self, messages, tools, identity, rng):
        return {{"role": "assistant", "content": str(identity["n"])}}

@hookimpl
def bootcamp_register_reference_agents(register):
    register(Agent)
"""


def check(namespace: str, site: Path, *names: str) -> dict[str, str | None]:
    """``bootcamp check NAMESPACE --json --only ...`` with ``site`` on the path: {check: None when passed, else why}."""
    env = {**os.environ, "PYTHONPATH": str(site), "BOOTCAMP_STRICT_PLUGINS": "1"}
    only = [argument for name in names for argument in ("--only", name)]
    done = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "check", namespace, "--json", *only],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr
    return {result["name"]: None if result["passed"] else result["reason"]
            for result in json.loads(done.stdout)["checks"]}


def package(site: Path, name: str, version: str, *, init: str = "", hooks: str = MINIMAL_HOOKS,
            entry_point: str | None = None, extra: dict[str, str] | None = None) -> str:
    """Distribution ``bootcamp-<name>`` with package ``bootcamp_<name>`` (``__init__`` and ``hooks``); its namespace."""
    top = f"bootcamp_{name}"
    write_distribution(site, f"bootcamp-{name}", version,
                       entry_points={"bootcamp": {name: entry_point or f"{top}.hooks"}},
                       modules={f"{top}/__init__.py": init, f"{top}/hooks.py": hooks, **(extra or {})})
    return name


def test_the_new_checks_pass_for_the_test_double():
    results = run_checks("example", NEW_CHECKS, registry=registry_of("example"))
    assert [(result.name, result.passed, result.reason) for result in results] == [
        (name, True, None) for name in NEW_CHECKS]


def test_every_check_passes_for_the_rendering_of_the_old_template(tmp_path: Path):
    site = tmp_path / "site"
    modules = {str(path.relative_to(LEGACY)): path.read_text(encoding="utf-8")
               for path in sorted(LEGACY.rglob("*")) if path.is_file() and "__pycache__" not in path.parts}
    write_distribution(site, "bootcamp-legacy-arith", "0.1.0",
                       entry_points={"bootcamp": {"legacy_arith": "bootcamp_legacy_arith.hooks"}}, modules=modules)
    assert check("legacy_arith", site) == dict.fromkeys(CHECKS)


def test_a_package_version_other_than_the_distributions_fails(tmp_path: Path):
    site = tmp_path / "site"
    drift = package(site, "drift", "0.2.0", init='__version__ = "0.1.0"\n')
    kept = package(site, "kept", "0.2.0", init='__version__ = "0.2.0"\n')
    results = check(drift, site, *NEW_CHECKS)
    assert "bootcamp_drift.__version__ is 0.1.0 but the installed distribution bootcamp-drift is 0.2.0" in (
        results.pop("package_version_matches_distribution"))
    assert results == {"loading_the_plugin_stays_light": None, "reference_agents_play_registered_generators": None}
    assert check(kept, site, *NEW_CHECKS) == dict.fromkeys(NEW_CHECKS)


def test_an_entry_point_naming_the_package_itself_fails_both_package_checks(tmp_path: Path):
    site = tmp_path / "site"
    eager = package(site, "eager", "0.1", init='__version__ = "0.1"\n' + MINIMAL_HOOKS, hooks="",
                    entry_point="bootcamp_eager")
    results = check(eager, site, *NEW_CHECKS)
    assert "names the package bootcamp_eager itself" in results["package_version_matches_distribution"]
    assert "importing bootcamp_eager imports its hooks module bootcamp_eager" in (
        results["loading_the_plugin_stays_light"])
    assert results["reference_agents_play_registered_generators"] is None


def test_an_entry_point_into_a_package_the_distribution_does_not_install_fails(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-elsewhere", "0.1", modules={"bootcamp_elsewhere/__init__.py": "",
                                                                   "bootcamp_elsewhere/hooks.py": MINIMAL_HOOKS})
    foreign = package(site, "foreign", "0.1", entry_point="bootcamp_elsewhere.hooks")
    assert top_level_names(next(iter(_distributions(site, "bootcamp-foreign")))) == {"bootcamp_foreign"}
    reason = check(foreign, site, "package_version_matches_distribution")["package_version_matches_distribution"]
    assert "names bootcamp_elsewhere.hooks, but bootcamp-foreign installs bootcamp_foreign" in reason


@pytest.mark.parametrize(("init", "extra", "expected"), [
    ("from bootcamp_chatty import hooks\n", {}, "importing bootcamp_chatty imports its hooks module bootcamp_chatty.hooks"),
    ("from bootcamp_chatty import more\n", {"bootcamp_chatty/more.py": MINIMAL_HOOKS.replace('"g"', '"h"')},
     "importing bootcamp_chatty imports hook implementations (bootcamp_chatty.more)"),
])
def test_a_package_whose_import_registers_hooks_is_not_light(tmp_path: Path, init: str, extra: dict, expected: str):
    site = tmp_path / "site"
    chatty = package(site, "chatty", "0.1", init=init, extra=extra)
    results = check(chatty, site, *NEW_CHECKS)
    assert expected in results.pop("loading_the_plugin_stays_light")
    assert results == {"package_version_matches_distribution": None,
                       "reference_agents_play_registered_generators": None}


def test_hooks_that_import_a_heavy_library_are_not_light(tmp_path: Path):
    site = tmp_path / "site"
    # a stand-in for the real library, found first on the path: importing it is all the check looks at
    heavy = package(site, "heavy", "0.1", hooks="import pybullet\n" + MINIMAL_HOOKS,
                    extra={"pybullet.py": "CONNECTED = False\n"})
    reason = check(heavy, site, "loading_the_plugin_stays_light")["loading_the_plugin_stays_light"]
    assert reason.startswith("loading the plugin imports pybullet: import heavy libraries inside the code")
    lazy = package(site, "lazy", "0.1", hooks=MINIMAL_HOOKS.replace(
        "    def prompt_func(self, identity, rng):\n",
        "    def prompt_func(self, identity, rng):\n        import pybullet  # noqa: F401\n"))
    assert check(lazy, site, "loading_the_plugin_stays_light") == {"loading_the_plugin_stays_light": None}


@pytest.mark.parametrize(("generators", "expected"), [
    ('("g", "missing")', "lost/agent plays 'missing', which is no registered generator"),
    ('("other/g",)', "lost/agent plays 'other/g', which is no registered generator"),
    ('"g"', "lost/agent: generators must be a non-empty list or tuple of generator names or ids, got 'g'"),
    ("()", "lost/agent: generators must be a non-empty list or tuple"),
])
def test_a_reference_agent_naming_an_unregistered_generator_fails(tmp_path: Path, generators: str, expected: str):
    site = tmp_path / "site"
    lost = package(site, "lost", "0.1", hooks=MINIMAL_HOOKS + AGENT.format(generators=generators))
    results = check(lost, site, *NEW_CHECKS)
    assert expected in results.pop("reference_agents_play_registered_generators")
    assert results == {"package_version_matches_distribution": None, "loading_the_plugin_stays_light": None}


def test_a_reference_agent_naming_its_generators_by_name_or_id_passes(tmp_path: Path):
    site = tmp_path / "site"
    found = package(site, "found", "0.1", hooks=MINIMAL_HOOKS + AGENT.format(generators='("g", "found/g")'))
    assert check(found, site, "reference_agents_play_registered_generators") == {
        "reference_agents_play_registered_generators": None}


def _distributions(site: Path, name: str):
    from importlib import metadata

    return [dist for dist in metadata.distributions(path=[str(site)]) if dist.metadata["Name"] == name]
