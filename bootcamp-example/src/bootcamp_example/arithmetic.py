"""Exact arithmetic: a safe parser/evaluator over Fractions, number formatting, and random flat expressions."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from decimal import Context, Decimal
from fractions import Fraction

from bootcamp_core import answers

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "ExpressionError",
    "ExpressionSampler",
    "apply",
    "evaluate",
    "format_number",
    "parse_number",
]

#: Longest expression the parser accepts; bounds the work one tool call can cause.
MAX_EXPRESSION_LENGTH = 2000
#: Deepest parenthesis nesting accepted, well below Python's recursion limit.
MAX_NESTING = 100
#: Largest decimal exponent in a number literal (``1e400`` is fine, ``1e999999999`` would allocate a huge int).
MAX_EXPONENT = 400
#: Largest numerator or denominator (in bits) of any intermediate value; keeps integers printable and gcds cheap.
MAX_BITS = 10_000

OPERATIONS = "+-*/"

# Model output often carries typographic operators; accept them rather than fail on a spelling.
_ALIASES = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-"})
_SYMBOLS = frozenset("-+*/()")
_END = "end of expression"


class ExpressionError(ValueError):
    """The expression cannot be evaluated; the message is meant for the model as is."""


def parse_number(text: str) -> Fraction:
    """The exact value of a decimal literal such as ``-1.25e-3``."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(f"number is {len(text)} characters long; the limit is {MAX_EXPRESSION_LENGTH}")
    if not answers.is_number(text.strip()):
        raise ExpressionError(f"{text!r} is not a number")
    return _literal(text.strip())


def _literal(text: str) -> Fraction:
    if text.isdigit() and text.isascii():  # a whole number, most literals: no parsing of a decimal form
        return Fraction(int(text))
    exponent = text.lower().partition("e")[2]
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise ExpressionError(f"exponent of {text} is out of range (at most {MAX_EXPONENT} in magnitude)")
    return Fraction(text)


def apply(operation: str, left: Fraction, right: Fraction, where: str = "") -> Fraction:
    """``left <operation> right`` for one of ``+ - * /``, exactly, with size and zero-divisor checks."""
    if operation == "+":
        value = left + right
    elif operation == "-":
        value = left - right
    elif operation == "*":
        value = left * right
    elif operation == "/":
        if right == 0:
            raise ExpressionError(f"division by zero ({where})" if where else "division by zero")
        value = left / right
    else:
        raise ExpressionError(f"unknown operation {operation!r}")
    if value.numerator.bit_length() > MAX_BITS or value.denominator.bit_length() > MAX_BITS:
        raise ExpressionError(f"a result exceeds {MAX_BITS} bits of precision")
    return value


class _Parser:
    """Recursive descent over expr := term (('+'|'-') term)*, term := unary (('*'|'/') unary)*."""

    __slots__ = ("depth", "position", "tokens")

    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.position]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def expression(self) -> Fraction:
        value = self.term()
        while self.peek()[1] in ("+", "-"):
            operator = self.take()[1]
            value = apply(operator, value, self.term())
        return value

    def term(self) -> Fraction:
        value = self.unary()
        while self.peek()[1] in ("*", "/"):
            _, operator, column = self.take()
            value = apply(operator, value, self.unary(), f"the '/' at position {column}")
        return value

    def unary(self) -> Fraction:
        # Iterative so that a long run of signs cannot exhaust the stack.
        negative = False
        while self.peek()[1] in ("+", "-"):
            negative ^= self.take()[1] == "-"
        value = self.primary()
        return -value if negative else value

    def primary(self) -> Fraction:
        kind, text, column = self.take()
        if kind == "number":
            return _literal(text)
        if text == "(":
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise ExpressionError(f"parentheses nested deeper than {MAX_NESTING} levels")
            value = self.expression()
            closing = self.take()
            if closing[1] != ")":
                raise ExpressionError(
                    f"expected ')' to close the '(' at position {column}, found {_describe(closing)}"
                )
            self.depth -= 1
            return value
        raise ExpressionError(f"expected a number or '(', found {_describe((kind, text, column))}")


