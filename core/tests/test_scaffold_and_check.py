"""`bootcamp new` renders a working bootcamp; `bootcamp check` runs the conformance kit on any installed one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bootcamp_core.cli.check import CHECKS, json_schema_problems
from bootcamp_core.cli.new import _WORD, MINIMAL_TEMPLATE, new_bootcamp, render, template_root
from bootcamp_core.plugin.errors import ConfigError
from bootcamp_core.testing import MINIMAL_HOOKS, write_distribution

CORE = Path(__file__).resolve().parents[1]


def run(*command: str, site: Path | None = None, cwd: Path | None = None, timeout: int = 300):
    env = {**os.environ, "BOOTCAMP_STRICT_PLUGINS": "1"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run(list(command), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def bootcamp(*args: str, **kwargs):
    return run(sys.executable, "-m", "bootcamp_core.cli.main", *args, **kwargs)


def install(package: Path, target: Path) -> None:
    """A real install (wheel built by the package's own build backend) into a folder of its own."""
    try:
        from uv import find_uv_bin

        command = [find_uv_bin(), "pip", "install", "--python", sys.executable, "--no-deps", "--target", str(target),
                   str(package)]
    except ImportError:
        command = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(package)]
    result = run(*command)
    assert result.returncode == 0, result.stdout + result.stderr


def test_render_replaces_only_the_namespace():
    assert render("bootcamp-example bootcamp_example example/calculator 'example'", "my_task") == (
        "bootcamp-my-task bootcamp_my_task my_task/calculator 'my_task'"
    )
    assert render("examples exampled counterexample", "x") == "examples exampled counterexample"


def test_new_refuses_bad_names_and_existing_folders(tmp_path: Path):
    with pytest.raises(ConfigError, match="not a valid namespace"):
        new_bootcamp("Bad-Name", tmp_path)
    new_bootcamp("fine", tmp_path)
    with pytest.raises(ConfigError, match="already exists"):
        new_bootcamp("fine", tmp_path)
    new_bootcamp("fine", tmp_path, force=True)


