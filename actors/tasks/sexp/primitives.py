"""The pure primitives of the DSL: lists, lookup, comparison, arithmetic, strings, results.

None of these touches the world; the ones that do (`call`, `get_context`,
`system:run_script`, `system:read_files`) live in the evaluator and go through its World.
A primitive given values of the wrong kind raises `PrimitiveError`, which the evaluator
reports with the position of the call.

Lists and maps made here are `SexpList` / `SexpMap`: they carry their size as a tree (shared
parts counted each time they appear, as printing would) and their nesting, computed from
their parts when made, so the evaluator can bound every value it holds in constant time —
`(list l l)` repeated forty times is refused long before it could be printed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from actors.tasks.result import TaskResult, complete, failed
from actors.tasks.sexp.environment import Primitive
from actors.tasks.sexp.parser import Keyword, Symbol, to_source


class PrimitiveError(ValueError):
    """A primitive was given values it cannot work with."""

    reason = "type_error"


class LimitError(PrimitiveError):
    """A primitive would make a value larger than the workflow's limits allow."""

    reason = "number_limit"


class SexpList(list):  # type: ignore[type-arg]
    """A list made during evaluation, with its size and nesting (see `measure`)."""

    size: int = 1
    nesting: int = 1


class SexpMap(dict):  # type: ignore[type-arg]
    """A map made during evaluation, with its size and nesting (see `measure`)."""

    size: int = 1
    nesting: int = 1


def measure(value: Any) -> tuple[int, int]:
    """(size, nesting) of a value as a tree: a string counts its characters, an integer its
    64-bit words, a list or map one plus its parts; nesting counts lists within lists."""
    if isinstance(value, (SexpList, SexpMap)):
        return value.size, value.nesting
    if isinstance(value, str):
        return max(1, len(value)), 0
    if isinstance(value, int) and not isinstance(value, bool):
        return 1 + value.bit_length() // 64, 0
    if isinstance(value, TaskResult):
        size, nesting = measure(value.content)
        return size + 1, nesting + 1
    if isinstance(value, (list, tuple)):
        return _combine(value)
    if isinstance(value, dict):
        return _combine([*value.keys(), *value.values()])
    return 1, 0


def _combine(parts: Any, size: int = 1, nesting: int = 0) -> tuple[int, int]:
    """(size, nesting) of a list of `parts`, starting from `size` and `nesting` (of the
    parts already counted, e.g. the list being appended to)."""
    deepest = max(nesting - 1, 0)  # scalars have nesting 0
    for part in parts:
        kind_ = type(part)
        if kind_ is str:
            size += len(part) or 1
        elif kind_ is int:
            size += 1 + part.bit_length() // 64
        elif kind_ is float or kind_ is bool or part is None:
            size += 1
        else:
            s, n = measure(part)
            size, deepest = size + s, max(deepest, n)
    return size, deepest + 1


def make_list(items: Any) -> SexpList:
    out = SexpList(items)
    out.size, out.nesting = _combine(out)
    return out


def _append(xs: Any, *items: Any) -> SexpList:
    """`xs` with `items` added, measured from what `xs` already knows of itself."""
    out = SexpList(_seq("append", xs) + list(items))
    base = xs if isinstance(xs, SexpList) else make_list(out[: len(out) - len(items)])
    out.size, out.nesting = _combine(items, base.size, base.nesting)
    return out


def _rest(xs: Any) -> SexpList:
    if not isinstance(xs, SexpList) or not xs:
        return make_list(_seq("rest", xs)[1:])
    out = SexpList(xs[1:])
    out.size, out.nesting = xs.size - measure(xs[0])[0], xs.nesting  # nesting: at most that of xs
    return out


def make_map(items: dict[str, Any]) -> SexpMap:
    out = SexpMap(items)
    out.size, out.nesting = _combine([*out.keys(), *out.values()])
    return out


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
            if key is not None and not isinstance(key, (str, int, float)):
                raise PrimitiveError(f"a map is looked up by a keyword or string, not {kind(raw)} {show(raw)}")
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


def _arith(name: str, op: Callable[[Any, Any], Any], unit: int | None, max_bits: int) -> Callable[..., Any]:
    def step(acc: Any, a: Any) -> Any:
        both_ints = isinstance(acc, int) and isinstance(a, int)
        if name == "*" and both_ints and acc.bit_length() + a.bit_length() > max_bits + 1:  # refused before computed
            raise LimitError(f"the product would have more than {max_bits} bits")
        try:
            result = op(acc, a)
        except OverflowError:
            raise LimitError("the result is too large for a floating-point number") from None
        if isinstance(result, float) and not math.isfinite(result):
            raise LimitError("the result is too large for a floating-point number")
        if isinstance(result, int) and result.bit_length() > max_bits:
            raise LimitError(f"the result has more than {max_bits} bits")
        return result

    def fn(*args: Any) -> Any:
        _numbers(name, args)
        if len(args) == 1 and unit is None:  # (- x) negates; (/ x) is 1/x
            return step(0, args[0]) if name == "-" else step(1, args[0])
        acc = args[0] if args else unit
        for a in args[1:]:
            acc = step(acc, a)
        return acc

    return fn


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise PrimitiveError("division by zero")
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b  # exact, however large
    return a / b  # OverflowError (too large for a float) becomes a LimitError in `step`


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
    except OverflowError:
        raise LimitError(f"{show(x)} is too large to be an integer") from None


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


def _dict(*args: Any) -> SexpMap:
    if len(args) % 2:
        raise PrimitiveError("dict takes :key value pairs")
    out: dict[str, Any] = {}
    for k, v in zip(args[::2], args[1::2], strict=True):
        if not isinstance(k, (Keyword, str)):
            raise PrimitiveError(f"dict keys are keywords or strings, not {kind(k)} {show(k)}")
        out[key_name(k)] = v
    return make_map(out)


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
        key = key_name(x)
        return isinstance(key, (str, int, float)) and key in xs  # map keys are strings
    return x in _seq("contains?", xs)


def pure_primitives(max_int_bits: int = 8192) -> dict[str, Primitive]:
    """The pure primitives; arithmetic refuses integers of more than `max_int_bits` bits."""
    bits = max_int_bits
    table = [
        Primitive("list", lambda *a: make_list(a), 0, None, doc="(list a b ...) a new list"),
        Primitive("get", get_in, 2, None, doc="(get x :key ...) a field, item or nested value; nil if absent"),
        Primitive("dict", _dict, 0, None, doc="(dict :k v ...) a map"),
        Primitive("length", _length, 1, 1),
        Primitive("first", lambda xs: (_seq("first", xs) or [None])[0], 1, 1),
        Primitive("rest", _rest, 1, 1),
        Primitive("nth", _nth, 2, 2),
        Primitive("append", _append, 1, None),
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
        Primitive("+", _arith("+", operator.add, 0, bits), 0, None),
        Primitive("*", _arith("*", operator.mul, 1, bits), 0, None),
        Primitive("-", _arith("-", operator.sub, None, bits), 1, None),
        Primitive("/", _arith("/", _divide, None, bits), 1, None),
        Primitive("int", _int, 1, 1, doc='(int "3") an integer'),
        Primitive("ok?", _is_ok, 1, 1, doc="(ok? r) true when r is a COMPLETE task result"),
        Primitive("failed?", _is_failed, 1, 1),
        Primitive("result", lambda content=None: complete(content), 0, 1, doc="(result x) a COMPLETE result"),
        Primitive("fail", _fail, 1, 2, doc='(fail "reason" "message") a FAILED result'),
    ]
    return {p.name: p for p in table}