def _describe(token: tuple[str, str, int]) -> str:
    kind, text, column = token
    return _END if kind == "end" else f"{text!r} at position {column}"


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, 1-based column) of each number and symbol, then an ``end`` token; one forward pass
    (:func:`bootcamp_core.answers.number_end` reads the numbers: model-written text never meets a pattern)."""
    tokens: list[tuple[str, str, int]] = []
    length = len(text)
    position = answers.skip_space(text, 0)
    while position < length:
        end = answers.number_end(text, position, signed=False)
        if end > position:
            tokens.append(("number", text[position:end], position + 1))
        elif text[position] in _SYMBOLS:
            end = position + 1
            tokens.append(("symbol", text[position], position + 1))
        else:
            raise ExpressionError(
                f"unexpected character {text[position]!r} at position {position + 1}; "
                "use numbers, + - * / and parentheses"
            )
        position = answers.skip_space(text, end)
    tokens.append(("end", "", length + 1))
    return tokens


def evaluate(expression: str) -> Fraction:
    """The exact value of an arithmetic expression: numbers, + - * /, parentheses and unary signs. Never uses eval."""
    if not isinstance(expression, str):
        raise ExpressionError(f"expected the expression as a string, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(f"expression is {len(expression)} characters long; the limit is {MAX_EXPRESSION_LENGTH}")
    parser = _Parser(_tokenize(expression.translate(_ALIASES)))
    if parser.peek()[0] == "end":
        raise ExpressionError("the expression is empty")
    value = parser.expression()
    if parser.peek()[0] != "end":
        raise ExpressionError(f"unexpected {_describe(parser.peek())}; expected an operator or {_END}")
    return value


_SIGNIFICANT = Context(prec=17)


def format_number(value: Fraction) -> str:
    """An exact integer when integral, else 17 significant digits (round-trips through float)."""
    if value.denominator == 1:
        return str(value.numerator)
    try:
        as_float = value.numerator / value.denominator
    except OverflowError:
        as_float = math.inf
    if math.isfinite(as_float) and as_float != 0.0:
        return format(as_float, ".17g")
    # Beyond float range (either way): decimal arithmetic still gives 17 correct digits.
    return str(_SIGNIFICANT.divide(Decimal(value.numerator), Decimal(value.denominator)))


class ExpressionSampler:
    """Draws flat expressions like ``123 + 456 * 789 / 12`` and their exact value rounded to float."""

    __slots__ = ("max_draws", "min_operands", "min_value", "operand_span", "operations", "value_span")

    def __init__(
        self,
        min_value: int,
        max_value: int,
        min_operands: int,
        max_operands: int,
        operations: Iterable[str] = OPERATIONS,
        max_draws: int = 1000,
    ) -> None:
        self.min_value = int(min_value)
        self.value_span = int(max_value) - self.min_value + 1
        self.min_operands = int(min_operands)
        self.operand_span = int(max_operands) - self.min_operands + 1
        self.operations = tuple(operations)
        self.max_draws = max_draws
        if self.value_span < 1:
            raise ValueError(f"max_value ({max_value}) is below min_value ({min_value})")
        if self.min_operands < 1 or self.operand_span < 1:
            raise ValueError(f"need 1 <= min_operands <= max_operands, got {min_operands} and {max_operands}")
        unknown = sorted(set(self.operations) - set(OPERATIONS))
        if not self.operations or unknown:
            raise ValueError(f"operations must be characters of {OPERATIONS!r}, got {''.join(self.operations)!r}")

    def draw(self, rng: random.Random) -> tuple[str, float]:
        """One expression and its value; draws again (same rng) when the value is not a finite float."""
        for _ in range(self.max_draws):
            drawn = self._draw_once(rng)
            if drawn is not None:
                return drawn
        raise ValueError(
            f"no expression with a finite float value in {self.max_draws} draws; "
            "lower max_value or max_operands, or allow + and - in operations"
        )

    def _draw_once(self, rng: random.Random) -> tuple[str, float] | None:
        # Hot path: one rng.random() per choice (int(random() * n) is exact and deterministic for n < 2**53) and
        # plain int arithmetic; the running sum is a numerator/denominator pair, so no Fraction is built at all.
        draw = rng.random
        low, span, operations = self.min_value, self.value_span, self.operations
        count = len(operations)
        value = low + int(draw() * span)
        parts = [str(value) if value >= 0 else f"({value})"]
        total_numerator, total_denominator = 0, 1
        term_numerator, term_denominator = value, 1
        for _ in range(self.min_operands + int(draw() * self.operand_span) - 1):
            operation = operations[int(draw() * count)] if count > 1 else operations[0]
            value = low + int(draw() * span)
            parts.append(operation)
            parts.append(str(value) if value >= 0 else f"({value})")
            if operation == "*":
                term_numerator *= value
            elif operation == "/":
                term_denominator *= value
            else:
                if term_denominator == 1:
                    total_numerator += term_numerator * total_denominator
                else:
                    total_numerator = total_numerator * term_denominator + term_numerator * total_denominator
                    total_denominator *= term_denominator
                term_numerator, term_denominator = (value if operation == "+" else -value), 1
        if term_denominator == 1:
            total_numerator += term_numerator * total_denominator
        else:
            total_numerator = total_numerator * term_denominator + term_numerator * total_denominator
            total_denominator *= term_denominator
        if total_denominator == 0:  # a zero divisor (only possible when min_value <= 0)
            return None
        try:
            result = total_numerator / total_denominator  # int / int is correctly rounded, like float(Fraction)
        except OverflowError:
            return None
        # 0 / negative is -0.0; the exact value has no sign.
        return " ".join(parts), result if result else 0.0
