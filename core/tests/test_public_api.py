"""The public API: ``bootcamp_core.__all__`` is docs/api.md's list (and DESIGN.md's, where it is beside the repo),
nothing else is exported, importing it stays cheap, and old import paths still resolve with a warning."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import bootcamp_core
from bootcamp_core.plugin import components, errors

REPO = Path(__file__).resolve().parents[2]
API_PAGE = REPO / "docs" / "api.md"
DESIGN = REPO.parent / "shared" / "DESIGN.md"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def page_section(title: str) -> list[str]:
    """The names of the ``- `name`: ...`` items under docs/api.md's heading ``## title``."""
    text = API_PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"^- `([^`]+)`", text[start:end if end != -1 else len(text)], re.M)


def paragraph(text: str, opening: str) -> str:
    start = text.index(opening)
    end = text.find("\n\n", start)
    return text[start:end if end != -1 else len(text)]


def listed_names(text: str) -> list[str]:
    """The backticked names of a DESIGN.md sentence outside its parentheses, which only explain (`create` calls)."""
    tokens: list[str] = []

    def placeholder(match: re.Match) -> str:
        tokens.append(match.group(1))
        return f"\0{len(tokens) - 1}\0"

    text = re.sub(r"`([^`]*)`", placeholder, text)
    outside, depth = [], 0
    for character in text:
        depth += character == "("
        if depth == 0:
            outside.append(character)
        depth -= character == ")" and depth > 0
    names = []
    for index in re.findall(r"\0(\d+)\0", "".join(outside)):
        token = tokens[int(index)].split("(", 1)[0].removeprefix("bootcamp_core.")
        if IDENTIFIER.match(token):
            names.append(token)
    return names


def design_names(design: str) -> set[str]:
    """DESIGN.md's public API list, its phrases ("the base classes", "the errors", ...) spelled out."""
    api = paragraph(design, "The public API (`bootcamp_core.__all__`")
    names = set(listed_names(api.split("`bootcamp_core.testing` adds")[0]))
    if "the base classes" in api:
        names |= set(components.__all__) - {"Component"}
    if "the errors" in api:
        names |= {name for name, value in vars(errors).items()
                  if inspect.isclass(value) and issubclass(value, errors.BootcampError)}
    if "the shared building blocks" in api:
        names |= set(listed_names(paragraph(design, "Shared building blocks (`bootcamp_core`)")))
    return names


def test_all_is_the_list_of_record_in_docs_api():
    documented = page_section("From DESIGN.md") + page_section("Added by this change, pending DESIGN.md")
    assert len(documented) == len(set(documented)), "a name is listed twice in docs/api.md"
    assert sorted(bootcamp_core.__all__) == sorted(documented)
    assert len(bootcamp_core.__all__) == len(set(bootcamp_core.__all__))


@pytest.mark.skipif(not DESIGN.is_file(), reason="DESIGN.md is not beside the repository")
def test_all_holds_design_md_list_and_only_names_docs_api_marks_as_added():
    design = DESIGN.read_text(encoding="utf-8")
    listed = design_names(design)
    assert {"TaskGenerator", "InfrastructureError", "AnswerFeedback", "answers", "get_registry"} <= listed
    assert listed - set(bootcamp_core.__all__) == set(), "DESIGN.md names missing from bootcamp_core.__all__"
    added = set(bootcamp_core.__all__) - listed
    assert added == set(page_section("Added by this change, pending DESIGN.md"))
    assert set(page_section("From DESIGN.md")) == listed
    # the page quotes DESIGN.md's sentence as it stands
    quoted = paragraph(API_PAGE.read_text(encoding="utf-8"), "> The public API").replace("\n> ", " ")
    assert " ".join(quoted.removeprefix("> ").split()) == " ".join(
        paragraph(design, "The public API (`bootcamp_core.__all__`").split("`bootcamp_core.testing` adds")[0].split())


def test_every_public_name_resolves_and_is_described_by_a_docstring():
    for name in bootcamp_core.__all__:
        value = getattr(bootcamp_core, name)
        if callable(value) and name != "Register":
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"
    assert inspect.ismodule(bootcamp_core.answers)


