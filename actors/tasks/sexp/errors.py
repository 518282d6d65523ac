"""The one exception of the evaluator: a mistake in a workflow, with where it is."""

from __future__ import annotations

from typing import Any

from actors.tasks.sexp.parser import position
from events.errors import ErrorInfo


class SexpError(Exception):
    """A mistake in a workflow (unknown symbol, wrong argument count, ...), with where it is."""

    def __init__(self, reason: str, message: str, at: Any = None, details: dict[str, Any] | None = None) -> None:
        self.reason = reason
        self.line, self.column = position(at) if at is not None else (0, 0)
        self.details = {**(details or {}), **({"line": self.line, "column": self.column} if self.line else {})}
        where = f"line {self.line}, column {self.column}: " if self.line else ""
        self.message = where + message
        super().__init__(self.message)

    @property
    def error(self) -> ErrorInfo:
        return ErrorInfo(type="sexp_error", reason=self.reason, message=self.message, details=self.details or None)
