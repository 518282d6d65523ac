"""The S-expression reader and printer for task workflows (seed 001's DSL).

A program is one or more expressions. Atoms: integers, floats, strings in double quotes
(escapes \\n \\t \\r \\" \\\\), keywords (`:path`), symbols (`system:run_script`, `ok?`).
`'x` reads as `(quote x)`; `;` starts a comment to the end of the line.

Lists come back as `Form` (a `list` that also knows its line and column) and symbols as
`Symbol`, so error messages can say where; positions never take part in equality, so
`parse(to_source(tree)) == tree` holds for every tree the parser can produce. The reader
refuses what it could not print back or that would exhaust Python's stack: nesting deeper
than MAX_NESTING, integers longer than MAX_INT_DIGITS, floats too large to be finite.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

DELIMITERS = frozenset('()";\'')
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
UNESCAPES = {v: "\\" + k for k, v in ESCAPES.items()}
_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?\Z")
MAX_NESTING = 200  # nested lists and quotes: far more than a workflow needs, well inside Python's stack
MAX_INT_DIGITS = 4000  # below Python's int <-> str limit (4300 digits), so every integer prints back


class ParseError(ValueError):
    """Bad input: says where (1-based line and column) and what was expected."""

    def __init__(self, line: int, column: int, message: str) -> None:
        self.line, self.column, self.reason = line, column, message
        super().__init__(f"line {line}, column {column}: {message}")


@dataclass(frozen=True)
class Symbol:
    name: str
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)

    def __repr__(self) -> str:
        return f"Symbol({self.name!r})"


@dataclass(frozen=True)
class Keyword:
    name: str

    def __repr__(self) -> str:
        return f"Keyword({self.name!r})"


class Form(list):
    """A parenthesised list that remembers where it started (not part of equality)."""

    line: int = 0
    column: int = 0

    @classmethod
    def at(cls, items: list[Any], line: int, column: int) -> Form:
        form = cls(items)
        form.line, form.column = line, column
        return form


def is_number_token(text: str) -> bool:
    return bool(_INT.match(text) or _FLOAT.match(text))


def is_symbol_text(text: str) -> bool:
    """Would `text` read back as this one symbol?"""
    return (
        bool(text)
        and not text.startswith(":")
        and not is_number_token(text)
        and not any(c in DELIMITERS or c.isspace() for c in text)
    )


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.col = 1
        self.depth = 0  # lists and quotes open around the expression being read

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def advance(self) -> str:
        c = self.text[self.i]
        self.i += 1
        if c == "\n":
            self.line, self.col = self.line + 1, 1
        else:
            self.col += 1
        return c

    def skip_blank(self) -> None:
        while self.i < len(self.text):
            c = self.peek()
            if c.isspace():
                self.advance()
            elif c == ";":
                while self.i < len(self.text) and self.peek() != "\n":
                    self.advance()
            else:
                return

    def error(self, message: str, line: int | None = None, col: int | None = None) -> ParseError:
        return ParseError(line or self.line, col or self.col, message)

    def read(self) -> Any:
        self.skip_blank()
        if self.i >= len(self.text):
            raise self.error("expected an expression, found the end of the input")
        line, col = self.line, self.col
        c = self.peek()
        if c in "('":
            if self.depth >= MAX_NESTING:
                raise self.error(f"expressions nested deeper than {MAX_NESTING} levels", line, col)
            self.depth += 1
            try:
                return self.read_list(line, col) if c == "(" else self.read_quoted(line, col)
            finally:
                self.depth -= 1
        if c == ")":
            raise self.error("unexpected ')' with no '(' to close")
        if c == '"':
            return self.read_string(line, col)
        return self.read_atom(line, col)

    def read_quoted(self, line: int, col: int) -> Form:
        self.advance()
        self.skip_blank()
        if self.i >= len(self.text) or self.peek() == ")":
            raise self.error("expected an expression after the quote mark \"'\"")
        return Form.at([Symbol("quote", line, col), self.read()], line, col)

    def read_list(self, line: int, col: int) -> Form:
        self.advance()
        items: list[Any] = []
        while True:
            self.skip_blank()
            if self.i >= len(self.text):
                raise self.error(
                    f"the '(' at line {line}, column {col} is never closed: expected ')' "
                    "before the end of the input",
                    line,
                    col,
                )
            if self.peek() == ")":
                self.advance()
                return Form.at(items, line, col)
            items.append(self.read())

    def read_string(self, line: int, col: int) -> str:
        self.advance()
        out: list[str] = []
        while True:
            if self.i >= len(self.text):
                raise self.error(
                    f"the string starting at line {line}, column {col} is never closed: "
                    "expected '\"' before the end of the input",
                    line,
                    col,
                )
            c = self.advance()
            if c == '"':
                return "".join(out)
            if c == "\\":
                if self.i >= len(self.text):
                    continue  # reported as an unclosed string on the next turn
                esc_line, esc_col = self.line, self.col - 1
                e = self.advance()
                if e not in ESCAPES:
                    raise self.error(
                        f"unknown escape '\\{e}' in a string: expected one of \\n \\t \\r \\\" \\\\",
                        esc_line,
                        esc_col,
                    )
                out.append(ESCAPES[e])
            else:
                out.append(c)

    def read_atom(self, line: int, col: int) -> Any:
        start = self.i
        while self.i < len(self.text):
            c = self.peek()
            if c.isspace() or c in DELIMITERS:
                break
            self.advance()
        token = self.text[start : self.i]
        if _INT.match(token):
            if len(token.lstrip("+-")) > MAX_INT_DIGITS:
                raise self.error(f"an integer of more than {MAX_INT_DIGITS} digits", line, col)
            return int(token)
        if _FLOAT.match(token):
            number = float(token)
            if math.isinf(number):
                raise self.error(f"the number {_clip(token)} is too large (the largest is about 1.8e308)", line, col)
            return number
        if token.startswith(":"):
            if len(token) == 1:
                raise self.error("expected a keyword name after ':'", line, col)
            return Keyword(token[1:])
        return Symbol(token, line, col)


def _clip(token: str, n: int = 24) -> str:
    return token if len(token) <= n else token[: n - 1] + "…"


def parse_program(text: str) -> list[Any]:
    """All top-level expressions of `text` (at least one), or a ParseError."""
    reader = _Reader(text)
    forms = [reader.read()]
    while True:
        reader.skip_blank()
        if reader.i >= len(text):
            return forms
        forms.append(reader.read())


def parse(text: str) -> Any:
    """Exactly one expression."""
    forms = parse_program(text)
    if len(forms) > 1:
        second = forms[1]
        line, col = getattr(second, "line", 0), getattr(second, "column", 0)
        where = f" (the second starts at line {line}, column {col})" if line else ""
        raise ParseError(line or 1, col or 1, f"expected one expression, found {len(forms)}{where}")
    return forms[0]


def to_source(value: Any) -> str:
    """The text that reads back as `value` (for every tree `parse` produces); runtime values
    (nil, booleans, dicts) print in the DSL's own spelling."""
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Symbol):
        return value.name
    if isinstance(value, Keyword):
        return ":" + value.name
    if isinstance(value, str):
        return '"' + "".join(UNESCAPES.get(c, c) for c in value) + '"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "(" + " ".join(to_source(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{to_source(k)} {to_source(v)}" for k, v in value.items()) + "}"
    return str(value)


def position(value: Any) -> tuple[int, int]:
    return getattr(value, "line", 0), getattr(value, "column", 0)
