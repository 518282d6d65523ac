"""Agents as plain Python functions over a context (Temporal's workflow model).

    from actors.sdk import agent

    @agent
    def summarise(ctx, goal: str) -> str:
        return ctx.llm(f"Summarise: {goal}")

Every context call (`ctx.llm`, `ctx.tool`, `ctx.now`, `ctx.random`, `ctx.sleep`,
`ctx.wait_for`, `ctx.agent`) has a call index, 1, 2, 3, ... in the order the function makes
them, and is recorded as events on the agent's stream (`function:RUN`, idempotency key
`call:N`) before its result is returned. After a crash, a restart or in replay the function
runs again from the top and each call is served from the log in order; a call whose kind or
request differs from what the log holds at that index raises `NonDeterminismError` naming
the index and both calls, never a silent live call. A function that must wait for a person
(`ctx.wait_for("approval")` before any signal came) is suspended: `SignalAwaited` is
recorded and the run is let go of, to be served again when a signal arrives.

Durable timers: `ctx.sleep(s)` records its wake-up time; `ctx.wait_for(name, timeout=s)`
records when it times out (`SignalAwaited.until`). One of at most `IN_PLACE_S` seconds is
waited out in place; a longer one suspends the run the same way (`Suspended` with `until`),
and the run is served again at that time by the namespace's timer actor
(`actors.runtime.timers`: detached, it rebuilds its due timers from the runs view after a
restart). Served again, the function re-runs from its log: the sleep is past and returns,
the wait finds its signal or records that it timed out (`SignalConsumed(timed_out=True)`).

`ctx.agent(other, goal)` runs another agent function in-line, under the same run and on the
same stream: a recorded marker (`CallRecorded` "agent"), then the child's own calls in the
same sequence, and its return value is the call's result.

This module is the pure part: no Ray. `run_function` runs a function against an
`ActorShell` (which appends) and a `DurableEffects` (which performs, live or from a log);
the Ray shell is `actors.runtime.function_agent`, the in-process runner `actors.testing`.
"""

from __future__ import annotations

import json
import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.effects import Effects
from actors.runtime.import_path import ImportPathError, import_object, path_of
from actors.runtime.ledger import BudgetExhausted
from actors.runtime.llm.json_text import parse_json_object
from actors.runtime.llm.types import LlmError, LlmRequest, ReplayDivergence, canonical_json
from actors.runtime.perform import ToolDivergence
from actors.runtime.shell import ActorShell
from events.base import Event, State
from events.durable import (
    CallRecorded,
    FunctionCompleted,
    FunctionFailed,
    FunctionForked,
    FunctionStarted,
    SignalAwaited,
    SignalConsumed,
    SignalSent,
)
from events.effects import LlmCompleted, LlmFailed, LlmRequested, ToolCalled, ToolReturned
from events.errors import ErrorInfo
from events.runs import BudgetExceeded

__all__ = [
    "Context", "FunctionBehaviour", "FunctionState", "NonDeterminismError", "Outcome", "Suspended",
    "agent", "function_stream", "load_agent", "run_function", "signal_stream",
]

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)
AGENT_MARK = "__chorus_agent__"
SLEEP = "sleep"  # what a run suspended in ctx.sleep waits for
DEFAULT_PARAMS = {"temperature": 0.0, "max_tokens": 512}  # as the client's DEFAULT_LLM_PARAMS
IN_PLACE_S = 5.0  # a sleep or wait_for timeout at most this long holds the actor; longer ones suspend


def function_stream(run_id: str) -> str:
    return f"function:{run_id}"


def signal_stream(run_id: str) -> str:
    return f"signals:{run_id}"


def agent(fn: F) -> F:
    """Mark a module-level function `fn(ctx, goal) -> result` as an agent. It stays a plain
    function; it runs by its import path (`module:name`), so no registration is needed."""
    setattr(fn, AGENT_MARK, True)
    return fn


def agent_path(fn: Any) -> str:
    """The import path a run records for an agent function (or the path itself)."""
    if isinstance(fn, str):
        return fn
    return path_of(fn)


