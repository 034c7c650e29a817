"""No regular expression reads model output anywhere in the repository (issue: answers that cannot stall a run).

Model output may be megabytes of anything, and a backtracking pattern on it can hold the event loop for minutes.
Rewards, interactions, tools and answer parsers read it with ``bootcamp_core.answers`` (linear-time scans). This test
lists every source file that imports ``re`` and fails on any file not below, each named with what its patterns read,
so a new pattern has to be justified here, in review, or replaced by ``bootcamp_core.answers``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: file -> what its patterns read (none of it written by a model)
ALLOWED = {
    "core/src/bootcamp_core/cli/check.py": "tool names and JSON-schema patterns of a plugin's own tool specs",
    "core/src/bootcamp_core/cli/helpers.py": "the project's own error messages, to name the CLI flag of a field",
    "core/src/bootcamp_core/cli/new.py": "the template's source files, to rename the template's namespace",
    "core/src/bootcamp_core/plugin/ids.py": "namespaces and component names declared by plugins",
    "core/src/bootcamp_core/serve/client.py": "tool ids and server URLs from the user's configuration",
    "core/src/bootcamp_core/scale/tools.py": "tool ids and served tool names from the user's configuration",
    "bootcamp-reasoning-gym/src/bootcamp_reasoning_gym/datasets.py":
        "reasoning-gym's own verifier source, to find the verifiers that evaluate model text",
    "bootcamp-texas-holdem/src/bootcamp_texas_holdem/agent.py":
        "the table's own text (cards, pot, legal actions) that the reference agent plays from",
    "bootcamp-texas-holdem/src/bootcamp_texas_holdem/shortcuts.py":
        "the table's own list of legal actions, which the scripted shortcut players pick from",
    "bench/bench_holdem_shortcuts.py": "the match's own final line (the big blinds won), as the game wrote it",
}

SOURCE_DIRS = ["core/src", "bench", "plugins", *sorted(str(path.relative_to(ROOT)) for path in ROOT.glob("bootcamp-*/src"))]


def _imports_re(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name in ("re", "regex") for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module in ("re", "regex"):
            return True
    return False


def _sources() -> list[str]:
    found = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            if "tests" not in path.relative_to(ROOT).parts:
                found.append(str(path.relative_to(ROOT)))
    return found


def test_only_the_listed_files_use_regular_expressions():
    sources = _sources()
    assert len(sources) > 100  # the scan reads the repository, not an empty directory
    using = {name for name in sources if _imports_re(ROOT / name)}
    unexpected = sorted(using - set(ALLOWED))
    assert not unexpected, (
        f"{unexpected} import re: read model output with bootcamp_core.answers (linear time), or add the file to "
        "ALLOWED with what its patterns read"
    )
    assert sorted(set(ALLOWED) - using) == [], "ALLOWED lists files that no longer use patterns: drop them"


def test_the_scan_sees_an_import_of_re(tmp_path):
    probe = tmp_path / "probe.py"
    for source, expected in (("import re\n", True), ("from re import compile\n", True), ("import os, re\n", True),
                             ("import reprlib\n", False), ("def f():\n    import re\n", True), ("x = 're'\n", False)):
        probe.write_text(source, encoding="utf-8")
        assert _imports_re(probe) is expected, source
