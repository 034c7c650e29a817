"""docs/building-blocks.md stays true: every python block runs on its own, and every building block, each of
AnswerFeedback's class variables and hooks, each answers function and each test driver has its section and example."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import pytest

import bootcamp_core
from bootcamp_core import AnswerFeedback, Interaction, answers

PAGE = Path(__file__).resolve().parents[2] / "docs" / "building-blocks.md"
#: the blocks of bootcamp_core the page documents, and the drivers of bootcamp_core.testing
BLOCKS = ["AnswerFeedback", "CallBudget", "tool_call_message", "last_assistant_text", "message_text"]
DRIVERS = ["draws", "converse", "run_tool_calls"]


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def blocks(text: str | None = None) -> list[str]:
    """The python blocks of ``text`` (default: the whole page); a fence inside a string literal is no block's end."""
    return re.findall(r"^```python\n(.*?)^```$", page() if text is None else text, flags=re.DOTALL | re.MULTILINE)


def sections() -> dict[str, str]:
    """{heading: its text up to the next heading} of the page's ``## `` sections."""
    parts = re.split(r"^## (.+)$", page(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def section_of(name: str) -> str:
    found = [text for heading, text in sections().items() if f"`{name}`" in heading]
    assert len(found) == 1, f"docs/building-blocks.md has no section headed by `{name}`"
    return found[0]


@pytest.mark.parametrize("index", range(len(blocks())))
def test_every_python_block_runs_on_its_own(index: int):
    module = types.ModuleType(f"building_blocks_example_{index}")
    exec(compile(blocks()[index], f"{PAGE}:block {index + 1}", "exec"), module.__dict__)  # noqa: S102


def test_every_building_block_has_a_section_with_an_example_that_uses_it():
    for name in BLOCKS:
        assert name in bootcamp_core.__all__
        code = "".join(blocks(section_of(name)))
        assert re.search(rf"\b{name}\(", code) or re.search(rf"\(\s*{name}\s*\)", code), (
            f"the section of {name} has no example that uses it")


def test_answer_feedbacks_class_variables_and_hooks_are_each_described():
    text = section_of("AnswerFeedback")
    class_variables = [name for name in AnswerFeedback.__annotations__ if not name.startswith("_")]
    assert {"reward", "max_attempts", "reveal"} <= set(class_variables)
    for name in class_variables:
        assert re.search(rf"^\| `{name}` \|", text, flags=re.MULTILINE), f"no row for AnswerFeedback.{name}"
    hooks = [name for name, value in vars(AnswerFeedback).items()
             if inspect.isfunction(value) and not name.startswith("_") and name not in vars(Interaction)]
    assert {"answer_text", "unanswered_feedback"} <= set(hooks)
    code = "".join(blocks(text))
    for name in hooks:
        assert f"def {name}(" in code, f"no example overrides AnswerFeedback.{name}"


def test_each_answers_function_and_each_test_driver_has_an_example():
    text = page()
    for name in [*answers.__all__, *DRIVERS]:
        assert f"`{name}(" in text, f"docs/building-blocks.md does not describe {name}"
        assert any(re.search(rf"\b{name}\(", block) for block in blocks()), f"no example calls {name}"