def load_agent(path: str) -> Callable[..., Any]:
    """The agent function at `path`. ImportPathError (one line naming the path and what to
    install) when it cannot be imported or is not a function."""
    fn = import_object(path)
    if not callable(fn):
        raise ImportPathError(f"{path!r} is not a function: an agent is a function (ctx, goal) -> result")
    return fn


# -- errors -------------------------------------------------------------------------------------


class NonDeterminismError(RuntimeError):
    """The function asked, at call `index`, for something other than what the log recorded
    there: its code changed under a recorded run, or it depends on something unrecorded
    (the wall clock, a random number, a dict of unordered ids...). Use ctx.now()/ctx.random()."""

    def __init__(self, stream_id: str, index: int, recorded: str, now: str) -> None:
        self.stream_id, self.index, self.recorded, self.now = stream_id, index, recorded, now
        super().__init__(
            f"non-determinism at call {index} of {stream_id}: the log recorded {recorded}, "
            f"the function now calls {now}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.stream_id, self.index, self.recorded, self.now))


class Suspended(BaseException):
    """The function waits for a signal that has not come, or on a durable timer due at
    `until` (`name` "sleep" for ctx.sleep): the run is let go of. A BaseException, so a
    function's own `except Exception` does not swallow it."""

    def __init__(self, name: str, index: int, nth: int, until: datetime | None = None) -> None:
        self.name, self.index, self.nth, self.until = name, index, nth, until
        what = f"signal {name!r}" if name != SLEEP else "a timer"
        super().__init__(f"waiting for {what} (call {index})" + (f" until {until.isoformat()}" if until else ""))


class ToolError(RuntimeError):
    """A tool call failed; its recorded output says why."""


# -- the pure core of the stream ----------------------------------------------------------------

Status = Literal["new", "running", "waiting", "completed", "failed"]


class FunctionState(State):
    status: Status = "new"
    agent: str = ""
    goal: str = ""
    model: str = ""
    params: dict[str, Any] = {}
    calls: int = 0  # the highest call index recorded
    waiting_for: str | None = None
    fork_after: int | None = None  # calls after this index use fork_model / fork_params
    fork_model: str | None = None
    fork_params: dict[str, Any] | None = None
    result: str | None = None
    error: ErrorInfo | None = None

    @property
    def answer(self) -> str | None:
        return self.result


class StartFunction(Command):
    agent: str
    goal: str
    model: str = ""
    params: dict[str, Any] = {}


class Recorded(Command):
    """Effect events already performed (or served from a log): append them as they are."""

    events: list[Event]


class Finish(Command):
    result: str


class FailFunction(Command):
    error: ErrorInfo


class FunctionBehaviour(Behaviour[FunctionState]):
    name = "function"
    state_type = FunctionState

    def decide(self, state: FunctionState, command: Command) -> list[Event]:
        if isinstance(command, StartFunction):
            if state.status != "new":
                return []
            return [FunctionStarted(agent=command.agent, goal=command.goal, model=command.model, params=command.params)]
        if state.status in ("completed", "failed"):
            return []  # a finished function records nothing more
        if isinstance(command, Recorded):
            return list(command.events)
        if isinstance(command, Finish):
            return [FunctionCompleted(result=command.result)]
        if isinstance(command, FailFunction):
            return [FunctionFailed(error=command.error)]
        raise TypeError(f"function agent cannot handle {type(command).__name__}")

    def evolve(self, state: FunctionState, event: Event) -> FunctionState:
        d: Any = event
        if isinstance(event, FunctionStarted):
            return state.model_copy(
                update=dict(status="running", agent=d.agent, goal=d.goal, model=d.model, params=d.params)
            )
        if isinstance(event, FunctionForked):
            return state.model_copy(
                update=dict(status="running", fork_after=d.after_call, fork_model=d.model, fork_params=d.params)
            )
        if isinstance(event, FunctionCompleted):
            return state.model_copy(update=dict(status="completed", result=d.result, waiting_for=None))
        if isinstance(event, FunctionFailed):
            return state.model_copy(update=dict(status="failed", error=d.error, waiting_for=None))
        index = getattr(event, "call_index", None)
        if index is None:
            return state
        update: dict[str, Any] = {"calls": max(state.calls, index)}
        if isinstance(event, SignalAwaited):
            update.update(status="waiting", waiting_for=d.name)
        elif state.status == "waiting":
            update.update(status="running", waiting_for=None)
        return state.model_copy(update=update)


# -- who performs a call: live, or from a recording ----------------------------------------------


class DurableEffects(Protocol):
    live: bool

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]: ...

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]: ...

    def value(self, call: str, args: dict[str, Any], call_index: int) -> Any: ...

    def signal(self, name: str, nth: int, call_index: int) -> SignalConsumed | None: ...

    def recorded_at(self, call_index: int) -> Event | None: ...

    def now(self) -> datetime: ...


