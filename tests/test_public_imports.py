"""Every package outside core/ (the bootcamps, `bootcamp new`'s template = bootcamp-example, plugins/*) imports only
`bootcamp_core` and `bootcamp_core.testing`, and no private name from either: checked on the source, without
importing it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bootcamp_core

REPO = Path(__file__).resolve().parents[1]
ALLOWED_MODULES = {"bootcamp_core", "bootcamp_core.testing"}


def package_sources() -> list[Path]:
    folders = sorted(REPO.glob("bootcamp-*")) + sorted(path for path in (REPO / "plugins").iterdir() if path.is_dir())
    sources = [path for folder in folders for path in sorted(folder.rglob("*.py"))
               if not any(part.startswith(".") or part in {"build", "dist"} for part in path.relative_to(REPO).parts)]
    # `bootcamp new --minimal`'s skeleton: Python before its namespace is rendered
    return sources + sorted((REPO / "core/src/bootcamp_core/cli/minimal_template").rglob("*.py.tmpl"))


def core_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what is wrong) for every import of the core beyond its public API, at any depth of the module."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "bootcamp_core" and alias.name not in ALLOWED_MODULES:
                    problems.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bootcamp_core":
            if node.level == 0 and node.module not in ALLOWED_MODULES:
                problems.append((node.lineno, f"from {node.module} import ..."))
            for alias in node.names:
                if alias.name.startswith("_"):
                    problems.append((node.lineno, f"private name {alias.name} from {node.module}"))
                elif node.module == "bootcamp_core" and alias.name not in bootcamp_core.__all__ + ["testing"]:
                    problems.append((node.lineno, f"{alias.name} is not in bootcamp_core.__all__"))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "bootcamp_core"
              and node.attr not in bootcamp_core.__all__ + ["testing", "__version__"]):
            problems.append((node.lineno, f"bootcamp_core.{node.attr}"))
    return problems


def test_the_walk_finds_every_package_and_its_tests():
    sources = {path.relative_to(REPO).parts[0] for path in package_sources()}
    assert {"bootcamp-example", "bootcamp-texas-holdem", "plugins", "core"} <= sources
    assert any(path.parts[-2] == "tests" for path in package_sources())


def test_the_check_sees_every_kind_of_reach_into_the_core():
    source = ("import bootcamp_core.plugin.loader\nfrom bootcamp_core.episode.engine import message_text\n"
              "from bootcamp_core import _LAZY, Tool\nfrom bootcamp_core.testing import _run\n"
              "def later():\n    from bootcamp_core.data import io\n    return bootcamp_core.data\n")
    assert [line for line, _ in core_imports(ast.parse(source))] == [1, 2, 3, 4, 6, 7]


@pytest.mark.parametrize("path", package_sources(), ids=lambda path: str(path.relative_to(REPO)))
def test_imports_only_the_public_api(path: Path):
    problems = core_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    assert problems == [], "\n".join(f"{path.relative_to(REPO)}:{line}: {what}" for line, what in problems)
