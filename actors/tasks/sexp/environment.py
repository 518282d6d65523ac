"""Lexical environments (seed 001's SexpEnvironment) and the callable values of the DSL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Unbound(LookupError):
    pass


class SexpEnvironment:
    """A frame of bindings with a parent: lookups walk outwards, definitions stay local."""

    def __init__(self, bindings: dict[str, Any] | None = None, parent: SexpEnvironment | None = None) -> None:
        self.bindings: dict[str, Any] = dict(bindings or {})
        self.parent = parent

    def lookup(self, name: str) -> Any:
        env: SexpEnvironment | None = self
        while env is not None:
            if name in env.bindings:
                return env.bindings[name]
            env = env.parent
        raise Unbound(name)

    def defines(self, name: str) -> bool:
        try:
            self.lookup(name)
        except Unbound:
            return False
        return True

    def define(self, name: str, value: Any) -> None:
        self.bindings[name] = value

    def extend(self, bindings: dict[str, Any] | None = None) -> SexpEnvironment:
        return SexpEnvironment(bindings, self)


@dataclass(eq=False)
class Lambda:
    """A closure: parameters, body, and the environment it was created in."""

    params: list[str]
    body: list[Any]
    env: SexpEnvironment
    name: str = "lambda"

    def __repr__(self) -> str:
        return f"<function {self.name} ({' '.join(self.params)})>"


@dataclass(frozen=True)
class Primitive:
    """A built-in function. `keywords` names the :keyword arguments it takes (None: none)."""

    name: str
    fn: Callable[..., Any]
    min_args: int = 0
    max_args: int | None = None  # None: any number
    keywords: frozenset[str] | None = None
    doc: str = field(default="", compare=False)
    world: bool = False  # reaches the world (tasks, tools, memory): its exceptions are not the workflow's

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def arity(self) -> str:
        if self.max_args is None:
            return f"at least {self.min_args}"
        if self.min_args == self.max_args:
            return str(self.min_args)
        return f"{self.min_args} to {self.max_args}"


@dataclass(frozen=True)
class Recur:
    """What `(recur ...)` evaluates to: new values for the enclosing `loop`'s bindings."""

    values: tuple[Any, ...]
    line: int = 0
    column: int = 0