class LiveDurable:
    """LLM and tool calls through `effects` (`LiveEffects`: gateway, invoker, budget);
    clock and random from this machine; signals from the run's signal stream."""

    live = True

    def __init__(self, effects: Effects, store: Any, run_id: str, clock: Callable[[], datetime] | None = None) -> None:
        self.effects, self.store, self.run_id = effects, store, run_id
        self.clock = clock or (lambda: datetime.now(timezone.utc))

    def now(self) -> datetime:
        return self.clock()

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        return self.effects.llm(request, call_index)

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        return self.effects.tool(name, args, call_index)

    def value(self, call: str, args: dict[str, Any], call_index: int) -> Any:
        now = self.clock()
        if call == "now":
            return now.isoformat()
        if call == "random":
            return _random.random()
        if call == "sleep":
            return (now + timedelta(seconds=float(args["seconds"]))).isoformat()
        return None

    def recorded_at(self, call_index: int) -> Event | None:
        return None

    def signal(self, name: str, nth: int, call_index: int) -> SignalConsumed | None:
        sent = [e for e in self.store.read_stream(signal_stream(self.run_id)) if isinstance(e, SignalSent) and e.name == name]
        if len(sent) <= nth:
            return None
        return SignalConsumed(call_index=call_index, name=name, data=sent[nth].data)


class ReplayDurable:
    """Serves only what `original` (a recorded stream) holds; fails closed otherwise."""

    live = False

    def __init__(self, original: list[Event], effects: Effects, stream_id: str = "") -> None:
        self.effects, self.stream_id = effects, stream_id
        self.by_index: dict[int, list[Event]] = {}
        for e in original:
            index = getattr(e, "call_index", None)
            if index is not None:
                self.by_index.setdefault(index, []).append(e)

    def recorded_at(self, call_index: int) -> Event | None:
        events = self.by_index.get(call_index)
        return events[0] if events else None

    def now(self) -> datetime:
        return datetime.now(timezone.utc)  # not used to decide anything in replay

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        return self.effects.llm(request, call_index)

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        return self.effects.tool(name, args, call_index)

    def value(self, call: str, args: dict[str, Any], call_index: int) -> Any:
        recorded = next((e for e in self.by_index.get(call_index, []) if isinstance(e, CallRecorded)), None)
        if recorded is None or (recorded.call, recorded.args) != (call, args):
            was = describe_recorded(recorded) if recorded is not None else "nothing"
            raise NonDeterminismError(self.stream_id, call_index, was, f"{call}({_args(args)})")
        return recorded.value

    def signal(self, name: str, nth: int, call_index: int) -> SignalConsumed | None:
        found = next((e for e in self.by_index.get(call_index, []) if isinstance(e, SignalConsumed)), None)
        if found is None:
            return None
        return SignalConsumed(call_index=call_index, name=found.name, data=found.data, timed_out=found.timed_out)


# -- the context ---------------------------------------------------------------------------------


def _args(args: Any, limit: int = 80) -> str:
    text = canonical_json(args)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_request(request: LlmRequest) -> str:
    last = request.messages[-1].get("content", "") if request.messages else ""
    return f"llm(model={request.model!r}, {_args(str(last), 60)}, hash {request.hash()[:12]})"


