"""The README's list of generators (by family) and of excluded datasets is the registry's, exactly."""

from __future__ import annotations

from pathlib import Path

from bootcamp_reasoning_gym import datasets

README = Path(__file__).resolve().parents[1] / "README.md"


def generator_list() -> str:
    """The README's list: a line per family, each id marked `*` when its verifier runs in the sandbox."""
    lines = []
    for family, names in datasets.families().items():
        ids = ", ".join(f"`reasoning_gym/{name}`" + ("*" if datasets.evaluates_model_text(name) else "")
                        for name in names)
        lines.append(f"- **{family}** ({len(names)}): {ids}")
    return "\n".join(lines)


def exclusion_table() -> str:
    rows = [f"| `{name}` | {reason} |" for name, reason in sorted(datasets.EXCLUDED.items())]
    return "\n".join(["| dataset | reason |", "| --- | --- |", *rows])


def test_readme_lists_every_generator_by_family_and_every_exclusion():
    text = README.read_text()
    assert generator_list() in text, "regenerate the README's list:\n" + generator_list()
    assert exclusion_table() in text, "regenerate the README's table:\n" + exclusion_table()
    assert f"{len(datasets.dataset_names())} generators" in text