def test_nothing_but_the_api_is_exported_even_after_every_layer_is_imported():
    script = (
        "import json, bootcamp_core\n"
        "for name in bootcamp_core.__all__: getattr(bootcamp_core, name)\n"
        "import bootcamp_core.cli.main, bootcamp_core.evaluate.run, bootcamp_core.serve.client\n"
        "print(json.dumps([n for n in dir(bootcamp_core) if not n.startswith('_')]))\n"
    )
    shown = json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                      text=True).stdout)
    assert sorted(shown) == sorted(bootcamp_core.__all__)
    assert "__version__" in dir(bootcamp_core)


def test_import_is_cheap():
    script = (
        "import sys, json, bootcamp_core\n"
        "from bootcamp_core import answers, AnswerFeedback, CallBudget, last_assistant_text, tool_call_message\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                           text=True).stdout))
    heavy = {name for name in loaded if name.split(".")[0] in {"pyarrow", "openai", "httpx", "starlette", "uvicorn",
                                                               "yaml", "rich", "anyio"}}
    assert heavy == set()


def test_api_version_is_the_number_a_plugin_can_check_its_hooks_against():
    # the plugin API's version: a positive whole number, and every hook a plugin may implement exists at it
    assert isinstance(bootcamp_core.API_VERSION, int) and bootcamp_core.API_VERSION >= 1
    from bootcamp_core.plugin import hookspecs

    hooks = {name for name in vars(hookspecs) if name.startswith("bootcamp_register_")}
    assert {"bootcamp_register_task_generators", "bootcamp_register_tools", "bootcamp_register_interactions",
            "bootcamp_register_rewards", "bootcamp_register_reference_agents"} <= hooks


#: old path -> a name third-party bootcamps import from it today
OLD_PATHS = [
    ("bootcamp_core.plugins", "Registry"),
    ("bootcamp_core.plugins", "get_registry"),
    ("bootcamp_core.rollout", "message_text"),
    ("bootcamp_core.rollout", "run_episode"),
    ("bootcamp_core.hookspecs", "Register"),
    ("bootcamp_core.hookspecs", "hookimpl"),
    ("bootcamp_core.interfaces", "Tool"),
    ("bootcamp_core.errors", "ConfigError"),
    ("bootcamp_core.generate", "iter_records"),
    ("bootcamp_core.generate", "config_for_bootcamp"),
    ("bootcamp_core.generate", "generate"),
    ("bootcamp_core.config", "parse_instruction_config"),
    ("bootcamp_core.records", "EpisodeResult"),
    ("bootcamp_core.recordio", "read_records"),
    ("bootcamp_core.policies", "ReferencePolicy"),
    ("bootcamp_core.evaluate", "run_evaluation"),
    ("bootcamp_core.remote", "ToolServerClient"),
]


@pytest.mark.parametrize(("module", "name"), OLD_PATHS)
def test_old_import_paths_resolve_with_a_deprecation_warning(module, name):
    shim = importlib.import_module(module)
    # a name of the API under its own name, or under a new one ("use bootcamp_core.generate_dataset"), or internal
    with pytest.warns(DeprecationWarning,
                      match=rf"{re.escape(module)}\.{name} moved: (import it from|use) bootcamp_core"):
        value = getattr(shim, name)
    assert value is not None
    if name in bootcamp_core.__all__:
        assert value is getattr(bootcamp_core, name)


def test_an_old_path_names_the_new_public_name_of_a_renamed_function():
    from bootcamp_core import generate as old_module

    with pytest.warns(DeprecationWarning, match=r"bootcamp_core\.generate\.generate moved: use "
                                                r"bootcamp_core\.generate_dataset \("):
        assert old_module.generate is bootcamp_core.generate_dataset


def test_an_old_path_names_the_public_home_of_a_name_in_the_api():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from bootcamp_core.plugins import Registry  # noqa: F401
    assert "import it from bootcamp_core " in str(caught[0].message)
    with pytest.raises(ImportError):
        from bootcamp_core.plugins import no_such_name  # noqa: F401