def describe_recorded(e: Event) -> str:
    d: Any = e
    if isinstance(e, LlmRequested):
        last = d.messages[-1].get("content", "") if d.messages else ""
        return f"llm(model={d.model!r}, {_args(str(last), 60)}, hash {d.request_hash[:12]})"
    if isinstance(e, ToolCalled):
        return f"tool({d.tool!r}, {_args(d.args)})"
    if isinstance(e, CallRecorded):
        return f"{d.call}({_args(d.args)})"
    if isinstance(e, SignalAwaited):
        return f"wait_for({d.name!r})"
    return e.type_name


def _fingerprint(e: Event) -> tuple[str, str]:
    d: Any = e
    if isinstance(e, LlmRequested):
        return ("llm", d.request_hash)
    if isinstance(e, ToolCalled):
        return ("tool", canonical_json([d.tool, d.args]))
    if isinstance(e, CallRecorded):
        return (d.call, canonical_json(d.args))
    if isinstance(e, SignalAwaited):
        return ("wait_for", canonical_json(d.name))
    return (e.type_name, "")


def index_calls(events: list[Event]) -> dict[int, list[Event]]:
    """A stream's recorded calls by call index, each call's events in version order."""
    calls: dict[int, list[Event]] = {}
    for e in sorted(events, key=lambda e: e.version):
        index = getattr(e, "call_index", None)
        if index is not None:
            calls.setdefault(index, []).append(e)
    return calls


