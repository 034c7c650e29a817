"""The core's layers (DESIGN.md, Layout): each module belongs to one layer, and a layer imports only the layers above
it, so there are no cycles between layers. Checked on the source (every import statement, inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bootcamp_core

# the source tree's package (an installed wheel's also holds the bundled bootcamp-example template, data)
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "bootcamp_core"
#: DESIGN.md's order: a layer may import the layers before it in this list, never one after it
LAYERS = ["plugin", "answers", "blocks", "data", "episode", "evaluate", "serve", "mcp", "scale", "postprocess",
          "rescore", "cli", "testing"]
#: modules of no layer: the public API re-exports from every layer, the version, the shim helper
NO_LAYER = {"bootcamp_core", "bootcamp_core.__about__", "bootcamp_core._moved"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, ast.Module]:
    return {module_name(path): ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(PACKAGE.rglob("*.py"))}


def is_shim(tree: ast.Module) -> bool:
    """An old import path kept for a while: it only forwards names (``bootcamp_core._moved.forward``)."""
    return any(isinstance(node, ast.ImportFrom) and node.module == "bootcamp_core._moved" for node in tree.body)


def layer_of(name: str, trees: dict[str, ast.Module]) -> str | None:
    """The layer of a module of the core; None for the modules of no layer and the shims."""
    if name in NO_LAYER or (name in trees and is_shim(trees[name])):
        return None
    first = name.split(".")[1]
    return first if first in LAYERS else "?"


def public_home(attribute: str) -> str:
    """The module ``from bootcamp_core import attribute`` takes the name from."""
    lazy = {**bootcamp_core._LAZY, **bootcamp_core._MODULES}
    if attribute in lazy:
        return lazy[attribute].partition(":")[0]
    value = getattr(bootcamp_core, attribute, None)
    return getattr(value, "__module__", None) or "bootcamp_core.__about__"


def imported(name: str, tree: ast.Module, trees: dict[str, ast.Module]) -> list[tuple[int, str]]:
    """(line, module of the core) of every import in a module, at any depth; ``from bootcamp_core import X`` counts
    as an import of the module X comes from."""
    package = name if name in trees and trees[name] is tree and _is_package(name) else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "bootcamp_core"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "bootcamp_core":
                continue
            for alias in node.names:
                target = f"{module}.{alias.name}"
                if module == "bootcamp_core":
                    found.append((node.lineno, public_home(alias.name)))
                else:
                    found.append((node.lineno, target if target in trees else module))
    return found


def _is_package(name: str) -> bool:
    return (PACKAGE.parent / Path(*name.split(".")) / "__init__.py").is_file()


def layer_imports() -> list[tuple[str, int, str, str, str]]:
    """(module, line, imported module, its layer, the importer's layer) of every import between two layers."""
    trees = modules()
    edges = []
    for name, tree in trees.items():
        layer = layer_of(name, trees)
        if layer is None:
            continue
        for line, target in imported(name, tree, trees):
            target_layer = layer_of(target, trees)
            if target in trees and is_shim(trees[target]):
                edges.append((name, line, target, "a deprecated path", layer))
            elif target_layer is not None and target_layer != layer:
                edges.append((name, line, target, target_layer, layer))
    return edges


def test_every_module_of_the_core_is_in_a_layer_or_is_a_shim():
    trees = modules()
    assert [name for name in trees if layer_of(name, trees) == "?"] == []
    assert layer_of("bootcamp_core.plugin.loader", trees) == "plugin"
    assert layer_of("bootcamp_core.rollout", trees) is None  # a shim


def test_no_layer_imports_a_layer_below_it_or_a_deprecated_path():
    upward = [f"{name}:{line} imports {target} ({target_layer}, below {layer})"
              for name, line, target, target_layer, layer in layer_imports()
              if target_layer == "a deprecated path" or LAYERS.index(target_layer) > LAYERS.index(layer)]
    assert upward == [], "\n".join(upward)


def test_no_cycle_between_layers():
    graph: dict[str, set[str]] = {layer: set() for layer in LAYERS}
    for _, _, _, target_layer, layer in layer_imports():
        if target_layer in graph:
            graph[layer].add(target_layer)
    cycles = [component for component in _strongly_connected(graph) if len(component) > 1]
    assert cycles == [], f"layers importing each other: {cycles}"


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                component.append(item)
                if item == node:
                    break
            components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components


@pytest.mark.parametrize(("source", "expected"), [
    ("from bootcamp_core.serve.client import client_for", "bootcamp_core.serve.client"),
    ("def f():\n    import bootcamp_core.cli.main", "bootcamp_core.cli.main"),
    ("from ..serve import client", "bootcamp_core.serve.client"),
    ("from bootcamp_core import tool_server_client", "bootcamp_core.serve.client"),
])
def test_the_walk_sees_every_form_of_import(source, expected):
    trees = modules()
    tree = ast.parse(source)
    assert [target for _, target in imported("bootcamp_core.episode.engine", tree, {**trees})] == [expected]
