"""Plugin discovery, isolation of broken plugins, env-var lists, the registry's ids and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import bootcamp_core
from bootcamp_core import (
    API_VERSION,
    DuplicateIdError,
    Reward,
    TaskGenerator,
    Tool,
    UnknownIdError,
    hookimpl,
)
from bootcamp_core.plugin.loader import Registry
from bootcamp_core.testing import MINIMAL_HOOKS, write_distribution


def run_cli(*args: str, path: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    if path is not None:
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), environment.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "bootcamp_core.cli.main", *args], capture_output=True, text=True, env=environment, timeout=120
    )


@pytest.fixture
def broken_site(tmp_path: Path) -> Path:
    """A folder of installed distributions: one good, and one for each way a plugin can break."""
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    write_distribution(site, "bootcamp-good", "2.0", entry_points={"bootcamp": {"good": "good_hooks"}},
                       modules={"good_hooks.py": MINIMAL_HOOKS})
    write_distribution(site, "bootcamp-broken", "1.2", entry_points={"bootcamp": {"broken": "broken_hooks"}},
                       modules={"broken_hooks.py": f"open({str(marker)!r}, 'w').close()\nimport no_such_module_xyz\n"})
    write_distribution(site, "bootcamp-typo", "0.3", entry_points={"bootcamp": {"typo": "typo_hooks"}},
                       modules={"typo_hooks.py": "from bootcamp_core import hookimpl\n\n@hookimpl\n"
                                                 "def bootcamp_register_tool(register):\n    pass\n"})
    write_distribution(site, "bootcamp-crash", "0.1", entry_points={"bootcamp": {"crash": "crash_hooks"}},
                       modules={"crash_hooks.py": "from bootcamp_core import hookimpl\n\n@hookimpl\n"
                                                  "def bootcamp_register_tools(register):\n"
                                                  "    raise RuntimeError('boom')\n"})
    write_distribution(site, "bootcamp-badname", "0.1", entry_points={"bootcamp": {"Bad-Name": "good_hooks"}})
    write_distribution(site, "bootcamp-badarg", "1.2", entry_points={"bootcamp": {"badarg": "badarg_hooks"}},
                       modules={"badarg_hooks.py": "from bootcamp_core import hookimpl\n\n@hookimpl\n"
                                                   "def bootcamp_register_tools(reg):\n    pass\n"})
    return site


def test_api_version_and_public_names():
    assert API_VERSION == 1
    for name in ("TaskGenerator", "Tool", "Interaction", "Reward", "ReferenceAgent", "hookimpl"):
        assert hasattr(bootcamp_core, name)


def test_installed_plugin_is_found_with_provenance_recorded_by_us():
    registry = Registry.from_entry_points(strict=True)
    info = registry.plugins["example"]
    assert (info.distribution, info.version, info.error) == ("bootcamp-example", "0.1.0", None)
    assert info.components["generator"] == ["example/arithmetic"]
    assert "example/calculator" in registry.ids("tool")
    assert registry.versions_for([("tool", "example/calculator")]) == {"bootcamp-example": "0.1.0"}


def test_broken_plugins_each_get_one_line_and_the_rest_keep_working(broken_site: Path, tmp_path: Path):
    result = run_cli("plugins", "--json", path=broken_site, env={"BOOTCAMP_STRICT_PLUGINS": "0"})
    assert result.returncode == 0, result.stderr
    plugins = {item["namespace"]: item for item in json.loads(result.stdout)}
    assert plugins["example"]["error"] is None and plugins["good"]["components"] == {
        "generator": ["good/g"], "reward": ["good/r"]}
    assert plugins["good"]["version"] == "2.0"
    broken = plugins["broken"]["error"]
    assert broken.startswith('Plugin "broken" (bootcamp-broken 1.2): cannot import broken_hooks')
    assert "no_such_module_xyz" in broken and "\n" not in broken
    assert "bootcamp_register_tool" in plugins["typo"]["error"]
    assert plugins["typo"]["error"].startswith('Plugin "typo" (bootcamp-typo 0.3): ')
    assert "raised RuntimeError: boom" in plugins["crash"]["error"]
    assert "not a valid namespace" in plugins["Bad-Name"]["error"]
    badarg = plugins["badarg"]["error"]
    assert badarg.startswith('Plugin "badarg" (bootcamp-badarg 1.2): ') and "reg" in badarg and "\n" not in badarg
    assert all("\n" not in item["error"] for item in plugins.values() if item["error"])
    # the table form works too, and generation from a good plugin is unaffected
    assert run_cli("plugins", path=broken_site, env={"BOOTCAMP_STRICT_PLUGINS": "0"}).returncode == 0
    out = tmp_path / "out"
    result = run_cli("generate", "--bootcamp", "good", "--split-samples", "train:3", "--output-dir", str(out), "-q",
                     path=broken_site, env={"BOOTCAMP_STRICT_PLUGINS": "0"})
    assert result.returncode == 0, result.stderr
    assert 'Plugin "broken" (bootcamp-broken 1.2)' in result.stderr  # reported, not fatal
    assert len((out / "good_train.jsonl").read_text().splitlines()) == 3


def test_strict_mode_reraises(broken_site: Path, tmp_path: Path):
    result = run_cli("generate", "--bootcamp", "good", "--output-dir", str(tmp_path), path=broken_site,
                     env={"BOOTCAMP_STRICT_PLUGINS": "1"})
    assert result.returncode != 0
    assert 'Plugin "' in result.stderr


def test_allow_and_block_lists(broken_site: Path, tmp_path: Path):
    def namespaces(env):
        result = run_cli("plugins", "--json", path=broken_site, env={"BOOTCAMP_STRICT_PLUGINS": "0", **env})
        assert result.returncode == 0, result.stderr
        return {item["namespace"] for item in json.loads(result.stdout)}

    assert namespaces({"BOOTCAMP_LOAD_PLUGINS": ""}) == set()
    assert namespaces({"BOOTCAMP_LOAD_PLUGINS": "example, bootcamp-good"}) == {"example", "good"}
    marker = tmp_path / "imported"
    assert "broken" not in namespaces({"BOOTCAMP_BLOCK_PLUGINS": "broken"})
    assert not marker.exists(), "a blocked plugin must not be imported"
    assert "broken" in namespaces({})
    assert marker.exists()


def test_namespace_claimed_by_two_distributions_is_a_hard_error_for_that_namespace(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-one", "1.0", entry_points={"bootcamp": {"same": "good_hooks"}},
                       modules={"good_hooks.py": MINIMAL_HOOKS})
    write_distribution(site, "bootcamp-two", "3.1", entry_points={"bootcamp": {"same": "good_hooks"}})
    out = str(tmp_path / "o")
    # strict (our own test runs): every command stops and names both distributions
    strict = run_cli("generate", "--bootcamp", "example", "--output-dir", out, path=site,
                     env={"BOOTCAMP_STRICT_PLUGINS": "1"})
    assert strict.returncode == 1
    assert "bootcamp-one 1.0" in strict.stderr and "bootcamp-two 3.1" in strict.stderr
    # otherwise the namespace is unusable, with the same message, and every other bootcamp works
    lenient = {"BOOTCAMP_STRICT_PLUGINS": "0"}
    used = run_cli("generate", "--bootcamp", "same", "--output-dir", out, path=site, env=lenient)
    assert used.returncode == 1 and "error: " in used.stderr
    assert "bootcamp-one 1.0" in used.stderr and "bootcamp-two 3.1" in used.stderr
    other = run_cli("generate", "--bootcamp", "example", "--split-samples", "train:2", "--output-dir", out, "-q",
                    path=site, env=lenient)
    assert other.returncode == 0, other.stderr
    listed = run_cli("plugins", "--json", path=site, env=lenient)
    assert listed.returncode == 0
    claimants = [item for item in json.loads(listed.stdout) if item["namespace"] == "same"]
    assert sorted(item["distribution"] for item in claimants) == ["bootcamp-one", "bootcamp-two"]
    assert all("bootcamp-two 3.1" in item["error"] for item in claimants)


def test_listing_and_help_import_no_plugin(tmp_path: Path):
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    write_distribution(site, "bootcamp-tools", "0.1", entry_points={"bootcamp.commands": {"hello": "hello_cmd:main"}},
                       modules={"hello_cmd.py": f"open({str(marker)!r}, 'w').close()\n"
                                                "from bootcamp_core.plugin.errors import ConfigError\n"
                                                "def main(argv):\n"
                                                "    if argv == ['bad']:\n"
                                                "        raise ConfigError('bad flag')\n"
                                                "    print('hello', *argv)\n    return 3\n"})
    code = (
        "import sys, bootcamp_core.cli.main as cli\n"
        "cli.build_parser().format_help()\n"
        "assert not any(m.startswith(('bootcamp_example', 'hello_cmd', 'pyarrow')) for m in sys.modules), "
        "sorted(m for m in sys.modules if 'bootcamp' in m or 'arrow' in m)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    help_text = run_cli("--help", path=site).stdout
    assert "hello" in help_text and "bootcamp-tools" in help_text
    assert not marker.exists()
    result = run_cli("hello", "a", "b", path=site)
    assert (result.returncode, result.stdout.strip()) == (3, "hello a b")
    assert marker.exists()
    failed = run_cli("hello", "bad", path=site)  # a plugin command's errors read like ours: one line, exit 1
    assert (failed.returncode, failed.stderr.strip()) == (1, "error: bad flag")


# ----------------------------------------------------------------------------- the registry, in process
class Gen(TaskGenerator):
    name = "gen"
    tools = ("adder",)
    reward = "score"

    def case_generator(self, rng):
        return {}

    def prompt_func(self, identity, rng):
        return "x"


class Adder(Tool):
    name = "adder"
    description = "adds"
    parameters = {"type": "object", "properties": {}}

    async def execute(self, instance_id, parameters, **kwargs):
        return "0", 0.0, {}


class OtherAdder(Adder):
    pass


class Score(Reward):
    name = "score"

    def extract_output(self, output):
        return output

    def verify_correction(self, extracted, identity, **kwargs):
        return 1.0


def plugin(**hooks) -> types.ModuleType:
    """A plugin module whose hooks register the given classes."""
    names = {"generator": "bootcamp_register_task_generators", "tool": "bootcamp_register_tools",
             "reward": "bootcamp_register_rewards"}
    namespace = types.ModuleType("test_plugin")
    for kind, classes in hooks.items():
        def hook(register, classes=classes):
            for cls in classes:
                register(cls)
        hook.__name__ = names[kind]
        setattr(namespace, names[kind], hookimpl(hook))
    return namespace


def test_registry_resolves_ids_names_and_dotted_paths():
    registry = Registry(strict=True)
    registry.add_plugin(plugin(generator=[Gen], tool=[Adder], reward=[Score]), "mine", distribution="d", version="1")
    assert registry.resolve("tool", "mine/adder") == "mine/adder"
    assert registry.resolve("tool", "adder", namespace="mine") == "mine/adder"
    assert registry.resolve("tool", "adder") == "mine/adder"  # unique bare name, no bootcamp context
    # within a bootcamp, a bare name is that bootcamp's component, never another's
    with pytest.raises(UnknownIdError, match='Unknown tool "other/adder"'):
        registry.resolve("tool", "adder", namespace="other")
    assert registry.resolve("generator", Gen) == "mine/gen"
    # a generator and a reward may share a name; ids are per kind
    assert registry.ids("reward") == ["mine/score"]
    with pytest.raises(UnknownIdError, match="not a registered tool"):
        registry.resolve("tool", OtherAdder)


def test_dotted_path_resolves_to_the_id_of_an_installed_class():
    registry = Registry.from_entry_points(strict=True)
    generator_cls = registry.get_class("generator", "example/arithmetic")
    dotted = f"{generator_cls.__module__}.{generator_cls.__qualname__}"
    assert registry.resolve("generator", dotted) == "example/arithmetic"
    with pytest.raises(UnknownIdError, match="Cannot import"):
        registry.resolve("generator", "bootcamp_example.nowhere.Thing")


def test_unknown_id_suggests_close_matches_and_the_listing_command():
    registry = Registry.from_entry_points(strict=True)
    with pytest.raises(UnknownIdError) as error:
        registry.resolve("tool", "example/calculatr")
    message = str(error.value)
    assert 'Did you mean "example/calculator"' in message
    assert message.endswith("Run `bootcamp plugins` to list installed bootcamps and their components.")
    with pytest.raises(UnknownIdError, match="bootcamp plugins"):
        registry.namespace_plugin("exampel")


def test_duplicate_names_within_a_kind_name_both_classes():
    registry = Registry(strict=True)
    with pytest.raises(DuplicateIdError) as error:
        registry.add_plugin(plugin(tool=[Adder, OtherAdder]), "dup")
    message = str(error.value)
    assert "`OtherAdder` defines its name as `adder` but that name is already used by `Adder`" in message
    registry = Registry(strict=False)
    info = registry.add_plugin(plugin(tool=[Adder, OtherAdder]), "dup")
    assert info.error and registry.ids("tool") == []
    with pytest.raises(DuplicateIdError, match="`OtherAdder` defines its name"):
        registry.namespace_plugin("dup")


def test_a_namespace_cannot_be_registered_twice_and_bad_classes_are_rejected():
    registry = Registry(strict=False)
    registry.add_plugin(plugin(tool=[Adder]), "one")
    assert "already used" in registry.add_plugin(plugin(tool=[Adder]), "one").error
    assert "not a Tool subclass" in registry.add_plugin(plugin(tool=[Score]), "two").error

    class Nameless(Tool):
        name = "has space"

    assert "1-64 characters" in registry.add_plugin(plugin(tool=[Nameless]), "three").error
    assert registry.errors and all(line.startswith('Plugin "') for line in registry.errors)


def test_components_are_built_once_per_id_and_config():
    registry = Registry.from_entry_points(strict=True)
    first = registry.component("tool", "example/calculator")
    assert registry.component("tool", "calculator", namespace="example") is first
    other = registry.component("tool", "example/calculator", {"k": 1})
    assert other is not first and other.config == {"k": 1}
    assert registry.component("tool", "example/calculator", {"k": 1}) is other


def test_pytest_plugin_imports_only_pytest():
    code = textwrap.dedent(
        """
        import sys
        import bootcamp_core.testing.pytest_plugin
        loaded = [m for m in sys.modules if m.startswith(("bootcamp_example", "bootcamp_core.plugin.loader", "pyarrow",
                                                          "bootcamp_core.testing.conformance",
                                                          "bootcamp_core.testing.fixtures", "hypothesis", "jsonschema"))]
        assert not loaded, loaded
        """
    )
    env = {key: value for key, value in os.environ.items() if key != "BOOTCAMP_STRICT_PLUGINS"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
