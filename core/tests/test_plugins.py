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
from bootcamp_core.plugin.loader import PLUGIN_API, Registry
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
    assert isinstance(API_VERSION, int) and API_VERSION >= 1  # what it promises: core/tests/test_public_api.py
    for name in ("TaskGenerator", "Tool", "Interaction", "Reward", "ReferenceAgent", "hookimpl"):
        assert hasattr(bootcamp_core, name)


def test_installed_plugin_is_found_with_provenance_recorded_by_us():
    registry = Registry.from_entry_points(strict=True)
    info = registry.plugins["example"]
    assert (info.distribution, info.version, info.error) == ("bootcamp-example", bootcamp_example_version(), None)
    assert info.components["generator"] == ["example/arithmetic"]
    assert "example/calculator" in registry.ids("tool")
    assert registry.versions_for([("tool", "example/calculator")]) == {"bootcamp-example": bootcamp_example_version()}


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
    # generating "good" imports only "good": the broken plugin is never imported, so it costs nothing and says
    # nothing; a problem visible in the metadata alone (an invalid entry-point name) is still reported, not fatal
    assert 'Plugin "broken"' not in result.stderr
    assert 'Plugin "Bad-Name" (bootcamp-badname 0.1)' in result.stderr
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


# ------------------------------------------------------------------------------- one namespace at a time
def marked_hooks(marker: Path, hooks: str = MINIMAL_HOOKS) -> str:
    """A hooks module that leaves ``marker`` behind when it is imported."""
    return f"open({str(marker)!r}, 'a').close()\n{hooks}"


def test_a_lookup_imports_only_the_plugin_of_its_namespace(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-alpha", "1.0", entry_points={"bootcamp": {"alpha": "alpha_hooks"}},
                       modules={"alpha_hooks.py": MINIMAL_HOOKS})
    write_distribution(site, "bootcamp-beta", "1.0", entry_points={"bootcamp": {"beta": "beta_hooks"}},
                       modules={"beta_hooks.py": MINIMAL_HOOKS})
    code = textwrap.dedent(
        """
        import sys
        from bootcamp_core.plugin.loader import Registry

        def imported():
            return sorted(m for m in ("alpha_hooks", "beta_hooks", "bootcamp_example") if m in sys.modules)

        registry = Registry.from_entry_points(strict=True)
        assert imported() == [], imported()
        assert registry.component("generator", "alpha/g").name == "g"
        assert registry.resolve("reward", "r", namespace="alpha") == "alpha/r"
        assert registry.ids("reward", namespace="alpha") == ["alpha/r"]
        assert registry.namespace_plugin("alpha").distribution == "bootcamp-alpha"
        assert registry.resolve("generator", "alpha_hooks.Gen") == "alpha/g"  # a dotted path, too
        assert registry.versions_for([("generator", "alpha/g")]) == {"bootcamp-alpha": "1.0"}
        assert imported() == ["alpha_hooks"], imported()
        # listing everything imports everything
        assert registry.ids("generator") == ["alpha/g", "beta/g", "example/arithmetic"]
        assert imported() == ["alpha_hooks", "beta_hooks", "bootcamp_example"], imported()
        """
    )
    environment = {**os.environ, "PYTHONPATH": str(site), "BOOTCAMP_LOAD_PLUGINS": "alpha,beta,example"}
    subprocess.run([sys.executable, "-c", code], check=True, env=environment, timeout=120)


def test_a_broken_plugin_no_lookup_needs_is_never_imported_even_in_strict_mode(tmp_path: Path):
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    write_distribution(site, "bootcamp-good", "2.0", entry_points={"bootcamp": {"good": "good_hooks"}},
                       modules={"good_hooks.py": MINIMAL_HOOKS})
    write_distribution(site, "bootcamp-broken", "1.2", entry_points={"bootcamp": {"broken": "broken_hooks"}},
                       modules={"broken_hooks.py": marked_hooks(marker, "import no_such_module_xyz\n")})
    out = tmp_path / "out"
    strict = {"BOOTCAMP_STRICT_PLUGINS": "1"}
    result = run_cli("generate", "--bootcamp", "example", "--split-samples", "train:2", "--output-dir", str(out),
                     "-q", path=site, env=strict)
    assert result.returncode == 0, result.stderr
    assert "broken" not in result.stderr and not marker.exists()
    # the moment a lookup needs it, strict mode raises with its one line
    used = run_cli("generate", "--bootcamp", "broken", "--output-dir", str(out), path=site, env=strict)
    assert used.returncode == 1 and marker.exists()
    assert 'Plugin "broken" (bootcamp-broken 1.2): cannot import broken_hooks' in used.stderr


