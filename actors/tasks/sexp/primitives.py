"""The pure primitives of the DSL: lists, lookup, comparison, arithmetic, strings, results.

None of these touches the world; the ones that do (`call`, `get_context`,
`system:run_script`, `system:read_files`) live in the evaluator and go through its World.
A primitive given values of the wrong kind raises `PrimitiveError`, which the evaluator
reports with the position of the call.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from actors.tasks.result import TaskResult, complete, failed
from actors.tasks.sexp.environment import Primitive
from actors.tasks.sexp.parser import Keyword, Symbol, to_source


class PrimitiveError(ValueError):
    """A primitive was given values it cannot work with."""


def truthy(value: Any) -> bool:
    """Only `false` and `nil` are false (as in Clojure): 0, "" and () are values like any other."""
    return value is not None and value is not False


def key_name(key: Any) -> Any:
    if isinstance(key, Keyword):
        return key.name
    if isinstance(key, Symbol):
        return key.name
    return key


def get_in(value: Any, *keys: Any) -> Any:
    """`(get x :a :b)`: x["a"]["b"]; TaskResult fields by name; list items by index; nil if absent."""
    for raw in keys:
        key = key_name(raw)
        if value is None:
            return None
        if isinstance(value, TaskResult):
            value = value.model_dump().get(key) if isinstance(key, str) else None
        elif isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, (list, tuple)):
            if isinstance(key, bool) or not isinstance(key, int):
                raise PrimitiveError(f"a list is indexed by an integer, not {show(raw)}")
            value = value[key] if -len(value) <= key < len(value) else None
        else:
            raise PrimitiveError(f"cannot get {show(raw)} from {kind(value)} {show(value)}")
    return value


def kind(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, TaskResult):
        return "a task result"
    if isinstance(value, Keyword):
        return "a keyword"
    return "a function" if callable(value) or hasattr(value, "params") else type(value).__name__


def show(value: Any, limit: int = 80) -> str:
    text = display(value) if isinstance(value, TaskResult) else to_source(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def display(value: Any) -> str:
    """How `str` renders a value: strings as they are, results as their content."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, TaskResult):
        if value.status == "FAILED" and value.error is not None:
            return f"FAILED: {value.error.line()}"
        return display(value.content)
    return to_source(value)


def _numbers(name: str, args: tuple[Any, ...]) -> None:
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise PrimitiveError(f"works on numbers, not {kind(a)} {show(a)}")


def _arith(name: str, op: Callable[[Any, Any], Any], unit: int | None) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        _numbers(name, args)
        if len(args) == 1 and unit is None:  # (- x) negates; (/ x) is 1/x
            return op(0, args[0]) if name == "-" else op(1, args[0])
        acc = args[0] if args else unit
        for a in args[1:]:
            acc = op(acc, a)
        return acc

    return fn


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise PrimitiveError("division by zero")
    q = a / b
    return int(q) if isinstance(a, int) and isinstance(b, int) and a % b == 0 else q


def _compare(name: str, op: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def fn(*args: Any) -> bool:
        if all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            pass
        elif not all(isinstance(a, str) for a in args):
            raise PrimitiveError(f"compares numbers or strings, not {', '.join(kind(a) for a in args)}")
        return all(op(a, b) for a, b in zip(args, args[1:], strict=False))

    return fn


def _equal(*args: Any) -> bool:
    norm = [key_name(a) if isinstance(a, Keyword) else a for a in args]
    return all(a == b for a, b in zip(norm, norm[1:], strict=False))


def _length(x: Any) -> int:
    if isinstance(x, (str, list, tuple, dict)):
        return len(x)
    if x is None:
        return 0
    raise PrimitiveError(f"length of {kind(x)} {show(x)}")


def _int(x: Any) -> int:
    if isinstance(x, bool):
        raise PrimitiveError(f"cannot make a number of {show(x)}")
    try:
        return int(float(x)) if isinstance(x, str) and "." in x else int(x)
    except (TypeError, ValueError):
        raise PrimitiveError(f"cannot make a number of {kind(x)} {show(x)}") from None


def _seq(name: str, x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    raise PrimitiveError(f"needs a list, not {kind(x)} {show(x)}")


def _nth(xs: Any, n: Any) -> Any:
    return get_in(_seq("nth", xs), n)


def _join(xs: Any, sep: Any = "") -> str:
    return str(display(sep)).join(display(x) for x in _seq("join", xs))


def _dict(*args: Any) -> dict[str, Any]:
    if len(args) % 2:
        raise PrimitiveError("dict takes :key value pairs")
    out: dict[str, Any] = {}
    for k, v in zip(args[::2], args[1::2], strict=True):
        if not isinstance(k, (Keyword, str)):
            raise PrimitiveError(f"dict keys are keywords or strings, not {kind(k)} {show(k)}")
        out[key_name(k)] = v
    return out


def _is_ok(x: Any) -> bool:
    return isinstance(x, TaskResult) and x.status == "COMPLETE"


def _is_failed(x: Any) -> bool:
    return isinstance(x, TaskResult) and x.status == "FAILED"


def _fail(reason: Any, message: Any = None) -> TaskResult:
    text = display(message) if message is not None else display(reason)
    return failed("workflow_error", str(display(reason)), text)


def _contains(xs: Any, x: Any) -> bool:
    if isinstance(xs, str):
        return display(x) in xs
    if isinstance(xs, dict):
        return key_name(x) in xs
    return x in _seq("contains?", xs)


def pure_primitives() -> dict[str, Primitive]:
    table = [
        Primitive("list", lambda *a: list(a), 0, None, doc="(list a b ...) a new list"),
        Primitive("get", get_in, 2, None, doc="(get x :key ...) a field, item or nested value; nil if absent"),
        Primitive("dict", _dict, 0, None, doc="(dict :k v ...) a map"),
        Primitive("length", _length, 1, 1),
        Primitive("first", lambda xs: (_seq("first", xs) or [None])[0], 1, 1),
        Primitive("rest", lambda xs: _seq("rest", xs)[1:], 1, 1),
        Primitive("nth", _nth, 2, 2),
        Primitive("append", lambda xs, *items: _seq("append", xs) + list(items), 1, None),
        Primitive("contains?", _contains, 2, 2),
        Primitive("join", _join, 1, 2, doc="(join list [separator]) one string"),
        Primitive("str", lambda *a: "".join(display(x) for x in a), 0, None, doc="(str a b ...) concatenation"),
        Primitive("not", lambda x: not truthy(x), 1, 1),
        Primitive("=", _equal, 1, None),
        Primitive("!=", lambda *a: not _equal(*a), 1, None),
        Primitive("<", _compare("<", operator.lt), 1, None),
        Primitive(">", _compare(">", operator.gt), 1, None),
        Primitive("<=", _compare("<=", operator.le), 1, None),
        Primitive(">=", _compare(">=", operator.ge), 1, None),
        Primitive("+", _arith("+", operator.add, 0), 0, None),
        Primitive("*", _arith("*", operator.mul, 1), 0, None),
        Primitive("-", _arith("-", operator.sub, None), 1, None),
        Primitive("/", _arith("/", _divide, None), 1, None),
        Primitive("int", _int, 1, 1, doc='(int "3") an integer'),
        Primitive("ok?", _is_ok, 1, 1, doc="(ok? r) true when r is a COMPLETE task result"),
        Primitive("failed?", _is_failed, 1, 1),
        Primitive("result", lambda content=None: complete(content), 0, 1, doc="(result x) a COMPLETE result"),
        Primitive("fail", _fail, 1, 2, doc='(fail "reason" "message") a FAILED result'),
    ]
    return {p.name: p for p in table}
