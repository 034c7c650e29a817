"""``bootcamp check NAMESPACE``: the conformance checks of one installed bootcamp, as plain functions.

Nothing here needs pytest, hypothesis or jsonschema, so the check runs right after ``pip install bootcamp-core``.
``bootcamp_core.testing.BootcampConformance`` runs the same checks as pytest tests (``test_<check>`` each) with the
same overridable attributes; :func:`run_checks` is the Python function behind the command.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import math
import os
import pickle
import random
import re
import string
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from bootcamp_core.plugin.errors import ConfigError

if TYPE_CHECKING:
    from bootcamp_core.data.config import InstructionConfig
    from bootcamp_core.plugin.loader import Registry

HELP = "run the conformance checks against an installed bootcamp"
DESCRIPTION = """\
Check an installed bootcamp against the plugin contract: the package's version is its distribution's and importing it
registers nothing, loading the plugin imports no heavy library, generation is deterministic and uses only the rng
passed in, identities survive JSON, prompts are not empty, tool schemas are valid and tools keep episodes apart,
rewards stay in [0, 1] on garbage, rewards and interactions answer hostile outputs (megabytes of whitespace after a
fence, a key or a \\boxed{, deep nesting, huge numbers, lone surrogates, NaN) in time and in range, an empty answer
scores 0, interactions end, reference agents play registered generators. Needs neither pytest nor the testing
extra. Prints one PASS or FAIL line per check; exit status 0 when every check passes, 1 otherwise."""

#: Seconds one tool or interaction call may take in the checks before it counts as hanging.
CALL_TIMEOUT_S = 30.0
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
_GENERATE_IN_A_PROCESS = (
    "import pickle, sys\n"
    "from bootcamp_core.data.generate import generate\n"
    "generate(pickle.loads(open(sys.argv[1], 'rb').read()), sys.argv[2])\n"
)
#: libraries that loading a plugin must not import: listing, generating and checking never need them, and each costs
#: seconds (or a GPU runtime) to import; a bootcamp imports them inside the code that uses them
HEAVY_MODULES = ("torch", "verl", "ray", "mcp", "pybamm", "pybullet")
#: seconds the fresh process of the loading check may take (PyBaMM-sized imports take a few)
LOADING_TIMEOUT_S = 300.0
_REPORT_MARKER = "bootcamp-check-loading:"
# sys.path is the parent's, so the child finds exactly the distributions the parent found
_LOAD_IN_A_PROCESS = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from bootcamp_core.cli.check import loading_report\n"
    "report = loading_report(sys.argv[3], sys.argv[4], sys.argv[5] or None)\n"
    "sys.stdout.write('\\n' + sys.argv[2] + json.dumps(report) + '\\n')\n"
)
#: what a generator must not call: every drawing function of the global random module
_GLOBAL_RANDOM = ("random", "randint", "randrange", "choice", "choices", "sample", "uniform", "gauss", "getrandbits",
                  "shuffle")
#: model output that breaks naive extraction: cut-off JSON, non-finite numbers, NUL, deep nesting, huge numbers
GARBAGE = ('{"result": }', "```json\n{", "NaN", "inf", "-1e309", "\x00", "[" * 50, '{"a": [1, {}]}', "{" * 5000,
           "9" * 5000, "\\boxed{" * 200, "ANSWER: " * 100, "```\n```\n```", "\ud800", "\u202e\ufeff", " \n\t ")


class ConformanceError(AssertionError):
    """A bootcamp breaks a rule of the plugin contract (an AssertionError, so pytest reports a failed test)."""


def require(condition: Any, message: str) -> None:
    """Raise :class:`ConformanceError` with ``message`` unless ``condition`` holds (asserts vanish under -O)."""
    if not condition:
        raise ConformanceError(message)


@attrs.frozen
class CheckResult:
    """The outcome of one check: its name, whether it passed and, when not, why."""

    name: str
    passed: bool
    reason: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason, "seconds": round(self.seconds, 3)}


def episode_kwargs(messages: list[dict] | None = None) -> dict[str, Any]:
    """The episode kwargs every runner passes to a reward (DESIGN.md: what the reward sees)."""
    return {"messages": messages or [], "tool_rewards": [], "tool_scores": {}, "turn_scores": []}


def example_arguments(schema: dict) -> dict:
    """Minimal arguments satisfying the required properties of a tool's parameter schema."""
    defaults = {"string": "1", "number": 1, "integer": 1, "boolean": True, "array": [], "object": {}, "null": None}
    arguments = {}
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        spec = properties.get(name) or {}
        if "enum" in spec:
            arguments[name] = spec["enum"][0]
        elif "default" in spec:
            arguments[name] = spec["default"]
        else:
            kind = spec.get("type", "string")
            arguments[name] = defaults.get(kind[0] if isinstance(kind, list) else kind, "1")
    return arguments


def garbage_outputs(seed: int = 0, count: int = 60) -> list[str]:
    """:data:`GARBAGE` plus ``count`` random strings drawn from ``seed``: mixed scripts, brackets, answer markers."""
    rng = random.Random(seed)
    pieces = [*string.printable, "{", "}", "[", "]", "```", "json", "ANSWER:", "\\boxed{", "result", "\"", "é", "中",
              "\U0001f600", "\u0301", "\x7f", "1e400", "-0", "null"]
    return [*GARBAGE, *("".join(rng.choice(pieces) for _ in range(rng.randint(0, 120))) for _ in range(count))]


#: Seconds one reward or interaction call may take on a hostile output before it counts as hanging: a hang detector,
#: not a benchmark (a linear extractor needs milliseconds on a megabyte, a backtracking one hours).
HOSTILE_TIMEOUT_S = 10.0
_MB = 1_000_000


def hostile_outputs() -> Iterator[tuple[str, str]]:
    """(label, output): model output that stalls backtracking extraction or crashes naive parsing, each also at 1 MB.

    Whitespace after a fence, a JSON key and a ``\\boxed{`` (100k, then 1 MB), backticks, 10^5-deep and 1 MB-deep
    nesting, 5,000-digit numbers, lone surrogates, NaN and Infinity. Made one at a time: they are large.
    """
    spaces = " " * 100_000
    for opening in ("```", "```json\n", '{"x":', '"x":', "\\boxed{", "ANSWER:"):
        yield f"100k whitespace after {opening.strip()!r}", f"{opening}{spaces}x"
        yield f"1 MB of whitespace after {opening.strip()!r}", f"{opening}{' ' * _MB}x"
        yield f"{opening.strip()!r} then 100k whitespace, 100 times", (opening + " " * 1_000) * 100 + "x"
    yield "1 MB of backticks", "`" * _MB
    yield "1 MB of fences and newlines", "```\n" * (_MB // 4)
    for label, unit in (("[", "["), ("{", "{"), ("[{", '[{"x":'), ('{"x":[', '{"x":[')):
        yield f"10^5-deep nesting of {label}", unit * (100_000 // len(unit) + 1)
        yield f"1 MB of nesting of {label}", unit * (_MB // len(unit))
    yield "\\boxed{ nested 10^5 deep", "\\boxed{" * 100_000
    digits = "9" * 5_000
    for label, text in (("a 5,000-digit number", digits), ("a negative 5,000-digit decimal", f"-{digits}.{digits}"),
                        ("a 5,000-digit exponent", f"1e{digits}"), ("a 5,000-digit JSON value", f'{{"x": {digits}}}'),
                        ("a boxed 5,000-digit number", f"\\boxed{{{digits}}}"),
                        ("a 5,000-digit answer line", f"ANSWER: {digits}"),
                        ("a fenced 5,000-digit JSON object", f'```json\n{{"x": {digits}, "y": [{digits}]}}\n```')):
        yield label, text
        yield f"1 MB of {label}s", ((text + "\n") * (_MB // (len(text) + 1) + 1))[:_MB]
    yield "1 MB of one number", "7" * _MB
    for label, text in (("lone surrogates", "\ud800 answer \udfff ANSWER: \udc00 \\boxed{\ud83d}"),
                        ("a lone surrogate in JSON", '{"x": "\ud800", "y": 1}'),
                        ("NaN and Infinity", 'NaN Infinity -Infinity nan inf -inf 1e999 ANSWER: NaN \\boxed{Infinity}'),
                        ("NaN and Infinity in JSON", '```json\n{"x": NaN, "y": Infinity, "z": -Infinity}\n```'),
                        ("non-finite numbers in JSON", '{"x": 1e999, "y": -1e999, "z": [NaN]}')):
        yield label, text
        yield f"1 MB of {label}", ((text + "\n") * (_MB // (len(text) + 1) + 1))[:_MB]


def hostile_variants(solution: str) -> Iterator[tuple[str, str]]:
    """(label, output): a solving answer made hostile where its own format's parser reads it: 100k whitespace after
    its first ``:``, ``{``, ``[`` and fence, its first number 5,000 digits long, NaN and a lone surrogate in its place."""
    for mark in (":", "{", "[", "```", "\n"):
        position = solution.find(mark)
        if position != -1:
            end = position + len(mark)
            yield f"the solution with 100k whitespace after its first {mark!r}", (
                f"{solution[:end]}{' ' * 100_000}{solution[end:]}")
    start = next((index for index, character in enumerate(solution) if character.isdigit()), None)
    if start is not None:
        end = start
        while end < len(solution) and solution[end].isdigit():
            end += 1
        for label, number in (("a 5,000-digit number", "9" * 5_000), ("NaN", "NaN"), ("Infinity", "Infinity"),
                              ("a lone surrogate", "\ud800")):
            yield f"the solution with {label} for its first number", solution[:start] + number + solution[end:]


class _Hung(BaseException):
    """Raised into a call that ran past the watchdog (no ``Exception``: a plugin's ``except Exception`` must not
    swallow it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Hung


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``, waited for at most ``seconds``; raises ``TimeoutError`` past them. A watchdog, not a benchmark.

    In the main thread (where ``bootcamp check`` and pytest run) a timer signal interrupts the call: the regular
    expression engine holds the interpreter lock for as long as one search backtracks, so no other thread could even
    notice the hang, but it does stop for signals. Elsewhere the call runs in a daemon thread waited for with a
    timeout, and a call that hangs is left running there.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        previous = signal.signal(signal.SIGALRM, _alarm)
        started = time.monotonic()
        outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return call()
        except _Hung:
            raise TimeoutError(f"did not return within {seconds:g} s") from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer:  # someone else's timer was running: it goes on with what it had left
                signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            outcome["error"] = error

    thread = threading.Thread(target=target, name="bootcamp-check-watchdog", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"did not return within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_async(coroutine_function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a coroutine function to completion; one that is not done within :data:`CALL_TIMEOUT_S` fails the check."""
    import anyio

    async def bounded():
        with anyio.fail_after(CALL_TIMEOUT_S):
            return await coroutine_function(*args, **kwargs)

    try:
        return anyio.run(bounded)
    except TimeoutError:
        raise ConformanceError(f"tool or interaction calls hung: not done within {CALL_TIMEOUT_S:g} s") from None


# ------------------------------------------------------------------------------------- the plugin's package
def top_level_names(distribution: Any) -> set[str]:
    """The top-level modules and packages a distribution's file list installs (empty when it lists none that way,
    as editable installs do)."""
    names = set()
    for file in distribution.files or ():
        parts = Path(str(file)).parts
        name = parts[0] if len(parts) > 1 else inspect.getmodulename(parts[0]) if parts else None
        if name and "." not in name and name != "__pycache__":  # not dist-info, .pth, .data or ../bin
            names.add(name)
    return names


def loading_report(namespace: str, module: str, package: str | None) -> dict[str, Any]:
    """What importing ``package`` and then loading plugin ``namespace`` (entry point ``module``) imported, in the
    process that calls it.

    ``bootcamp check`` runs it in a fresh interpreter: ``hooks`` (whether importing the package imported ``module``),
    ``registering`` (modules the package's import brought in that hold hook implementations), ``heavy``
    (:data:`HEAVY_MODULES` imported once the plugin is loaded), ``error`` (the loader's, if loading failed).
    """
    import importlib

    from bootcamp_core.plugin.hookspecs import PROJECT_NAME
    from bootcamp_core.plugin.loader import Registry

    marker = f"{PROJECT_NAME}_impl"  # the attribute pluggy's HookimplMarker sets on a hook implementation
    hooks = registering = None
    if package is not None:
        before = set(sys.modules)
        importlib.import_module(package)
        hooks = module in sys.modules
        registering = sorted(
            name for name in set(sys.modules) - before
            if any(inspect.isfunction(value) and hasattr(value, marker)
                   for value in list(getattr(sys.modules.get(name), "__dict__", {}).values()))
        )
    loaded = Registry.from_entry_points(strict=False).load(namespace)
    return {"hooks": hooks, "registering": registering,
            "heavy": sorted(name for name in sys.modules if name.split(".", 1)[0] in HEAVY_MODULES),
            "error": "no entry point has this name" if loaded is None else loaded.error}


# ----------------------------------------------------------------------------------------- JSON Schema
_TYPES = {"array", "boolean", "integer", "null", "number", "object", "string"}
_SCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
           "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_NUMBER = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNT = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains",
          "maxContains")
_TEXT = ("title", "description", "$comment", "format", "$ref", "$schema", "$id", "$anchor")


def json_schema_problems(schema: Any, where: str = "parameters") -> list[str]:
    """What makes ``schema`` an invalid JSON Schema (draft 2020-12), for the keywords tools use; [] when none."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{where} must be an object or a boolean, not {type(schema).__name__}"]
    problems = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        valid = all(isinstance(k, str) and k in _TYPES for k in kinds)
        if not kinds or not valid or len(set(kinds)) < len(kinds):
            problems.append(f"{where}.type is {kind!r}, not one of {', '.join(sorted(_TYPES))} (or a list of them)")
    for key in _SCHEMA:
        if key in schema:
            problems += json_schema_problems(schema[key], f"{where}.{key}")
    for key in _SCHEMA_MAP:
        if key in schema:
            if isinstance(schema[key], dict):
                for name, value in schema[key].items():
                    problems += json_schema_problems(value, f"{where}.{key}.{name}")
            else:
                problems.append(f"{where}.{key} must be an object of schemas")
    for key in _SCHEMA_LIST:
        if key in schema:
            if isinstance(schema[key], list) and schema[key]:
                for index, value in enumerate(schema[key]):
                    problems += json_schema_problems(value, f"{where}.{key}[{index}]")
            else:
                problems.append(f"{where}.{key} must be a non-empty list of schemas")
    required = schema.get("required")
    if required is not None and (not isinstance(required, list) or not all(isinstance(r, str) for r in required)
                                 or len(set(required)) < len(required)):
        problems.append(f"{where}.required must be a list of distinct property names")
    if "enum" in schema and not isinstance(schema["enum"], list):
        problems.append(f"{where}.enum must be a list")
    for key in _NUMBER:
        if key in schema and (isinstance(schema[key], bool) or not isinstance(schema[key], (int, float))):
            problems.append(f"{where}.{key} must be a number")
    if "multipleOf" in schema and (isinstance(schema["multipleOf"], bool)
                                   or not isinstance(schema["multipleOf"], (int, float)) or schema["multipleOf"] <= 0):
        problems.append(f"{where}.multipleOf must be a number above 0")
    for key in _COUNT:
        value = schema.get(key)
        if key in schema and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
                              or value != int(value)):
            problems.append(f"{where}.{key} must be a non-negative integer")
    if "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
        problems.append(f"{where}.uniqueItems must be true or false")
    for key in _TEXT:
        if key in schema and not isinstance(schema[key], str):
            problems.append(f"{where}.{key} must be a string")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError) as error:
            problems.append(f"{where}.pattern is not a regular expression: {error}")
    if "examples" in schema and not isinstance(schema["examples"], list):
        problems.append(f"{where}.examples must be a list")
    return problems


def _jsonschema_problem(schema: dict) -> str | None:
    """jsonschema's verdict on ``schema`` when jsonschema is installed (it knows every keyword), else None."""
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
    except ImportError:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        path = "".join(f"[{part!r}]" for part in error.path)
        return f"parameters{path}: {error.message}"
    return None


# ---------------------------------------------------------------------------------------------- the checks
class Conformance:
    """Every check of one installed bootcamp against the plugin contract; ``check_<name>`` raise on a failure.

    Subclass it (or :class:`bootcamp_core.testing.BootcampConformance`, its pytest form) and set ``namespace``;
    override ``solution`` and ``tool_arguments`` so the solved path and real tool calls are checked too.
    """

    #: The bootcamp's namespace (its entry-point name). Required.
    namespace: ClassVar[str]
    #: Seeds used for the identities the checks run on.
    seeds: ClassVar[tuple[int, ...]] = (0, 1, 2)
    #: Records generated per split for the determinism checks.
    samples: ClassVar[int] = 12
    #: The instruction config YAML the checks generate from (its ``split_samples`` set by ``samples``); None: the
    #: bootcamp's default config.
    config_path: ClassVar[str | os.PathLike | None] = None
    #: Unanswered turns an interaction may take before it must have ended the episode.
    interaction_turn_limit: ClassVar[int] = 20
    #: Random garbage outputs each reward scores, on top of :data:`GARBAGE`.
    garbage_samples: ClassVar[int] = 60
    #: Seconds a reward or interaction may take on one hostile output before it counts as hanging.
    hostile_timeout_s: ClassVar[float] = HOSTILE_TIMEOUT_S

    _registry: ClassVar[Registry | None] = None

    # ------------------------------------------------------------------------------------- overridable
    def solution(self, identity: dict) -> str | None:
        """A final assistant message that solves ``identity`` (None: the solved-path checks only run garbage)."""
        return None

    def tool_arguments(self, tool_name: str, identity: dict) -> dict | None:
        """Arguments for a valid call of ``tool_name`` (None: minimal arguments from its schema, errors allowed)."""
        return None

    def instruction_config(self, registry: Registry) -> InstructionConfig:
        """The config the checks generate from: the bootcamp's default (or :attr:`config_path`), small and seeded."""
        from bootcamp_core.data.config import load_yaml, parse_instruction_config
        from bootcamp_core.data.generate import default_config_for

        if self.config_path is not None:
            path = Path(self.config_path)
            data = load_yaml(path)
        else:
            data, path = default_config_for(self.namespace, registry)
        return parse_instruction_config(
            data, path=path, name=self.namespace, namespace=self.namespace,
            overrides={"split_samples": {"train": self.samples, "test": max(2, self.samples // 4)},
                       "gen_parquet": False, "shuffle": False},
        )

    # ---------------------------------------------------------------------------------------- helpers
    @property
    def registry(self) -> Registry:
        cls = type(self)
        if cls._registry is None:
            from bootcamp_core.plugin.loader import Registry

            cls._registry = Registry.from_entry_points()
        return cls._registry

    def plans(self) -> list[Any]:
        from bootcamp_core.data.generate import plan_groups

        return plan_groups(self.instruction_config(self.registry), self.registry)

    def ids(self, kind: str) -> list[str]:
        return self.registry.ids(kind, namespace=self.namespace)

    def cases(self) -> Iterator[tuple[Any, dict, Any]]:
        """(plan, identity, prompt) for every group and seed."""
        for plan in self.plans():
            generator = self.registry.component("generator", plan.generator, plan.config)
            for seed in self.seeds:
                rng = random.Random(seed)
                identity = generator.case_generator(rng)
                yield plan, identity, generator.prompt_func(identity, rng)

    def reward_cases(self) -> list[tuple[Any, Any, dict]]:
        """(plan, reward, identity): one case per reward of the bootcamp's groups."""
        cases = {case[0].reward: case for case in self.cases()}
        return [(plan, self.registry.component("reward", plan.reward), identity)
                for plan, identity, _ in cases.values()]

    def assert_score_in_range(self, reward: Any, identity: dict, output: Any) -> None:
        """One output: ``verify_score`` returns a float in [0, 1], does not raise, and breaks no contract."""
        before = _recorded(reward)
        score = reward.verify_score(output, identity, **episode_kwargs())
        require(isinstance(score, float) and 0.0 <= score <= 1.0, f"score {score!r} for {output!r:.80}")
        _require_no_contract_break(reward, before, f"on {output!r:.80}")

    # ------------------------------------------------------------------------------------------ checks
    def check_plugin_loads_and_registers_a_generator(self) -> None:
        info = self.registry.namespace_plugin(self.namespace)
        require(info.error is None, info.error)
        require(self.ids("generator"), f'bootcamp "{self.namespace}" registers no generator')

    def plugin_package(self) -> tuple[Any, str, str | None]:
        """(the plugin's entry point, the module it names, its top-level package: None for a one-module plugin)."""
        import importlib.util

        info = self.registry.namespace_plugin(self.namespace)
        entry_point = info.entry_point
        require(entry_point is not None and entry_point.dist is not None,
                f'plugin "{self.namespace}" was not loaded from an installed distribution\'s entry point, so it has no '
                "version or package to check: install it (pip install -e .)")
        module = entry_point.module
        top = module.split(".", 1)[0]
        installs = top_level_names(entry_point.dist)
        require(not installs or top in installs,
                f"the entry point names {module}, but {entry_point.dist.name} installs {', '.join(sorted(installs))}: "
                "point it at the hooks module of the distribution's own package")
        spec = importlib.util.find_spec(top)
        return entry_point, module, top if spec is not None and spec.submodule_search_locations is not None else None

    def check_package_version_matches_distribution(self) -> None:
        """The top-level package's ``__version__`` (when it has one) is the installed distribution's version, and the
        entry point names a module inside that package (its hooks), not the package itself."""
        import importlib

        entry_point, module, package = self.plugin_package()
        distribution = entry_point.dist
        require(package is None or module != package,
                f"the entry point names the package {package} itself: point it at the module inside it that holds "
                f"the hooks ({package}.hooks), so importing {package} registers nothing")
        top = importlib.import_module(package or module)
        version = getattr(top, "__version__", None)
        if version is None:
            return
        require(isinstance(version, str), f"{top.__name__}.__version__ is {version!r}, not a string")
        require(version == distribution.version,
                f"{top.__name__}.__version__ is {version} but the installed distribution {distribution.name} is "
                f"{distribution.version}: let the build read the version from the package (hatch: "
                "[tool.hatch.version] path = \"src/<package>/__about__.py\") and reinstall")

    def check_loading_the_plugin_stays_light(self) -> None:
        """In a fresh interpreter: importing the top-level package imports neither the entry point's hooks module nor
        any other hook implementation, and loading the plugin imports none of :data:`HEAVY_MODULES`."""
        _, module, package = self.plugin_package()
        # the allow and block lists chose this plugin already: the child loads it whatever they say
        env = {key: value for key, value in os.environ.items()
               if key not in ("BOOTCAMP_LOAD_PLUGINS", "BOOTCAMP_BLOCK_PLUGINS")}
        try:
            done = subprocess.run(
                [sys.executable, "-c", _LOAD_IN_A_PROCESS, json.dumps(sys.path), _REPORT_MARKER, self.namespace,
                 module, package or ""],
                capture_output=True, text=True, errors="replace", env=env, timeout=LOADING_TIMEOUT_S,
                stdin=subprocess.DEVNULL, check=False,
            )
        except subprocess.TimeoutExpired:
            raise ConformanceError(f"loading the plugin in a fresh process took over {LOADING_TIMEOUT_S:g} s") from None
        report = next((json.loads(line[len(_REPORT_MARKER):]) for line in reversed(done.stdout.splitlines())
                       if line.startswith(_REPORT_MARKER)), None)
        last = (done.stderr.strip().splitlines() or [""])[-1]
        require(report is not None, f"loading the plugin in a fresh process failed (exit {done.returncode}): {last}")
        require(not report["error"], f"loading the plugin in a fresh process failed: {report['error']}")
        if package is not None:
            require(not report["hooks"],
                    f"importing {package} imports its hooks module {module}: keep the package's __init__ free of "
                    "imports of the hooks, so importing the package registers nothing")
            require(not report["registering"],
                    f"importing {package} imports hook implementations ({', '.join(report['registering'])}): only "
                    f"the entry point's module {module} may hold them")
        require(not report["heavy"],
                f"loading the plugin imports {', '.join(report['heavy'])}: import heavy libraries inside the code "
                "that uses them, so `bootcamp plugins`, `generate` and `check` never pay for them")

    def check_generators_draw_only_from_the_rng_passed_in(self) -> None:
        """DESIGN.md: generators draw only from the rng given; the global random module is never touched."""
        expected = list(self.cases())  # once freely first: libraries imported on first use may seed themselves
        before = random.getstate()

        def forbidden(*args: Any, **kwargs: Any) -> Any:
            raise ConformanceError("a generator used the global random module; draw from the rng passed in")

        saved = {name: getattr(random, name) for name in _GLOBAL_RANDOM}
        try:
            for name in _GLOBAL_RANDOM:
                setattr(random, name, forbidden)
            cases = list(self.cases())
        finally:
            for name, function in saved.items():
                setattr(random, name, function)
        require(cases == expected, "the same seeds gave different identities or prompts the second time")
        require(random.getstate() == before, "a generator changed the state of the global random module")

    def check_generation_is_deterministic(self, folder: Path | None = None) -> None:
        if folder is None:
            with tempfile.TemporaryDirectory(prefix="bootcamp-check-") as temporary:
                return self.check_generation_is_deterministic(Path(temporary))
        from bootcamp_core.data.generate import generate

        config = self.instruction_config(self.registry)
        first = generate(config, folder / "a", registry=self.registry)
        again = generate(config, folder / "b", registry=self.registry)
        for left, right in zip(first.files, again.files, strict=True):
            require(left.read_bytes() == right.read_bytes(), f"{left.name}: same seed, different bytes")
        other = generate(attrs.evolve(config, seed=config.seed + 1), folder / "c", registry=self.registry)
        require(any(left.read_bytes() != right.read_bytes() for left, right in zip(first.files, other.files,
                                                                                    strict=True)),
                "a different seed gave the same records")
        # other processes, other string hashes: set iteration order, id() or hash() must not leak into records
        payload = folder / "config.pickle"
        payload.write_bytes(pickle.dumps(config))
        for hash_seed in ("1", "2"):
            target = folder / f"process-{hash_seed}"
            process = subprocess.run(
                [sys.executable, "-c", _GENERATE_IN_A_PROCESS, str(payload), str(target)],
                env={**os.environ, "PYTHONHASHSEED": hash_seed}, capture_output=True, text=True, timeout=600,
                check=False,
            )
            last = (process.stderr.strip().splitlines() or [""])[-1]
            require(process.returncode == 0,
                    f"generating in another process failed (exit {process.returncode}): {last}")
            for path in first.files:
                require((target / path.name).read_bytes() == path.read_bytes(),
                        f"{path.name}: another process (PYTHONHASHSEED={hash_seed}) gave different bytes for the "
                        "same seed")
        return None

    def check_identity_survives_a_json_round_trip(self) -> None:
        for plan, identity, _ in self.cases():
            require(isinstance(identity, dict),
                    f"{plan.generator}: identity is {type(identity).__name__}, not a dict")
            try:
                text = json.dumps(identity, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise ConformanceError(f"{plan.generator}: identity is not JSON: {error}") from None
            require(json.loads(text) == identity, f"{plan.generator}: identity changes through JSON (tuples? keys?)")

    def check_hidden_fields_are_identity_keys(self) -> None:
        for plan, identity, _ in self.cases():
            hidden = type(self.registry.component("generator", plan.generator, plan.config)).hidden_fields
            require(isinstance(hidden, (tuple, list)) and all(isinstance(key, str) for key in hidden),
                    f"{plan.generator}: hidden_fields must be a tuple of identity keys, got {hidden!r}")
            missing = [key for key in hidden if key not in identity]
            require(not missing, f"{plan.generator}: hidden_fields {missing} are not keys of its identity "
                    f"(its keys: {sorted(identity)})")

    def check_prompts_are_not_empty(self) -> None:
        for plan, _, prompt in self.cases():
            if isinstance(prompt, str):
                require(prompt.strip(), f"{plan.generator}: empty prompt")
            else:
                require(isinstance(prompt, list) and prompt,
                        f"{plan.generator}: prompt must be a str or content parts")
                for part in prompt:
                    require(isinstance(part, dict) and part.get("type") in {"text", "image_url"},
                            f"{plan.generator}: bad content part {part!r}")

    def check_tool_parameters_are_valid_json_schema(self) -> None:
        for tool_id in self.ids("tool"):
            cls = self.registry.get_class("tool", tool_id)
            require(isinstance(cls.name, str) and TOOL_NAME.match(cls.name),
                    f"{tool_id}: tool name {cls.name!r} is not a valid function name")
            require(isinstance(getattr(cls, "description", None), str) and cls.description.strip(),
                    f"{tool_id}: no description")
            problems = json_schema_problems(cls.parameters)
            require(not problems, f"{tool_id}: {'; '.join(problems)}")
            problem = _jsonschema_problem(cls.parameters)
            require(problem is None, f"{tool_id}: {problem}")
            require(cls.parameters.get("type") == "object", f"{tool_id}: parameters must be an object schema")
            try:
                json.dumps(cls.openai_schema())
            except (TypeError, ValueError) as error:
                raise ConformanceError(f"{tool_id}: the tool's schema is not JSON: {error}") from None

    def check_tool_lifecycle(self) -> None:
        cases = list(self.cases())
        for plan in {case[0].generator: case[0] for case in cases}.values():
            identities = [identity for case_plan, identity, _ in cases if case_plan.generator == plan.generator]
            for tool_id, tool_name in zip(plan.tools, plan.tool_names):
                tool = self.registry.component("tool", tool_id)
                run_async(self._check_tool, tool, tool_name, identities[0], identities[-1])

    async def _check_tool(self, tool: Any, tool_name: str, identity: dict, other_identity: dict) -> None:
        first = await tool.create("conformance-a", identity=identity)
        require(first == "conformance-a", "create must return the instance id it was given")
        generated = await tool.create(None, identity=other_identity)
        require(isinstance(generated, str) and generated and generated != first, "create(None) must make a new id")
        arguments = self.tool_arguments(tool_name, identity)
        call = arguments if arguments is not None else example_arguments(tool.parameters)
        try:
            result = await tool.execute(first, dict(call))
        except Exception:
            if arguments is not None:
                raise
            result = None  # minimal arguments from the schema may be refused by raising: the engine reports it
        if result is not None:
            _check_execute_result(result)
            first_score = await tool.calc_reward(first)
            for _ in range(2):
                await tool.execute(first, dict(call))
            # a fresh episode with the same identity must not see what the first one did
            fresh = await tool.create("conformance-b", identity=identity)
            again = await tool.execute(fresh, dict(call))
            _check_execute_result(again)
            require(again[0] == result[0],
                    "the same call on a fresh episode answered differently: state leaks between instance ids "
                    f"({result[0]!r:.80} then {again[0]!r:.80})")
            require(await tool.calc_reward(fresh) == first_score,
                    "calc_reward of a fresh episode depends on another")
            await tool.release(fresh)
        await tool.release(first)
        score = await tool.calc_reward(generated)
        require(isinstance(score, (int, float)) and math.isfinite(score), "calc_reward must return a finite number")
        await tool.release(generated)
        await tool.release(generated)  # twice is harmless
        require(not {first, generated} & set(getattr(tool, "instances", {})), "release must drop the episode's state")

    def check_rewards_stay_in_range_and_never_raise_on_garbage(self) -> None:
        outputs = [*garbage_outputs(count=self.garbage_samples), None, "", 123]
        for _, reward, identity in self.reward_cases():
            for output in outputs:
                self.assert_score_in_range(reward, identity, output)

    def check_rewards_and_interactions_survive_hostile_outputs(self) -> None:
        """Every reward's ``verify_score`` and every interaction's ``generate_response`` (after ``start_interaction``
        with a generated identity) answer each of :func:`hostile_outputs`, and :func:`hostile_variants` of the
        solutions, within ``hostile_timeout_s``, without raising, scoring in [0, 1]."""
        rewards = self.reward_cases()
        interactions = {}
        for plan, identity, prompt in self.cases():
            if plan.interaction and plan.interaction not in interactions:
                interactions[plan.interaction] = (self.registry.component("interaction", plan.interaction), identity,
                                                  prompt)
        solutions = [self.solution(identity) for _, _, identity in rewards]
        variants = [variant for solution in solutions if isinstance(solution, str) for variant in
                    hostile_variants(solution)]
        for label, output in itertools.chain(hostile_outputs(), variants):
            for plan, reward, identity in rewards:
                messages = [{"role": "assistant", "content": output}]
                before = _recorded(reward)
                self._hostile(f"{plan.reward}: verify_score", label, lambda reward=reward, identity=identity, output=output,
                              messages=messages: reward.verify_score(output, identity, **episode_kwargs(messages)))
                _require_no_contract_break(reward, before, f"on {label}", what=f"{plan.reward}: verify_score")
            for interaction_id, (interaction, identity, prompt) in interactions.items():
                messages = [{"role": "user", "content": prompt}, {"role": "tool", "content": output},
                            {"role": "assistant", "content": output}]
                self._hostile(f"{interaction_id}: generate_response", label, lambda interaction=interaction,
                              identity=identity, messages=messages: _respond_once(interaction, identity, messages),
                              turn=True)

    def _hostile(self, what: str, label: str, call: Callable[[], Any], *, turn: bool = False) -> None:
        try:
            result = within(self.hostile_timeout_s, call)
        except TimeoutError as error:
            raise ConformanceError(f"{what} on {label}: {error} (extraction must be linear in the output's length: "
                                   "use bootcamp_core.answers, never a backtracking pattern)") from None
        except Exception as error:  # noqa: BLE001 - the bootcamp's own crash is what this check reports
            raise ConformanceError(f"{what} raised on {label}: {_crash(error)}") from None
        if turn:
            require(isinstance(result, tuple) and len(result) == 4, f"{what} on {label}: it must return 4 values")
            result = result[2]
        require(isinstance(result, (int, float)) and not isinstance(result, bool) and 0.0 <= result <= 1.0,
                f"{what} on {label}: score {result!r} is outside [0, 1]")

    def check_solution_scores_one(self) -> None:
        for plan, identity, prompt in self.cases():
            answer = self.solution(identity)
            reward = self.registry.component("reward", plan.reward)
            if answer is None:
                require(reward.verify_score("", identity, **episode_kwargs()) == 0.0, "an empty answer must score 0")
                continue
            messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
            require(reward.verify_score(answer, identity, **episode_kwargs(messages)) == 1.0,
                    f"{plan.reward}: the solution does not score 1 for {identity!r}")

    def check_interactions_terminate(self) -> None:
        for plan, identity, prompt in self.cases():
            if not plan.interaction:
                continue
            interaction = self.registry.component("interaction", plan.interaction)
            run_async(self._check_interaction, interaction, identity, prompt)

    async def _check_interaction(self, interaction: Any, identity: dict, prompt: Any) -> None:
        instance_id = await interaction.start_interaction(None, identity=identity)
        require(isinstance(instance_id, str) and instance_id, "start_interaction must return the instance id")
        messages: list[dict] = [{"role": "user", "content": prompt}]
        limit = self.interaction_turn_limit
        terminated = False
        for turn in range(limit):
            messages.append({"role": "assistant", "content": f"I am not sure ({turn})."})
            result = await interaction.generate_response(instance_id, list(messages))
            require(isinstance(result, tuple) and len(result) == 4, "generate_response returns 4 values")
            terminated, feedback, score, extra = result
            require(isinstance(terminated, bool) and isinstance(feedback, str) and isinstance(extra, dict),
                    "generate_response returns (bool, str, number, dict)")
            require(isinstance(score, (int, float)) and math.isfinite(score), "the turn score must be finite")
            if terminated:
                break
            messages.append({"role": "user", "content": feedback})
        require(terminated, f"the interaction did not end the episode within {limit} unanswered turns")
        await interaction.finalize_interaction(instance_id)
        answer = self.solution(identity)
        if answer is None:
            return
        instance_id = await interaction.start_interaction(None, identity=identity)
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
        terminated, _, score, _ = await interaction.generate_response(instance_id, messages)
        require(terminated, "the interaction must end the episode on a correct answer")
        require(await interaction.calculate_score(instance_id) >= score >= 0.0,
                "calculate_score must be at least the last turn's score, and that at least 0")
        await interaction.finalize_interaction(instance_id)
        await interaction.finalize_interaction(instance_id)

    def check_reference_agents_play_registered_generators(self) -> None:
        """Every reference agent names, in ``generators``, at least one generator, each a registered one (resolved
        as the reference policy resolves it: a name of this bootcamp, a full id or a dotted path)."""
        from bootcamp_core.plugin.errors import UnknownIdError

        for agent_id in self.ids("reference_agent"):
            generators = getattr(self.registry.get_class("reference_agent", agent_id), "generators", None)
            require(isinstance(generators, (list, tuple)) and generators,
                    f"{agent_id}: generators must be a non-empty list or tuple of generator names or ids, got "
                    f"{generators!r}")
            for generator in generators:
                try:
                    self.registry.resolve("generator", generator, namespace=self.namespace)
                except UnknownIdError as error:
                    raise ConformanceError(f"{agent_id} plays {generator!r}, which is no registered generator: "
                                           f"{error}") from None

    # --------------------------------------------------------------------------------------------- running
    def run_check(self, name: str) -> CheckResult:
        """Run one check; a broken rule or a crash of the bootcamp becomes a failed result, never an exception."""
        started = time.perf_counter()
        try:
            getattr(self, f"check_{name}")()
        except ConformanceError as error:
            return CheckResult(name, False, str(error), time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - the bootcamp's own crash is what this check reports
            return CheckResult(name, False, _crash(error), time.perf_counter() - started)
        return CheckResult(name, True, None, time.perf_counter() - started)


#: the checks in the order they run
CHECKS = tuple(name[len("check_"):] for name in vars(Conformance) if name.startswith("check_"))


def _respond_once(interaction: Any, identity: dict, messages: list[dict]) -> tuple:
    """One ``generate_response`` on a fresh instance, on an event loop of this thread; the interaction is finalized."""
    import anyio

    async def respond() -> tuple:
        instance_id = await interaction.start_interaction(None, identity=identity)
        try:
            return await interaction.generate_response(instance_id, messages)
        finally:
            await interaction.finalize_interaction(instance_id)

    return anyio.run(respond)


def _check_execute_result(result: Any) -> None:
    require(isinstance(result, tuple) and len(result) == 3, "execute returns (text, step reward, metrics)")
    text, step_reward, metrics = result
    require(isinstance(text, str), "execute's text must be a str")
    require(isinstance(step_reward, (int, float)) and math.isfinite(step_reward), "step reward must be finite")
    require(isinstance(metrics, dict), "execute's metrics must be a dict")


def _crash(error: BaseException) -> str:
    """``Type: message (at file:line in function)``, at the bootcamp's own line that raised: where to look."""
    import sysconfig

    paths = sysconfig.get_paths()
    core, stdlib = str(Path(__file__).resolve().parents[1]), paths["stdlib"]
    installed = (paths["purelib"], paths["platlib"])

    def bootcamps_own(filename: str) -> bool:  # not the core, nor the standard library it called into
        path = str(Path(filename).resolve())
        return not path.startswith(core) and (not path.startswith(stdlib) or path.startswith(installed))

    frames = traceback.extract_tb(error.__traceback__)
    frame = ([frame for frame in frames if bootcamps_own(frame.filename)] or frames or [None])[-1]
    where = f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name})" if frame else ""
    return f"{type(error).__name__}: {error}{where}"


def run_checks(
    namespace: str,
    only: Sequence[str] | None = None,
    *,
    registry: Registry | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the conformance checks (all, or ``only`` these) on an installed bootcamp; one result per check.

    An unknown or broken namespace raises the loader's error (naming close matches) before any check runs.
    """
    from bootcamp_core.plugin.loader import get_registry

    unknown = [name for name in only or () if name not in CHECKS]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], CHECKS, n=1)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        raise ConfigError(f'no check named "{unknown[0]}".{hint} The checks: {", ".join(CHECKS)}', field="only")
    registry = registry or get_registry()
    registry.namespace_plugin(namespace)
    checks = type("Checks", (Conformance,), {"namespace": namespace, "_registry": registry})()
    results = []
    for name in only or CHECKS:
        result = checks.run_check(name)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


# ------------------------------------------------------------------------------------------------- command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("namespace", help="the bootcamp's namespace (bootcamp plugins lists them)")
    parser.add_argument("--only", metavar="CHECK", action="append", choices=CHECKS,
                        help=f"run only this check (repeatable): {', '.join(CHECKS)}")
    parser.add_argument("--json", action="store_true", help="one JSON object with every check's result")


def run(args: argparse.Namespace) -> int:
    from bootcamp_core.plugin.loader import get_registry

    registry = get_registry()
    info = registry.namespace_plugin(args.namespace)
    if not args.json:
        source = " ".join(filter(None, (info.distribution, info.version)))
        print(f"checking {args.namespace}" + (f" ({source})" if source else ""), flush=True)
    started = time.perf_counter()
    results = run_checks(args.namespace, args.only, registry=registry, on_result=None if args.json else _print)
    failed = [result for result in results if not result.passed]
    if args.json:
        print(json.dumps({"namespace": args.namespace, "distribution": info.distribution, "version": info.version,
                          "passed": not failed, "checks": [result.to_json() for result in results]}, indent=2))
    else:
        print(f"{len(results)} checks: {len(results) - len(failed)} passed, {len(failed)} failed "
              f"in {time.perf_counter() - started:.1f} s")
    return 1 if failed else 0


def _print(result: CheckResult) -> None:
    if result.passed:
        print(f"PASS {result.name} ({result.seconds:.1f} s)", flush=True)
    else:
        reason = " ".join((result.reason or "").split())
        print(f"FAIL {result.name}: {reason[:1000]}", flush=True)


def _recorded(reward: Any) -> list[str]:
    """The errors a reward has recorded so far (``Reward.errors``; none for a reward without the list)."""
    return list(getattr(reward, "errors", ()) or ())


def _require_no_contract_break(reward: Any, before: list[str], where: str, *, what: str | None = None) -> None:
    """Fail when the call just made recorded a :class:`PluginError`: ``verify_score`` scored it 0 instead of raising,
    as it must in a run, but a broken contract (``report_error`` with a kind that is not model-side) is the plugin
    author's to see."""
    recorded = _recorded(reward)
    new = recorded[len(before):] if recorded[:len(before)] == before else recorded
    broken = [message for message in new if "PluginError:" in message]
    require(not broken, f"{what or type(reward).__name__ + '.verify_score'} broke the plugin contract {where}: "
                        f"{broken[0] if broken else ''}")
