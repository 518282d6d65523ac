"""The special forms of the DSL: they decide which of their parts are evaluated, and how.

Each takes the evaluator, the form, the environment and the depth. Tail positions (the
branches of `if`/`cond`, the last expression of a body) are evaluated with `ev.eval`, which
lets a `recur` value through to the enclosing `loop`; everything else with `ev.value`.
"""

from __future__ import annotations

from typing import Any, Protocol

from actors.tasks.sexp.environment import Lambda, Recur, SexpEnvironment
from actors.tasks.sexp.errors import SexpError
from actors.tasks.sexp.parser import Form, Symbol, position
from actors.tasks.sexp.primitives import kind, make_list, show, truthy


class SexpEvaluator(Protocol):
    """What a special form needs of the evaluator (`evaluator.SexpEvaluator` is the one)."""

    world: Any

    def value(self, expr: Any, env: SexpEnvironment, depth: int) -> Any: ...

    def eval(self, expr: Any, env: SexpEnvironment, depth: int) -> Any: ...

    def apply(self, fn: Any, args: list[Any], at: Any, depth: int) -> Any: ...

    def body(self, body: list[Any], env: SexpEnvironment, depth: int, tail: bool) -> Any: ...

    def invoke(self, name: str, at: Any, arg_forms: list[Any], env: SexpEnvironment, depth: int) -> Any: ...

    def checked(self, value: Any, at: Any, what: str) -> Any: ...


def _expect(form: Form, low: int, high: int | None, shape: str) -> None:
    n = len(form) - 1
    if n < low or (high is not None and n > high):
        raise SexpError("arity", f"{form[0].name} expects {shape}, given {n} part(s)", form)


def _name(x: Any, form: Form, what: str) -> str:
    if not isinstance(x, Symbol):
        raise SexpError("syntax", f"{form[0].name}: {what} must be a symbol, not {show(x)}", form)
    return x.name


def _params(x: Any, form: Form) -> list[str]:
    if not isinstance(x, list):
        raise SexpError("syntax", f"{form[0].name}: the parameter list must be a list, not {show(x)}", form)
    names = [_name(p, form, "a parameter") for p in x]
    if len(set(names)) != len(names):
        raise SexpError("syntax", f"{form[0].name}: a parameter name repeats", form)
    return names


def _bindings(x: Any, form: Form) -> list[tuple[str, Any]]:
    if not isinstance(x, list) or not all(isinstance(b, list) and len(b) == 2 for b in x):
        raise SexpError("syntax", f"{form[0].name}: bindings are a list of (name value) pairs", form)
    return [(_name(b[0], form, "a binding name"), b[1]) for b in x]


def _quote(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 1, 1, "one expression: (quote x)")
    return form[1]


def _if(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 2, 3, "(if test then [else])")
    if truthy(ev.value(form[1], env, depth)):
        return ev.eval(form[2], env, depth)
    return ev.eval(form[3], env, depth) if len(form) == 4 else None


def _cond(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    for clause in form[1:]:
        if not isinstance(clause, list) or not clause:
            raise SexpError("syntax", "cond: each clause is (test expr ...)", form)
        test = clause[0]
        if (isinstance(test, Symbol) and test.name == "else") or truthy(ev.value(test, env, depth)):
            return ev.body(clause[1:], env, depth, tail=True) if len(clause) > 1 else True
    return None


def _let(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 2, None, "(let ((name value) ...) body ...)")
    scope = env.extend()
    for name, expr in _bindings(form[1], form):
        scope.define(name, ev.value(expr, scope, depth))  # sequential: later see earlier
    return ev.body(form[2:], scope, depth, tail=True)


def _bind(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 2, 2, "(bind name value)")
    value = ev.value(form[2], env, depth)
    env.define(_name(form[1], form, "the name"), value)
    return value


def _do(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    return ev.body(form[1:], env, depth, tail=True)


def _and(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    value: Any = True
    for expr in form[1:]:
        value = ev.value(expr, env, depth)
        if not truthy(value):
            return value
    return value


def _or(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    value: Any = None
    for expr in form[1:]:
        value = ev.value(expr, env, depth)
        if truthy(value):
            return value
    return value


def _lambda(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Lambda:
    _expect(form, 2, None, "(lambda (params ...) body ...)")
    return Lambda(_params(form[1], form), list(form[2:]), env)


def _defn(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Lambda:
    _expect(form, 3, None, "(defn name (params ...) body ...)")
    name = _name(form[1], form, "the function name")
    fn = Lambda(_params(form[2], form), list(form[3:]), env, name)
    env.define(name, fn)  # defined in its own closure's frame: recursion works
    return fn


def _loop(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 2, None, "(loop ((name init) ...) body ...)")
    bindings = _bindings(form[1], form)
    scope = env.extend()
    for name, expr in bindings:
        scope.define(name, ev.value(expr, scope, depth))
    while True:
        result = ev.body(form[2:], scope, depth, tail=True)
        if not isinstance(result, Recur):
            return result
        if len(result.values) != len(bindings):
            raise SexpError(
                "arity", f"recur gives {len(result.values)} value(s) to a loop of {len(bindings)} binding(s)", result
            )
        scope = env.extend({name: v for (name, _), v in zip(bindings, result.values, strict=True)})


def _recur(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Recur:
    values = tuple(ev.value(a, env, depth) for a in form[1:])
    return Recur(values, *position(form))


def _map(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> list[Any]:
    _expect(form, 2, 2, "(map function list)")
    fn = ev.value(form[1], env, depth)
    items = ev.value(form[2], env, depth)
    if items is None:
        return []
    if not isinstance(items, list):
        raise SexpError("type_error", f"map: the second argument must be a list, not {kind(items)} {show(items)}", form)
    return ev.checked(make_list([ev.apply(fn, [item], form, depth) for item in items]), form, "map")


def _call(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> Any:
    _expect(form, 1, None, "(call task-name :param value ...)")
    target = form[1]
    name = target.name if isinstance(target, Symbol) else ev.value(target, env, depth)
    if not isinstance(name, str):
        raise SexpError("syntax", f"call: the task name must be a symbol or string, not {show(name)}", form)
    if not (ev.world.has_task(name) or ev.world.has_tool(name)):
        raise SexpError("unknown_task", f"call: no atomic task or direct tool named '{name}'", form)
    return ev.invoke(name, form, form[2:], env, depth)


def _defined(ev: SexpEvaluator, form: Form, env: SexpEnvironment, depth: int) -> bool:
    _expect(form, 1, 1, "(defined? name)")
    return env.defines(_name(form[1], form, "the name"))


SPECIAL_FORMS = {
    "quote": _quote,
    "defined?": _defined,
    "if": _if,
    "cond": _cond,
    "let": _let,
    "bind": _bind,
    "do": _do,
    "and": _and,
    "or": _or,
    "lambda": _lambda,
    "defn": _defn,
    "loop": _loop,
    "recur": _recur,
    "map": _map,
    "call": _call,
}
