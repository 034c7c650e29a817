"""The exact parser/evaluator, number formatting and the expression sampler."""

from __future__ import annotations

import builtins
import random
from fractions import Fraction

import pytest

from bootcamp_example.arithmetic import (
    MAX_EXPRESSION_LENGTH,
    MAX_NESTING,
    ExpressionError,
    ExpressionSampler,
    evaluate,
    format_number,
    parse_number,
)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", 14),
        ("2 * 3 + 4", 10),
        ("10 - 4 - 3", 3),
        ("100 / 10 / 5", 2),
        ("2 * 3 / 4", Fraction(3, 2)),
        ("8 / 4 * 2", 4),
        ("123 + 456 * 789 / 12", 30105),
        ("(2 + 3) * 4", 20),
        ("((1 + 2) * (3 + 4)) / (5 - 2)", 7),
        ("-3 * -2", 6),
        ("--3", 3),
        ("2 - -3", 5),
        ("-(2 + 3)", -5),
        ("+4", 4),
        ("-2 * 3 + 1", -5),
        ("1.2e-3", Fraction(12, 10_000)),
        ("1E+3 / 4", 250),
        (".5 + 5.", Fraction(11, 2)),
        ("2.5e2", 250),
        ("6 × 7 ÷ 2 − 1", 20),
        ("  7  ", 7),
        ("007 * 2", 14),
        ("\u0661 + 1", 2),  # a digit of another script, read as Python reads it
        ("12345678901234567890 - 12345678901234567889", 1),
    ],
)
def test_evaluates_with_standard_precedence(expression: str, value: Fraction | int) -> None:
    assert evaluate(expression) == value


def test_arithmetic_is_exact() -> None:
    assert evaluate("1/3*3") == 1
    assert evaluate("0.1 + 0.2") == Fraction(3, 10)
    assert evaluate("1 / 7 + 6 / 7") == 1
    assert evaluate("10000000000000001 * 10000000000000001") == 10_000_000_000_000_001**2


def test_a_long_run_of_signs_does_not_recurse() -> None:
    assert evaluate("-" * 1001 + "1") == -1


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("1 +", "end of expression"),
        ("(1 + 2", "expected ')'"),
        ("1 + 2)", "unexpected ')'"),
        ("1 2", "unexpected '2'"),
        ("2 ** 3", "expected a number"),
        ("1 / 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("__import__('os')", "unexpected character '_'"),
        ("abs(-1)", "unexpected character 'a'"),
        ("x + 1", "unexpected character 'x'"),
        ("1e999", "exponent"),
        ("(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1), "nested"),
        ("1+" * (MAX_EXPRESSION_LENGTH // 2) + "1", "limit"),
        ("*".join(["1e400"] * 10), "bits"),
    ],
)
def test_rejects_bad_expressions_with_a_clear_message(expression: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        evaluate(expression)


def test_rejects_a_non_string() -> None:
    with pytest.raises(ExpressionError, match="string"):
        evaluate(12)  # type: ignore[arg-type]


def test_never_calls_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/exec must never be used")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert evaluate("(1 + 2) * 3 / 4") == Fraction(9, 4)
    with pytest.raises(ExpressionError):
        evaluate("__import__('os').system('true')")


def test_nesting_up_to_the_limit_is_fine() -> None:
    assert evaluate("(" * MAX_NESTING + "1" + ")" * MAX_NESTING) == 1


@pytest.mark.parametrize(
    ("text", "value"), [("12.5", Fraction(25, 2)), (" -3e2 ", -300), ("+.25", Fraction(1, 4)), ("7", 7)]
)
def test_parse_number(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["abc", "1+1", "", "1e", "--1", "nan", "inf"])
def test_parse_number_rejects_non_numbers(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse_number(text)


def test_format_number() -> None:
    assert format_number(Fraction(10**30)) == "1" + "0" * 30
    assert format_number(Fraction(-42)) == "-42"
    assert format_number(Fraction(-5, 2)) == "-2.5"
    assert format_number(Fraction(1, 3)) == "0.33333333333333331"
    assert float(format_number(Fraction(1, 3))) == 1 / 3
    assert format_number(Fraction(10**400 + 1, 3)) == "3.3333333333333333E+399"
    assert format_number(Fraction(1, 3 * 10**400)) == "3.3333333333333333E-401"


def test_sampler_values_match_the_parser() -> None:
    sampler = ExpressionSampler(1, 50, 2, 12)
    rng = random.Random(3)
    for _ in range(500):
        expression, value = sampler.draw(rng)
        assert value == float(evaluate(expression))


def test_sampler_shows_negative_operands_in_parentheses() -> None:
    sampler = ExpressionSampler(-9, -1, 3, 3)
    expression, value = sampler.draw(random.Random(0))
    assert expression.startswith("(-")
    assert value == float(evaluate(expression))


def test_sampler_draws_again_on_a_zero_divisor() -> None:
    sampler = ExpressionSampler(0, 2, 2, 4, "/")
    rng = random.Random(1)
    for _ in range(200):
        expression, value = sampler.draw(rng)
        assert value == float(evaluate(expression))


def test_sampler_draws_again_on_float_overflow() -> None:
    sampler = ExpressionSampler(10**200, 10**201, 2, 2, "*+")
    rng = random.Random(2)
    expressions = [sampler.draw(rng)[0] for _ in range(50)]
    assert all("+" in expression and "*" not in expression for expression in expressions)


def test_sampler_gives_up_clearly_when_every_value_overflows() -> None:
    sampler = ExpressionSampler(10**200, 10**201, 2, 2, "*", max_draws=20)
    with pytest.raises(ValueError, match="finite float"):
        sampler.draw(random.Random(0))


@pytest.mark.parametrize(
    "arguments",
    [(10, 1, 2, 3, "+"), (1, 10, 0, 3, "+"), (1, 10, 4, 3, "+"), (1, 10, 2, 3, "%"), (1, 10, 2, 3, "")],
)
def test_sampler_rejects_bad_settings(arguments: tuple) -> None:
    with pytest.raises(ValueError):
        ExpressionSampler(*arguments)