@pytest.mark.slow
def test_new_bootcamp_installs_lists_generates_and_passes_its_own_tests(tmp_path: Path):
    result = bootcamp("new", "my_task", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    package = tmp_path / "bootcamp-my-task"
    assert (package / "src" / "bootcamp_my_task" / "hooks.py").is_file()
    assert (package / "src" / "bootcamp_my_task" / "configs" / "default.yaml").is_file()
    pyproject = (package / "pyproject.toml").read_text()
    assert 'name = "bootcamp-my-task"' in pyproject and 'my_task = "bootcamp_my_task.hooks"' in pyproject
    leftovers = [str(path) for path in package.rglob("*") if path.is_file() and _WORD.search(path.read_text())]
    assert leftovers == []
    # the template is the living bootcamp-example: same files, nothing but the namespace changed
    source = template_root()
    assert sorted(p.name for p in package.rglob("*.py")) == sorted(
        p.name for p in source.rglob("*.py") if "__pycache__" not in p.parts)

    site = tmp_path / "site"
    install(package, site)
    listed = bootcamp("plugins", "--json", site=site)
    assert listed.returncode == 0, listed.stderr
    plugins = {item["namespace"]: item for item in json.loads(listed.stdout)}
    assert plugins["my_task"]["error"] is None
    assert plugins["my_task"]["distribution"] == "bootcamp-my-task"
    assert plugins["my_task"]["components"]["generator"] == ["my_task/arithmetic"]

    out = tmp_path / "out"
    generated = bootcamp("generate", "--bootcamp", "my_task", "--split-samples", "train:6,test:2", "--output-dir",
                         str(out), "-q", site=site)
    assert generated.returncode == 0, generated.stderr
    records = [json.loads(line) for line in (out / "my_task_train.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["data_source"] for r in records} == {"bootcamp/my_task"}
    assert records[0]["extra_info"]["bootcamp"]["versions"] == {"bootcamp-my-task": "0.1.0"}

    tests = run(sys.executable, "-m", "pytest", str(package / "tests"), "-q", "-p", "no:cacheprovider",
                "--rootdir", str(package), site=site, cwd=tmp_path)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout

    checked = bootcamp("check", "my_task", site=site)
    assert checked.returncode == 0, checked.stdout[-3000:]


MINIMAL_FILES = [
    # what makes it a repository of its own (cli/plugin_repo_template/)
    ".github/workflows/ci.yml", ".github/workflows/release.yml", ".gitignore",
    "CHANGELOG.md", "README.md", "hatch.toml", "pyproject.toml", "src/bootcamp_my_sum/__about__.py",
    "src/bootcamp_my_sum/__init__.py", "src/bootcamp_my_sum/configs/default.yaml", "src/bootcamp_my_sum/hooks.py",
    "src/bootcamp_my_sum/task.py", "tests/test_conformance.py",
]


@pytest.mark.slow
def test_new_minimal_is_a_small_skeleton_that_installs_generates_and_passes_check_and_its_test(tmp_path: Path):
    result = bootcamp("new", "my_sum", "--minimal", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    package = tmp_path / "bootcamp-my-sum"
    assert f"created {package}" in result.stdout
    files = sorted(path.relative_to(package).as_posix() for path in package.rglob("*") if path.is_file())
    assert files == MINIMAL_FILES
    assert 'my_sum = "bootcamp_my_sum.hooks"' in (package / "pyproject.toml").read_text()
    assert [str(path) for path in package.rglob("*") if path.is_file() and _WORD.search(path.read_text())] == []

    site = tmp_path / "site"
    install(package, site)
    listed = bootcamp("plugins", "--json", site=site)
    assert listed.returncode == 0, listed.stderr
    plugin = {item["namespace"]: item for item in json.loads(listed.stdout)}["my_sum"]
    assert plugin["error"] is None and plugin["distribution"] == "bootcamp-my-sum"
    components = {kind: ids for kind, ids in plugin["components"].items() if ids}
    assert components == {"generator": ["my_sum/sum"], "reward": ["my_sum/sum"]}

    out = tmp_path / "out"
    generated = bootcamp("generate", "--bootcamp", "my_sum", "--split-samples", "train:4", "--output-dir", str(out),
                         "-q", site=site)
    assert generated.returncode == 0, generated.stderr
    records = [json.loads(line) for line in (out / "my_sum_train.jsonl").read_text().splitlines()]
    assert len(records) == 4 and {r["data_source"] for r in records} == {"bootcamp/my_sum"}

    checked = bootcamp("check", "my_sum", site=site)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    tests = run(sys.executable, "-m", "pytest", str(package / "tests"), "-q", "-p", "no:cacheprovider",
                "--rootdir", str(package), site=site, cwd=tmp_path)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout


def test_new_without_minimal_still_renders_the_full_template_and_minimal_refuses_an_existing_folder(tmp_path: Path):
    full = new_bootcamp("twice", tmp_path)
    assert (full / "src" / "bootcamp_twice" / "tools.py").is_file()
    with pytest.raises(ConfigError, match="already exists"):
        new_bootcamp("twice", tmp_path, minimal=True)
    small = new_bootcamp("twice", tmp_path, minimal=True, force=True)
    assert not (small / "src" / "bootcamp_twice" / "tools.py").exists()
    assert (small / "src" / "bootcamp_twice" / "task.py").is_file()


def test_minimal_template_renders_to_itself():
    for path in MINIMAL_TEMPLATE.rglob("*"):
        if path.is_file():
            assert path.name.endswith(".tmpl"), path
            text = path.read_text(encoding="utf-8")
            assert render(text, "example") == text, path


BAD_HOOKS = """
from bootcamp_core import TaskGenerator, Reward, Tool, hookimpl

class Gen(TaskGenerator):
    name = "g"
    tools = ("t",)
    reward = "r"
    hidden_fields = ("answer",)                          # no such identity key
    def case_generator(self, rng):
        return {"n": rng.randint(0, 9), "pair": (1, 2)}   # a tuple does not survive JSON
    def prompt_func(self, identity, rng):
        return "   "                                     # empty prompt

class T(Tool):
    name = "t"
    description = "broken schema"
    parameters = {"type": "objekt"}
    async def execute(self, instance_id, parameters, **kwargs):
        return "ok", 0.0, {}

class R(Reward):
    name = "r"
    def verify_score(self, output, identity, **kwargs):   # overrides the clamping
        return 2.0

@hookimpl
def bootcamp_register_task_generators(register):
    register(Gen)

@hookimpl
def bootcamp_register_tools(register):
    register(T)

@hookimpl
def bootcamp_register_rewards(register):
    register(R)
"""


def failed_checks(stdout: str) -> set[str]:
    return set(re.findall(r"^FAIL (\w+): ", stdout, flags=re.MULTILINE))


def test_check_reports_every_broken_rule_of_a_nonconforming_bootcamp(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-bad", "0.1", entry_points={"bootcamp": {"bad": "bad_hooks"}},
                       modules={"bad_hooks.py": BAD_HOOKS})
    result = bootcamp("check", "bad", site=site)
    assert result.returncode == 1
    failed = failed_checks(result.stdout)
    assert {"identity_survives_a_json_round_trip", "prompts_are_not_empty", "hidden_fields_are_identity_keys",
            "tool_parameters_are_valid_json_schema",
            "rewards_stay_in_range_and_never_raise_on_garbage"} <= failed, result.stdout[-3000:]
    assert "parameters.type is 'objekt'" in result.stdout
    assert "hidden_fields ['answer'] are not keys of its identity" in result.stdout
    assert result.stdout.splitlines()[-1].startswith(f"{len(CHECKS)} checks: {len(CHECKS) - len(failed)} passed, "
                                                     f"{len(failed)} failed")


def test_the_pytest_kit_runs_the_same_checks_and_fails_the_same_tests(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-bad", "0.1", entry_points={"bootcamp": {"bad": "bad_hooks"}},
                       modules={"bad_hooks.py": BAD_HOOKS})
    result = run(sys.executable, "-c", "import sys; from bootcamp_core.testing import check_bootcamp; "
                 "sys.exit(check_bootcamp('bad', ['-rA']))", site=site, cwd=tmp_path)
    assert result.returncode == 1
    failed = set(re.findall(r"FAILED \S+::TestConformance::(\w+)", result.stdout))
    assert {"test_identity_survives_a_json_round_trip", "test_prompts_are_not_empty",
            "test_tool_parameters_are_valid_json_schema",
            "test_rewards_stay_in_range_and_never_raise_on_garbage"} <= failed, result.stdout[-3000:]
    passed = set(re.findall(r"PASSED \S+::TestConformance::(\w+)", result.stdout))
    assert passed | failed == {f"test_{name}" for name in CHECKS}
    assert failed == {f"test_{name}" for name in failed_checks(bootcamp("check", "bad", site=site).stdout)}


def test_check_json_and_only(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-bad", "0.1", entry_points={"bootcamp": {"bad": "bad_hooks"}},
                       modules={"bad_hooks.py": BAD_HOOKS})
    result = bootcamp("check", "bad", "--json", "--only", "prompts_are_not_empty", "--only", "tool_lifecycle",
                      site=site)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert (report["namespace"], report["distribution"], report["version"], report["passed"]) == (
        "bad", "bootcamp-bad", "0.1", False)
    assert [(check["name"], check["passed"]) for check in report["checks"]] == [
        ("prompts_are_not_empty", False), ("tool_lifecycle", True)]
    assert report["checks"][0]["reason"] == "bad/g: empty prompt"
    passing = bootcamp("check", "bad", "--json", "--only", "tool_lifecycle", site=site)
    assert passing.returncode == 0 and json.loads(passing.stdout)["passed"] is True
    misspelt = bootcamp("check", "bad", "--only", "tool_lifecycles", site=site)
    assert misspelt.returncode == 2 and "tool_lifecycle" in misspelt.stderr


def test_a_bootcamp_that_crashes_fails_its_check_with_where_it_raised(tmp_path: Path):
    site = tmp_path / "site"
    hooks = MINIMAL_HOOKS.replace('return {"n": rng.randint(0, 9)}', 'raise ZeroDivisionError("no cases")')
    write_distribution(site, "bootcamp-crash", "0.1", entry_points={"bootcamp": {"crash": "crash_hooks"}},
                       modules={"crash_hooks.py": hooks})
    result = bootcamp("check", "crash", "--only", "identity_survives_a_json_round_trip", site=site)
    assert result.returncode == 1
    assert ("FAIL identity_survives_a_json_round_trip: ZeroDivisionError: no cases (at crash_hooks.py:"
            in result.stdout), result.stdout


LEAKY_HOOKS = """
import itertools
from bootcamp_core import Interaction, Reward, TaskGenerator, Tool, hookimpl

CALLS = itertools.count()   # shared by every episode: a leak between instance ids


class Gen(TaskGenerator):
    name = "g"
    tools = ("t",)
    interaction = "i"
    reward = "r"
    def case_generator(self, rng):
        # set order follows PYTHONHASHSEED: records differ from process to process
        return {"n": rng.randint(0, 9), "tags": list({"alpha", "beta", "gamma", "delta", "epsilon"})}
    def prompt_func(self, identity, rng):
        return "Say n."


class Gen2(Gen):
    name = "g2"
    tools = ()
    interaction = None
    reward = "r2"


class T(Tool):
    name = "t"
    description = "counts calls"
    parameters = {"type": "object", "properties": {}}
    async def execute(self, instance_id, parameters, **kwargs):
        return f"call {next(CALLS)}", 0.0, {}


class I(Interaction):
    name = "i"
    async def generate_response(self, instance_id, messages, **kwargs):
        return False, "Try again.", 0.0, {}   # never ends the episode


class R(Reward):
    name = "r"
    def extract_output(self, output):
        return output
    def verify_correction(self, extracted, identity, **kwargs):
        return 0.0


class R2(R):
    name = "r2"
    def verify_score(self, output, identity, **kwargs):
        return 5.0


@hookimpl
def bootcamp_register_task_generators(register):
    register(Gen)
    register(Gen2)

@hookimpl
def bootcamp_register_tools(register):
    register(T)

@hookimpl
def bootcamp_register_interactions(register):
    register(I)

@hookimpl
def bootcamp_register_rewards(register):
    register(R)
    register(R2)
"""


def test_check_catches_leaks_nondeterminism_endless_interactions_and_any_reward_out_of_range(tmp_path: Path):
    site = tmp_path / "site"
    write_distribution(site, "bootcamp-leaky", "0.1", entry_points={"bootcamp": {"leaky": "leaky_hooks"}},
                       modules={"leaky_hooks.py": LEAKY_HOOKS})
    result = bootcamp("check", "leaky", site=site)
    assert result.returncode == 1
    failed = failed_checks(result.stdout)
    assert failed == {"generation_is_deterministic", "tool_lifecycle", "interactions_terminate",
                      "rewards_stay_in_range_and_never_raise_on_garbage",
                      "rewards_and_interactions_survive_hostile_outputs",
                      "solution_scores_one"}, result.stdout[-4000:]  # r2 scores an empty answer 5
    assert "PYTHONHASHSEED" in result.stdout and "leaks between instance ids" in result.stdout


def test_check_on_the_installed_test_double_passes_and_unknown_namespace_is_clear():
    result = bootcamp("check", "example")
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{len(CHECKS)} checks: {len(CHECKS)} passed, 0 failed" in result.stdout
    assert [line.split()[1] for line in result.stdout.splitlines() if line.startswith("PASS ")] == list(CHECKS)
    unknown = bootcamp("check", "exampel")
    assert unknown.returncode == 1 and 'Did you mean "example"' in unknown.stderr


def test_own_json_schema_check_finds_what_jsonschema_finds():
    assert json_schema_problems({"type": "object", "properties": {"n": {"type": ["integer", "null"], "minimum": 0},
                                                                  "tags": {"type": "array", "items": {"enum": [1]}}},
                                 "required": ["n"], "additionalProperties": False}) == []
    broken = {"type": "object", "properties": {"n": {"type": "int"}, "s": {"pattern": "(", "minLength": -1}},
              "required": "n", "anyOf": [], "items": 3}
    assert json_schema_problems(broken) == [
        "parameters.items must be an object or a boolean, not int",
        ("parameters.properties.n.type is 'int', not one of array, boolean, integer, null, number, object, string "
         "(or a list of them)"),
        "parameters.properties.s.minLength must be a non-negative integer",
        "parameters.properties.s.pattern is not a regular expression: missing ), unterminated subpattern at position 0",
        "parameters.anyOf must be a non-empty list of schemas",
        "parameters.required must be a list of distinct property names",
    ]
    jsonschema = pytest.importorskip("jsonschema")
    for schema in ({"type": "int"}, {"required": "n"}, {"anyOf": []}, {"items": 3}, {"minLength": -1},
                   {"properties": {"a": {"type": "objekt"}}}):
        assert json_schema_problems(schema), schema
        with pytest.raises(jsonschema.SchemaError):
            jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.slow
def test_check_needs_nothing_beyond_a_plain_install_of_core(tmp_path: Path):
    """`pip install bootcamp-core`, `bootcamp new x`, install it: `bootcamp check x` runs, with no pytest anywhere."""
    uv = pytest.importorskip("uv").find_uv_bin()
    venv = tmp_path / "venv"
    created = run(uv, "venv", "--python", sys.executable, str(venv))
    assert created.returncode == 0, created.stderr
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    installed = run(uv, "pip", "install", "--python", str(python), str(CORE), timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    absent = run(str(python), "-c", "import importlib.util as u; "
                 "print([m for m in ('pytest', 'hypothesis', 'jsonschema') if u.find_spec(m)])")
    assert absent.stdout.strip() == "[]", absent.stdout + absent.stderr

    def venv_bootcamp(*args: str, site: Path | None = None):
        return run(str(python), "-m", "bootcamp_core.cli.main", *args, site=site, cwd=tmp_path)

    assert venv_bootcamp("new", "x", "--output-dir", str(tmp_path)).returncode == 0
    rendered = run(uv, "pip", "install", "--python", str(python), "--no-deps", str(tmp_path / "bootcamp-x"))
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    checked = venv_bootcamp("check", "x")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert f"{len(CHECKS)} checks: {len(CHECKS)} passed, 0 failed" in checked.stdout

    site = tmp_path / "site"
    write_distribution(site, "bootcamp-bad", "0.1", entry_points={"bootcamp": {"bad": "bad_hooks"}},
                       modules={"bad_hooks.py": BAD_HOOKS})
    broken = venv_bootcamp("check", "bad", site=site)
    assert broken.returncode == 1, broken.stdout[-3000:] + broken.stderr[-2000:]
    assert {"identity_survives_a_json_round_trip", "prompts_are_not_empty", "tool_parameters_are_valid_json_schema",
            "rewards_stay_in_range_and_never_raise_on_garbage"} <= failed_checks(broken.stdout), broken.stdout


def test_template_is_bootcamp_example_and_renders_to_itself():
    root = template_root()
    assert (root / "src" / "bootcamp_example" / "hooks.py").is_file()
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8")
            assert render(text, "example") == text, path
