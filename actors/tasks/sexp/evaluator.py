"""The SexpEvaluator (seed 001): evaluates workflow S-expressions in lexical environments.

Special forms: quote, if, cond, let (sequential bindings), bind, do, and, or, lambda, defn,
loop/recur, map, call, defined?. Primitives: see `primitives.py`, plus the ones that reach the world
through a `World` (atomic tasks, direct tools, the memory system). A symbol in head position
that is neither bound nor a special form is looked up as an atomic task, then as a direct
tool, so `(summarize-file :path "x")` is `(call summarize-file :path "x")`.

Evaluation is deterministic given what the World returns; the World records every
non-deterministic input before handing it over, which is what makes a workflow replayable.
Every compound form evaluated is a step (reported to the World). Steps, nesting depth, wall
time, and the size of every value made (integers in bits, strings and lists in characters and
items, nesting of lists) are bounded (`EvalLimits`), so a runaway workflow ends as a FAILED
result, not a hung process, a MemoryError or a crash.

Wall time is a non-deterministic input, so it is read only through `elapsed`, every
TIME_CHECK_EVERY steps: a recorded workflow passes one that reads the recorded clock (see
`actors.tasks.workflow`), so a replay stops at the same step however fast it runs.
Errors a workflow author can make raise `SexpError` inside; `run` turns them (and parse
errors) into FAILED TaskResults that say where and why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from actors.tasks.result import SubtaskRequest, TaskResult, failed, from_error
from actors.tasks.sexp.environment import (
    Lambda,
    Primitive,
    Recur,
    SexpEnvironment,
    Unbound,
)
from actors.tasks.sexp.errors import SexpError
from actors.tasks.sexp.forms import SPECIAL_FORMS
from actors.tasks.sexp.parser import (
    Form,
    Keyword,
    ParseError,
    Symbol,
    parse_program,
    position,
    to_source,
)
from actors.tasks.sexp.primitives import (
    PrimitiveError,
    display,
    kind,
    measure,
    pure_primitives,
    show,
    truthy,
)

CONSTANTS = {"true": True, "false": False, "nil": None}
CONTEXT_KEYWORDS = ("inherited-context", "disable-context")
TIME_CHECK_EVERY = 50  # steps between two readings of the (recorded) clock
INT_BITS_PRINTABLE = 14_000  # Python prints integers of up to 4300 digits (about 14,284 bits)


@dataclass(frozen=True)
class EvalLimits:
    max_steps: int = 10_000  # compound forms evaluated in one workflow
    max_depth: int = 120  # nested compound forms (recursion), well inside Python's own limit
    max_continuations: int = 5  # CONTINUATION → subtask hops for one call
    max_seconds: int = 600  # wall time of the evaluation, checked every TIME_CHECK_EVERY steps
    max_int_bits: int = 8192  # the largest integer a workflow may make (about 2,466 digits)
    max_size: int = 1_000_000  # characters of a string; items and characters of a list or map
    max_nesting: int = 100  # lists and maps within one another in one value

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, not {value!r}")
        if self.max_int_bits > INT_BITS_PRINTABLE:
            raise ValueError(f"limit max_int_bits must be at most {INT_BITS_PRINTABLE}, not {self.max_int_bits}")


class World(Protocol):
    """What evaluation needs from outside: steps are reported, tasks and tools are run."""

    def on_step(self, step: int, depth: int, form: str, line: int, column: int) -> None: ...

    def has_task(self, name: str) -> bool: ...

    def call_task(self, request: SubtaskRequest, reason: str) -> TaskResult: ...

    def has_tool(self, name: str) -> bool: ...

    def call_tool(self, name: str, args: dict[str, Any]) -> TaskResult: ...

    def get_context(self, query: str, max_results: int, inherited_context: str | None, disable_context: bool) -> TaskResult: ...


class NullWorld:
    """No tasks, no tools, no memory: pure evaluation (tests, the REPL's syntax checks)."""

    def on_step(self, step: int, depth: int, form: str, line: int, column: int) -> None:
        pass

    def has_task(self, name: str) -> bool:
        return False

    def call_task(self, request: SubtaskRequest, reason: str) -> TaskResult:
        return failed("task_not_found", "unknown_task", f"no atomic task named {request.name!r}")

    def has_tool(self, name: str) -> bool:
        return False

    def call_tool(self, name: str, args: dict[str, Any]) -> TaskResult:
        return failed("tool_not_found", "unknown_tool", f"no direct tool named {name!r}")

    def get_context(self, query: str, max_results: int, inherited_context: str | None, disable_context: bool) -> TaskResult:
        return failed("memory_error", "no_memory", "no memory system in this evaluation")


class SexpEvaluator:
    def __init__(
        self,
        world: World | None = None,
        limits: EvalLimits = EvalLimits(),
        elapsed: Callable[[], float] | None = None,
    ) -> None:
        """`elapsed()`: seconds since the workflow started; by default the process's own clock
        from now (nothing recorded: tests, syntax checks). A recorded workflow passes one that
        reads its recorded clock, so that replay decides the same."""
        self.world = world or NullWorld()
        self.limits = limits
        self.steps = 0
        if elapsed is None:
            began = time.monotonic()

            def elapsed() -> float:
                return time.monotonic() - began

        self.elapsed = elapsed
        primitives = pure_primitives(limits.max_int_bits)
        self.globals = SexpEnvironment({**CONSTANTS, **primitives, **self._world_primitives()})

    # -- entry points ----------------------------------------------------------------------

    def run(self, text: str, params: dict[str, Any] | None = None) -> TaskResult:
        """Evaluate a workflow; always a TaskResult (FAILED for parse and evaluation errors)."""
        try:
            return as_result(self.evaluate_string(text, params))
        except ParseError as e:
            return failed("sexp_error", "parse_error", str(e), {"line": e.line, "column": e.column})
        except SexpError as e:
            return from_error(e.error, steps=self.steps)
        except RecursionError:
            return failed("sexp_error", "depth_limit", "evaluation nested too deeply for the interpreter")
        except MemoryError:
            return failed("sexp_error", "size_limit", "the workflow ran out of memory", steps=self.steps)

    def evaluate_string(self, text: str, params: dict[str, Any] | None = None) -> Any:
        forms = parse_program(text)
        params = dict(params or {})
        for name, given in params.items():
            self.checked(given, None, f"parameter {name}")
        env = self.globals.extend(params)
        value: Any = None
        for form in forms:
            value = self.value(form, env, 0)
        return value

    # -- evaluation ------------------------------------------------------------------------

    def value(self, expr: Any, env: SexpEnvironment, depth: int) -> Any:
        """Evaluate where `recur` may not appear (anything but a tail position)."""
        result = self.eval(expr, env, depth)
        if isinstance(result, Recur):
            raise SexpError("recur_position", "recur is only allowed in the tail position of a loop", result)
        return result

    def eval(self, expr: Any, env: SexpEnvironment, depth: int) -> Any:
        if isinstance(expr, Symbol):
            try:
                return env.lookup(expr.name)
            except Unbound:
                raise self._unknown(expr) from None
        if not isinstance(expr, list):
            return expr  # numbers, strings, keywords evaluate to themselves
        if not expr:
            return []
        depth += 1
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise SexpError("step_limit", f"the workflow took more than {self.limits.max_steps} steps", expr)
        if depth > self.limits.max_depth:
            raise SexpError(
                "depth_limit", f"evaluation nested deeper than {self.limits.max_depth} (runaway recursion?)", expr
            )
        line, column = position(expr)
        self.world.on_step(self.steps, depth, short(expr), line, column)
        if self.steps % TIME_CHECK_EVERY == 0 and self.elapsed() > self.limits.max_seconds:
            raise SexpError(
                "time_limit", f"the workflow ran longer than {self.limits.max_seconds} s", expr, {"step": self.steps}
            )
        head = expr[0]
        if isinstance(head, Symbol):
            special = SPECIAL_FORMS.get(head.name)
            if special is not None:
                return special(self, cast(Form, expr), env, depth)
            if not env.defines(head.name):
                if self.world.has_task(head.name) or self.world.has_tool(head.name):
                    return self.invoke(head.name, expr, expr[1:], env, depth)
        fn = self.value(head, env, depth)
        args = [self.value(a, env, depth) for a in expr[1:]]
        return self.apply(fn, args, expr, depth)

    def apply(self, fn: Any, args: list[Any], at: Any, depth: int) -> Any:
        if isinstance(fn, Primitive):
            return self._call_primitive(fn, args, at)
        if isinstance(fn, Lambda):
            if len(args) != len(fn.params):
                raise SexpError(
                    "arity",
                    f"{fn.name} takes {len(fn.params)} argument(s) ({' '.join(fn.params)}), given {len(args)}",
                    at,
                )
            env = fn.env.extend(dict(zip(fn.params, args, strict=True)))
            result = self.body(fn.body, env, depth, tail=False)
            return result
        raise SexpError("not_callable", f"{kind(fn)} {show(fn)} cannot be called", at)

    def _call_primitive(self, fn: Primitive, args: list[Any], at: Any) -> Any:
        positional, keywords = args, dict[str, Any]()
        if fn.keywords is not None:
            positional, keywords = split_keywords(args, at, fn.name)
            unknown = sorted(set(keywords) - fn.keywords)
            if unknown:
                raise SexpError(
                    "arity", f"{fn.name} has no :{unknown[0]} argument (it takes {_keys(fn.keywords)})", at
                )
        n = len(positional)
        if n < fn.min_args or (fn.max_args is not None and n > fn.max_args):
            raise SexpError("arity", f"{fn.name} takes {fn.arity()} argument(s), given {n}", at)
        try:
            return self.checked(fn.fn(*positional, **keywords), at, fn.name)
        except PrimitiveError as e:
            raise SexpError(e.reason, f"{fn.name}: {e}", at) from None
        except (ArithmeticError, TypeError, ValueError) as e:
            if fn.world:
                raise  # the world's own failures (a replay divergence, ...) are not the workflow's
            raise SexpError("type_error", f"{fn.name}: {type(e).__name__}: {e}", at) from None

    def checked(self, value: Any, at: Any, what: str) -> Any:
        """`value`, if it is within the limits on integers, strings, lists and maps."""
        lim = self.limits
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            if value.bit_length() > lim.max_int_bits:
                raise SexpError("number_limit", f"{what}: an integer of more than {lim.max_int_bits} bits", at)
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise SexpError("number_limit", f"{what}: the number is not finite", at)
            return value
        size, nesting = measure(value)
        if size > lim.max_size:
            raise SexpError(
                "size_limit", f"{what}: a value larger than {lim.max_size} (characters, items) — the size limit", at
            )
        if nesting > lim.max_nesting:
            raise SexpError("size_limit", f"{what}: lists nested deeper than {lim.max_nesting}", at)
        return value

    def body(self, body: list[Any], env: SexpEnvironment, depth: int, tail: bool) -> Any:
        result: Any = None
        for i, expr in enumerate(body):
            last = i == len(body) - 1
            result = self.eval(expr, env, depth) if (last and tail) else self.value(expr, env, depth)
        return result

    def _unknown(self, sym: Symbol) -> SexpError:
        hint = ""
        if self.world.has_task(sym.name) or self.world.has_tool(sym.name):
            hint = f"; to run it, write ({sym.name} ...) or (call {sym.name} ...)"
        return SexpError(
            "unknown_symbol",
            f"unknown symbol '{sym.name}': not a variable, special form, primitive, atomic task or tool{hint}",
            sym,
        )

    # -- tasks and tools --------------------------------------------------------------------

    def invoke(self, name: str, at: Any, arg_forms: list[Any], env: SexpEnvironment, depth: int) -> Any:
        args = [self.value(a, env, depth) for a in arg_forms]
        positional, keywords = split_keywords(args, at, name)
        if positional:
            raise SexpError(
                "arity", f"{name} takes :keyword value arguments only, given {show(positional[0])} without a keyword", at
            )
        if self.world.has_task(name):
            inherited = keywords.pop("inherited-context", None)
            disable = keywords.pop("disable-context", False)
            request = SubtaskRequest(
                name=name,
                params=keywords,
                inherited_context=None if inherited is None else display(inherited),
                disable_context=truthy(disable),
            )
            return self.run_task(request)
        if self.world.has_tool(name):
            return self.world.call_tool(name, keywords)
        raise SexpError("unknown_task", f"no atomic task or direct tool named '{name}'", at)

    def run_task(self, request: SubtaskRequest) -> TaskResult:
        """Run an atomic task; a CONTINUATION with a subtask_request spawns that subtask
        through the task system, hop after hop, up to `max_continuations`."""
        result = self.world.call_task(request, "call")
        chain: list[str] = []
        while result.status == "CONTINUATION":
            sub = result.subtask_request
            if sub is None:
                return failed(
                    "task_error", "bad_continuation", f"{request.name} returned CONTINUATION without a subtask_request"
                )
            if len(chain) >= self.limits.max_continuations:
                return failed(
                    "resource_exhaustion",
                    "continuations",
                    f"more than {self.limits.max_continuations} CONTINUATION hops from {request.name}",
                    {"chain": chain},
                )
            chain.append(sub.name)
            result = self.world.call_task(sub, "continuation")
        if chain:
            result = result.model_copy(update={"notes": {**result.notes, "continued_via": chain}})
        return result

    def _world_primitives(self) -> dict[str, Primitive]:
        def get_context(query: Any = None, **kw: Any) -> Any:
            query = kw.pop("query", query)
            if query is None:
                raise PrimitiveError("needs a query: (get_context :query \"...\")")
            max_results = kw.get("max-results", 3)
            if isinstance(max_results, bool) or not isinstance(max_results, int) or not 0 < max_results <= 100:
                raise PrimitiveError(f":max-results is a whole number from 1 to 100, not {show(max_results)}")
            result = self.world.get_context(
                display(query),
                max_results,
                None if kw.get("inherited-context") is None else display(kw["inherited-context"]),
                truthy(kw.get("disable-context", False)),
            )
            return result.content if result.ok else result

        def run_script(command: Any = None, **kw: Any) -> TaskResult:
            command = kw.pop("command", command)
            if not isinstance(command, str) or not command.strip():
                raise PrimitiveError("needs the command to run as a string")
            return self.world.call_tool("system:run_script", {"command": command, **kw})

        def read_files(*paths: Any) -> TaskResult:
            flat: list[str] = []
            for p in paths:
                for item in p if isinstance(p, (list, tuple)) else [p]:
                    if not isinstance(item, str):
                        raise PrimitiveError(f"paths are strings, not {kind(item)} {show(item)}")
                    flat.append(item)
            if not flat:
                raise PrimitiveError("needs at least one path")
            return self.world.call_tool("system:read_files", {"paths": flat})

        return {
            "get_context": Primitive(
                "get_context", get_context, 0, 1, frozenset({"query", "max-results", *CONTEXT_KEYWORDS}), world=True
            ),
            "system:run_script": Primitive(
                "system:run_script", run_script, 0, 1, frozenset({"command", "timeout"}), world=True
            ),
            "system:read_files": Primitive("system:read_files", read_files, 0, None, world=True),
        }


# -- helpers ------------------------------------------------------------------------------------


def split_keywords(args: list[Any], at: Any, name: str) -> tuple[list[Any], dict[str, Any]]:
    """Positional values, then `:keyword value` pairs."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if isinstance(a, Keyword):
            if i + 1 >= len(args):
                raise SexpError("arity", f"{name}: the keyword :{a.name} has no value after it", at)
            keywords[a.name] = args[i + 1]
            i += 2
        else:
            if keywords:
                raise SexpError("arity", f"{name}: a positional value {show(a)} follows :keyword arguments", at)
            positional.append(a)
            i += 1
    return positional, keywords


def _keys(keys: frozenset[str]) -> str:
    return " ".join(":" + k for k in sorted(keys)) or "no keywords"


def short(expr: Any, limit: int = 160) -> str:
    text = to_source(expr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(value: Any) -> Any:
    """A value as JSON-able data for events and results."""
    if isinstance(value, TaskResult):
        return value.model_dump(mode="json")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return to_source(value) if isinstance(value, (Symbol, Keyword)) else repr(value)


def as_result(value: Any) -> TaskResult:
    """The Dispatcher's "format as TaskResult if needed"."""
    if isinstance(value, TaskResult):
        return value
    return TaskResult(status="COMPLETE", content=plain(value))
