"""``bootcamp new NAME``: a new bootcamp package rendered from bootcamp-example, the living template, or with
``--minimal`` from a small skeleton (one generator, one reward, their tests: the conformance kit and the test
drivers of ``bootcamp_core.testing``).

The full template is bootcamp-example itself (packaged into bootcamp-core's wheel, or read from the source tree in a
development install); the skeleton lives beside this module, each file ending in ``.tmpl`` so no tool takes it for
code of the core. Both spell their namespace only as ``example`` (ids ``example/...``, ``bootcamp_example``,
``bootcamp-example``), so rendering is a word substitution and the result is a working bootcamp under the new name.
"""

from __future__ import annotations

import argparse
import re
import shutil
from importlib import resources
from pathlib import Path

from bootcamp_core.cli.helpers import add_flag
from bootcamp_core.plugin.errors import BootcampError, ConfigError

HELP = "scaffold a new bootcamp package from the living template (--minimal: a small skeleton)"
DESCRIPTION = """\
Create bootcamp-<name>/: an installable, tested bootcamp package under the namespace NAME. By default a copy of
bootcamp-example (a generator, a tool, an interaction, a reward, a reference agent and their tests); with --minimal
a small skeleton: one generator, one reward, their tests (the conformance kit and the task's own), pyproject.toml
with the entry point, README. Either way the folder is ready to be a repository of its own: a CI workflow (tests and
`bootcamp check` on Python 3.10-3.13, lowest and newest bootcamp-core), a release workflow (hatch build, trusted
publishing to the package index), hatch.toml and .gitignore."""

TEMPLATE_NAMESPACE = "example"
#: the --minimal skeleton: files ending in .tmpl, rendered like the full template
MINIMAL_TEMPLATE = Path(__file__).resolve().parent / "minimal_template"
#: what makes either one a repository of its own: CI and release workflows, hatch.toml, .gitignore (a leading
#: ``dot-`` in a name stands for ``.``, so no tool takes the template's files for this repository's own)
REPO_TEMPLATE = Path(__file__).resolve().parent / "plugin_repo_template"
_DOT = "dot-"
_SUFFIX = ".tmpl"
_WORD = re.compile(r"(?<![A-Za-z0-9])example(?![A-Za-z0-9])")
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", ".venv", "build", "dist"}
#: in place of bootcamp-example's own project links (this repository's, not the new bootcamp's)
URLS_TO_FILL_IN = """\
# the links the package index shows on the project's page: fill in your repository and uncomment
# [project.urls]
# Homepage = "https://github.com/OWNER/bootcamp-example"
# Source = "https://github.com/OWNER/bootcamp-example"
# Issues = "https://github.com/OWNER/bootcamp-example/issues"
# Changelog = "https://github.com/OWNER/bootcamp-example/blob/main/CHANGELOG.md"
"""


def template_root() -> Path:
    """Where the template lives: inside the installed wheel, else the source tree's bootcamp-example/."""
    packaged = resources.files("bootcamp_core") / "_template"
    if packaged.is_dir():
        return Path(str(packaged))
    source_tree = Path(__file__).resolve().parents[4] / "bootcamp-example"
    if (source_tree / "pyproject.toml").is_file():
        return source_tree
    raise BootcampError("this install of bootcamp-core has no bootcamp template; reinstall bootcamp-core")


def render(text: str, namespace: str) -> str:
    """The template's text with its namespace replaced (``bootcamp-example`` → ``bootcamp-my-task``, ...)."""
    text = text.replace(f"bootcamp-{TEMPLATE_NAMESPACE}", f"bootcamp-{namespace.replace('_', '-')}")
    return _WORD.sub(namespace, text)


def new_bootcamp(namespace: str, output_dir: Path = Path("."), *, force: bool = False, minimal: bool = False) -> Path:
    """Create ``<output_dir>/bootcamp-<namespace>/``: a complete, installable, tested bootcamp package."""
    from bootcamp_core.plugin.loader import NAMESPACE_PATTERN

    if not NAMESPACE_PATTERN.match(namespace) or not namespace[0].isalpha():
        raise ConfigError(
            f'"{namespace}" is not a valid namespace: start with a letter, then lowercase letters, digits or "_"'
        )
    source = MINIMAL_TEMPLATE if minimal else template_root()
    target = Path(output_dir) / render(f"bootcamp-{TEMPLATE_NAMESPACE}", namespace)
    if target.exists():
        if not force:
            raise ConfigError(f"{target} already exists (use --force to overwrite it)")
        shutil.rmtree(target)
    for root in (source, REPO_TEMPLATE):
        _copy_rendered(root, target, namespace)
    return target


def without_project_urls(pyproject: str) -> str:
    """``pyproject`` with its ``[project.urls]`` table replaced by :data:`URLS_TO_FILL_IN`."""
    start = pyproject.find("\n[project.urls]\n")
    if start < 0:
        return pyproject
    end = pyproject.find("\n[", start + 1)
    rest = pyproject[end + 1:] if end >= 0 else ""
    return pyproject[:start + 1] + URLS_TO_FILL_IN + ("\n" + rest if rest else "")


def _copy_rendered(source: Path, target: Path, namespace: str) -> None:
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if any(part in _SKIP_DIRS or part.endswith(".egg-info") for part in relative.parts) or path.suffix == ".pyc":
            continue
        parts = [render(part.removesuffix(_SUFFIX), namespace) for part in relative.parts]
        destination = target / Path(*("." + part[len(_DOT):] if part.startswith(_DOT) else part for part in parts))
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            text = path.read_text(encoding="utf-8")
            if parts == ["pyproject.toml"]:
                text = without_project_urls(text)
            destination.write_text(render(text, namespace), encoding="utf-8")
        except UnicodeDecodeError:
            shutil.copyfile(path, destination)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the namespace, e.g. my_task (lowercase letters, digits, _)")
    add_flag(parser, "--output-dir", default=".", metavar="DIR", help="where to create bootcamp-<name>/ (default: .)")
    parser.add_argument("--minimal", action="store_true",
                        help="a small skeleton: one generator, one reward and the conformance test")
    parser.add_argument("--force", action="store_true", help="overwrite an existing folder")


def run(args: argparse.Namespace) -> int:
    target = new_bootcamp(args.name, Path(args.output_dir), force=args.force, minimal=args.minimal)
    print(f"created {target}")
    print(f"next: pip install -e {target} && bootcamp check {args.name} && pytest {target / 'tests'}")
    return 0