class Context:
    """What an agent function is given: every call on it is recorded before it returns."""

    def __init__(self, shell: ActorShell[FunctionState], effects: DurableEffects, recorded: list[Event]) -> None:
        self._shell = shell
        self._effects = effects
        self._log = index_calls(recorded)
        self._index = 0
        self._waits: dict[str, int] = {}
        self.broken: NonDeterminismError | None = None

    @property
    def run_id(self) -> str:
        return self._shell.run_id

    @property
    def goal(self) -> str:
        return self._shell.state.goal

    @property
    def replaying(self) -> bool:
        """True while the call about to be made is served from the log (so a `print` in the
        function can stay quiet the second time)."""
        return (self._index + 1) in self._log or not self._effects.live

    # -- the calls ---------------------------------------------------------------------------

    def llm(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        schema: type[M] | None = None,
        model: str | None = None,
        **params: Any,
    ) -> Any:
        """The model's answer to `prompt` (a string, or chat messages): text, or with
        `schema` (a pydantic model class) an instance of it, from structured output.
        An LLM failure raises LlmError (recorded: a re-run raises it again)."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        state, index = self._shell.state, self._index + 1
        forked = state.fork_after is not None and index > state.fork_after
        base_model = (state.fork_model or state.model) if forked else state.model
        base_params = (state.fork_params if state.fork_params is not None else state.params) if forked else state.params
        request = LlmRequest(
            model=model or base_model,
            messages=messages,
            params={**base_params, **params},
            response_schema=schema.model_json_schema() if schema is not None else None,
        )
        events = self._call(("llm", request.hash()), lambda: describe_request(request), lambda i: self._effects.llm(request, i))
        done: Any = events[-1]
        if isinstance(done, LlmFailed):
            if done.error.reason in LlmError.REASONS:
                raise LlmError.from_info(done.error)
            raise RuntimeError(done.error.line())
        if not isinstance(done, LlmCompleted):
            raise RuntimeError(f"LLM call {index} of {self._shell.stream_id} has no recorded result")
        if schema is None:
            return done.content
        parsed = done.parsed if done.parsed is not None else parse_json_object(done.content)
        if parsed is None:
            raise ValueError(f"the model's reply is not a JSON object: {done.content[:200]!r}")
        return schema.model_validate(parsed)

    def tool(self, name: Any, **args: Any) -> str:
        """Call a tool: a registered name, an import path, or the `@tool` function itself
        (recorded as its path); its output text. A failed call raises ToolError with the
        recorded output."""
        if callable(name):
            name = path_of(name)
        events = self._call(
            ("tool", canonical_json([name, args])), lambda: f"tool({name!r}, {_args(args)})",
            lambda i: self._effects.tool(name, args, i),
        )  # fmt: skip
        returned: Any = events[-1]
        if not isinstance(returned, ToolReturned):
            raise RuntimeError(f"tool call {events[0].call_index} of {self._shell.stream_id} has no recorded result")  # type: ignore[attr-defined]
        if not returned.ok:
            raise ToolError(returned.output)
        return returned.output

    def now(self) -> datetime:
        """The time, recorded: a re-run sees the same."""
        return datetime.fromisoformat(self._value("now", {}))

    def random(self) -> float:
        """A random number in [0, 1), recorded."""
        return float(self._value("random", {}))

    def sleep(self, seconds: float) -> None:
        """Sleep until a recorded wake-up time (a re-run after it does not sleep again).
        Up to `IN_PLACE_S` seconds the actor sleeps; longer, the run is suspended durably
        (no actor held, it survives restarts) and the timer actor serves it again then."""
        index = self._index + 1
        wake = datetime.fromisoformat(self._value("sleep", {"seconds": seconds}))
        remaining = (wake - self._effects.now()).total_seconds()
        if not self._effects.live or remaining <= 0:
            return
        if remaining > IN_PLACE_S:
            raise Suspended(SLEEP, index, 0, until=wake)
        time.sleep(remaining)

    def wait_for(self, signal: str, timeout: float | None = None) -> Any:
        """The payload of the next signal named `signal` sent to this run (`chorus signal`,
        `Client.signal`, the API). With none yet, the run is suspended durably (no actor
        held) and served again when it comes; with a `timeout` (seconds), it returns None
        once that has passed with no signal (a recorded deadline: up to `IN_PLACE_S` the
        actor waits, longer the timer actor serves the run again at the deadline)."""
        nth = self._waits.get(signal, 0)
        self._waits[signal] = nth + 1
        events = self._call(
            ("wait_for", canonical_json(signal)), lambda: f"wait_for({signal!r})",
            lambda i: [SignalAwaited(call_index=i, name=signal, timeout_s=timeout, until=self._deadline(i, timeout))],
        )  # fmt: skip
        awaited: Any = events[0]
        index = awaited.call_index
        consumed = next((e for e in events if isinstance(e, SignalConsumed)), None)
        if consumed is not None:
            return consumed.data
        found = self._effects.signal(signal, nth, index)
        until = awaited.until
        if found is None and timeout is not None and until is None:  # recorded before durable timers
            until = self._effects.now() + timedelta(seconds=timeout)
        if found is None and until is not None and self._effects.live:
            remaining = (until - self._effects.now()).total_seconds()
            if remaining > IN_PLACE_S:
                raise Suspended(signal, index, nth, until=until)
            deadline = time.monotonic() + remaining
            while found is None and time.monotonic() < deadline:
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                found = self._effects.signal(signal, nth, index)
            if found is None:
                found = SignalConsumed(call_index=index, name=signal, data=None, timed_out=True)
        if found is None:
            raise Suspended(signal, index, nth)
        appended = self._shell.handle(Recorded(key=f"signal:{index}", events=[found]), causation_id=self._shell.last_event_id)
        self._log[index].extend(appended)
        return found.data

    def _deadline(self, index: int, timeout: float | None) -> datetime | None:
        """When a wait with `timeout` recorded at `index` times out: now + timeout live, the
        recorded one in replay (so the replayed event is the same)."""
        if timeout is None:
            return None
        if not self._effects.live:
            recorded = self._effects.recorded_at(index)
            return getattr(recorded, "until", None)
        return self._effects.now() + timedelta(seconds=timeout)

    def agent(self, child: Any, goal: str) -> Any:
        """Run another agent function (or its import path) in-line under this run: its
        calls are recorded in this stream, after a marker; its return value is the result."""
        try:
            path = agent_path(child)
        except ValueError:  # defined in __main__ or a function: still a name to record
            path = f"{getattr(child, '__module__', '?')}:{getattr(child, '__qualname__', repr(child))}"
        args = {"agent": path, "goal": goal}
        self._value("agent", args)
        fn = load_agent(child) if isinstance(child, str) else child
        return fn(self, goal)

    # -- recording -----------------------------------------------------------------------------

    def _value(self, call: str, args: dict[str, Any]) -> Any:
        def perform(i: int) -> list[Event]:
            return [CallRecorded(call_index=i, call=call, args=args, value=self._effects.value(call, args, i))]

        events = self._call((call, canonical_json(args)), lambda: f"{call}({_args(args)})", perform)
        return events[0].value  # type: ignore[attr-defined]

    def _call(
        self, fingerprint: tuple[str, str], described: Callable[[], str], perform: Callable[[int], list[Event]]
    ) -> list[Event]:
        """The call's events: from the log when it holds this index (checked against
        `fingerprint`), else performed and appended. `described` is made only for an error."""
        self._index += 1
        index = self._index
        recorded = self._log.get(index)
        expected = recorded[0] if recorded else self._effects.recorded_at(index)  # a replay's recording
        if expected is not None and _fingerprint(expected) != fingerprint:
            self.broken = NonDeterminismError(self._shell.stream_id, index, describe_recorded(expected), described())
            raise self.broken
        if recorded:
            return recorded
        events = perform(index)  # BudgetExhausted, a divergence: raised before anything is appended
        appended = self._shell.handle(Recorded(key=f"call:{index}", events=events), causation_id=self._shell.last_event_id)
        self._log[index] = list(appended)
        return self._log[index]

    def check_end(self) -> None:
        """The function returned: the log must not hold calls it no longer makes."""
        later = sorted(i for i in self._log if i > self._index)
        if later:
            first = self._log[later[0]][0]
            self.broken = NonDeterminismError(
                self._shell.stream_id, later[0], describe_recorded(first), "nothing (the function returned)"
            )
            raise self.broken
        if self.broken is not None:  # raised inside and swallowed by the function
            raise self.broken


# -- running one to its end, or its next wait ----------------------------------------------------


@dataclass
class Outcome:
    status: Literal["completed", "failed", "waiting"]
    result: str | None = None
    error: ErrorInfo | None = None
    waiting_for: str | None = None
    nth: int = 0
    until: datetime | None = None  # waiting on a durable timer: when it is due


def result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str, ensure_ascii=False)


def run_function(
    shell: ActorShell[FunctionState],
    fn: Callable[..., Any],
    effects: DurableEffects,
    recorded: list[Event],
) -> Outcome:
    """Run `fn(ctx, goal)` from the top against what `recorded` (its stream) holds, live
    past its end (or only from a recording: `effects.live` False). Records how it ended.
    Live, a non-determinism error fails the run; in replay it propagates, as divergences do."""
    state = shell.state
    if state.status == "completed":
        return Outcome("completed", result=state.result)
    if state.status == "failed":
        return Outcome("failed", error=state.error)
    ctx = Context(shell, effects, recorded)
    cause = lambda: shell.last_event_id  # noqa: E731
    try:
        value = fn(ctx, state.goal)
        ctx.check_end()
    except Suspended as s:
        return Outcome("waiting", waiting_for=s.name, nth=s.nth, until=s.until)
    except (ReplayDivergence, ToolDivergence, ImportPathError):
        raise
    except BudgetExhausted as e:
        shell.handle(Recorded(key="budget", events=[BudgetExceeded(error=e.error)]), causation_id=cause())
        return _failed(shell, e.error)
    except NonDeterminismError as e:
        if not effects.live:
            raise
        return _failed(shell, ErrorInfo(type="non_determinism", reason=f"call {e.index}", message=str(e)[:1000]))
    except Exception as e:
        if ctx.broken is not None and not effects.live:
            raise ctx.broken from e
        return _failed(shell, ErrorInfo(type="agent_error", reason=type(e).__name__, message=str(e)[:1000] or type(e).__name__))
    text = result_text(value)
    shell.handle(Finish(key="finish", result=text), causation_id=cause())
    return Outcome("completed", result=shell.state.result if shell.state.status == "completed" else text)


def _failed(shell: ActorShell[FunctionState], error: ErrorInfo) -> Outcome:
    shell.handle(FailFunction(key="finish", error=error), causation_id=shell.last_event_id)
    return Outcome("failed", error=shell.state.error or error)
