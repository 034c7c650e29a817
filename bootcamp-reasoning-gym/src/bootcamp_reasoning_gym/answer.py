"""The answer format the prompts ask for, and reading it back."""

from __future__ import annotations

from bootcamp_core import answers

__all__ = ["ANSWER_INSTRUCTION", "extract_answer", "format_answer"]

ANSWER_INSTRUCTION = "Put your final answer, and nothing else, inside \\boxed{...}, e.g. \\boxed{42}."


def extract_answer(output: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (braces balanced), stripped; ``None`` when there is none."""
    boxed = answers.last_boxed(output)
    return None if boxed is None else boxed.strip()


def format_answer(answer: str) -> str:
    """A final answer in the format the prompt asks for."""
    return f"\\boxed{{{answer}}}"