def test_listing_shows_distributions_and_versions_without_importing_any_plugin(tmp_path: Path):
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    write_distribution(site, "bootcamp-versioned", "3.4.5", entry_points={"bootcamp": {"versioned": "versioned_hooks"}},
                       modules={"versioned_hooks.py": marked_hooks(marker)})
    code = (
        "import sys\n"
        "from bootcamp_core.cli.main import main\n"
        "assert main(['plugins']) == 0\n"
        "loaded = [m for m in ('versioned_hooks', 'bootcamp_example') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.split() == ["versioned", "bootcamp-versioned", "3.4.5"] for line in lines), done.stdout
    # bootcamp-example declares the plugin API it was written for: the listing shows it
    example = ["example", "bootcamp-example", bootcamp_example_version(), "(plugin", "API", f"{PLUGIN_API})"]
    assert any(line.split() == example for line in lines), done.stdout
    assert not marker.exists()


def bootcamp_example_version() -> str:
    from importlib import metadata

    return metadata.version("bootcamp-example")


def test_check_survives_plugins_that_crash_or_end_the_interpreter(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-good", "2.0", entry_points={"bootcamp": {"good": "good_hooks"}},
                       modules={"good_hooks.py": MINIMAL_HOOKS})
    write_distribution(site, "bootcamp-segv", "0.1", entry_points={"bootcamp": {"segv": "segv_hooks"}},
                       modules={"segv_hooks.py": "import ctypes\nctypes.string_at(0)  # reads address 0\n"})
    write_distribution(site, "bootcamp-quitter", "0.2", entry_points={"bootcamp": {"quitter": "quitter_hooks"}},
                       modules={"quitter_hooks.py": "import os\nos._exit(0)\n"})
    lenient = {"BOOTCAMP_STRICT_PLUGINS": "0"}
    result = run_cli("plugins", "--check", path=site, env=lenient)
    assert result.returncode == 1, result.stderr  # a broken plugin found
    lines = result.stdout.splitlines()
    assert any(line.split() == ["generator", "good/g"] for line in lines), result.stdout
    assert any(line.split() == ["tool", "example/calculator"] for line in lines), result.stdout
    segv = [line for line in lines if line.startswith('Plugin "segv" (bootcamp-segv 0.1): ')]
    assert len(segv) == 1 and "SIGSEGV" in segv[0] and segv[0].endswith("report it to the plugin's authors.")
    quitter = [line for line in lines if line.startswith('Plugin "quitter" (bootcamp-quitter 0.2): ')]
    assert len(quitter) == 1 and "exit code 0" in quitter[0]
    # the JSON form carries the same, for scripts
    listed = run_cli("plugins", "--check", "--json", path=site, env=lenient)
    assert listed.returncode == 1
    plugins = {item["namespace"]: item for item in json.loads(listed.stdout)}
    assert plugins["good"]["components"] == {"generator": ["good/g"], "reward": ["good/r"]}
    assert plugins["good"]["module"] == "good_hooks" and plugins["good"]["error"] is None
    assert plugins["segv"]["error"] == segv[0] and plugins["quitter"]["error"] == quitter[0]
    # without broken plugins, the check passes
    assert run_cli("plugins", "--check", env=lenient).returncode == 0


def test_check_reports_a_plugin_that_hangs_at_import(tmp_path: Path):
    from bootcamp_core.plugin.check import check_plugins
    from bootcamp_core.plugin.loader import installed_plugins

    site = tmp_path / "site"
    write_distribution(site, "bootcamp-slow", "0.1", entry_points={"bootcamp": {"slow": "slow_hooks"}},
                       modules={"slow_hooks.py": "import time\ntime.sleep(60)\n"})
    sys.path.insert(0, str(site))
    try:
        found = [info for info in installed_plugins() if info.namespace == "slow"]
        [checked] = check_plugins(found, timeout_s=2)
    finally:
        sys.path.remove(str(site))
    assert checked.error == ('Plugin "slow" (bootcamp-slow 0.1): importing it did not finish within 2 s. '
                             'Run python -c "import slow_hooks" to see why, and reinstall it or report it to the '
                             "plugin's authors.")


def test_piped_listing_keeps_every_id_whole(tmp_path: Path):
    site = tmp_path / "site"
    namespace = "a_namespace_long_enough_to_push_ids_past_eighty_columns"
    name = "a_generator_whose_name_alone_takes_most_of_a_terminal_line"
    write_distribution(site, "bootcamp-long-names-for-a-narrow-pipe", "12.34.56",
                       entry_points={"bootcamp": {namespace: "long_hooks"}},
                       modules={"long_hooks.py": MINIMAL_HOOKS.replace('name = "g"', f'name = "{name}"')})
    narrow = {"COLUMNS": "40", "BOOTCAMP_STRICT_PLUGINS": "0"}
    for args in (("plugins",), ("plugins", "--check")):
        result = run_cli(*args, path=site, env=narrow)
        assert result.returncode == 0, result.stderr
        assert any(line.split() == [namespace, "bootcamp-long-names-for-a-narrow-pipe", "12.34.56"]
                   for line in result.stdout.splitlines()), result.stdout
    assert any(line.split() == ["generator", f"{namespace}/{name}"] for line in result.stdout.splitlines())


def test_hookimpl_is_pluggys_own_marker_so_tryfirst_and_specname_work():
    import pluggy

    assert isinstance(hookimpl, pluggy.HookimplMarker)
    module = types.ModuleType("ordered_hooks")

    class First(Adder):
        name = "first"

    class Second(Adder):
        name = "second"

    # pluggy calls the implementation registered last first; tryfirst puts this one ahead of it anyway
    @hookimpl(tryfirst=True, specname="bootcamp_register_tools")
    def a_registers_first(register):
        register(First)

    @hookimpl(specname="bootcamp_register_tools")
    def z_registers_second(register):
        register(Second)

    module.a_registers_first, module.z_registers_second = a_registers_first, z_registers_second
    registry = Registry(strict=True)
    info = registry.add_plugin(module, "ordered")
    assert info.components["tool"] == ["ordered/first", "ordered/second"]
    assert registry.component("tool", "ordered/second").name == "second"
