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
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.durable_calls import LiveDurable as LiveDurable  # re-exported: the shells import them from here
from actors.runtime.durable_calls import ReplayDurable as ReplayDurable
from actors.runtime.durable_calls import call_of as call_of
from actors.runtime.durable_calls import (
    DurableEffects,
    NonDeterminismError,
    _args,
    _facts_fingerprint,
    _fingerprint_of,
    describe_recorded,
    describe_request,
    function_stream,
    index_calls,
    signal_stream,
)
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
)
from events.effects import (
    LlmCompleted,
    LlmFailed,
    ToolReturned,
)
from events.errors import ErrorInfo
from events.runs import BudgetExceeded

__all__ = [
    "Context", "Failure", "FunctionBehaviour", "FunctionState", "NonDeterminismError", "Outcome", "Suspended",
    "agent", "function_stream", "load_agent", "run_function", "signal_stream",
]

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)
AGENT_MARK = "__chorus_agent__"
SLEEP = "sleep"  # what a run suspended in ctx.sleep waits for
DEFAULT_PARAMS = {"temperature": 0.0, "max_tokens": 512}  # as the client's DEFAULT_LLM_PARAMS
IN_PLACE_S = 5.0  # a sleep or wait_for timeout at most this long holds the actor; longer ones suspend


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


class Suspended(BaseException):
    """The function waits for a signal that has not come, or on a durable timer due at
    `until` (`name` "sleep" for ctx.sleep): the run is let go of. A BaseException, so a
    function's own `except Exception` does not swallow it."""

    def __init__(self, name: str, index: int, nth: int, until: datetime | None = None) -> None:
        self.name, self.index, self.nth, self.until = name, index, nth, until
        what = f"signal {name!r}" if name != SLEEP else "a timer"
        super().__init__(f"waiting for {what} (call {index})" + (f" until {until.isoformat()}" if until else ""))


class ToolError(RuntimeError):
    """A tool call failed; its recorded output says why (and `error`, when the tool said)."""

    def __init__(self, output: str, error: ErrorInfo | None = None) -> None:
        super().__init__(output)
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.error))


class Failure(Exception):
    """Raise it to end the run as failed with this `ErrorInfo` (its type, reason and
    message are what `chorus runs` and the run's `RunFailed` show)."""

    def __init__(self, error: ErrorInfo) -> None:
        super().__init__(error.line())
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.error,))


# -- the pure core of the stream ----------------------------------------------------------------

Status = Literal["new", "running", "waiting", "completed", "failed"]


class FunctionState(State):
    status: Status = "new"
    agent: str = ""
    goal: str = ""
    model: str = ""
    params: dict[str, Any] = {}
    options: dict[str, Any] = {}  # the function's keyword arguments beyond the goal
    root: str = "."  # the folder the run's tools work in (the run's root, then `ctx.use_folder`)
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
    root: str = "."
    options: dict[str, Any] = {}

    @classmethod
    def of(cls, started: Any) -> StartFunction:
        """The command that recorded `started` (a `FunctionStarted`), to serve the run again."""
        return cls(key="start", agent=started.agent, goal=started.goal, model=started.model,
                   params=started.params, root=started.root, options=started.options)  # fmt: skip


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
            return [FunctionStarted(
                agent=command.agent, goal=command.goal, model=command.model, params=command.params, root=command.root,
                options=command.options,
            )]  # fmt: skip
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
            return state.model_copy(update=dict(
                status="running", agent=d.agent, goal=d.goal, model=d.model, params=d.params, options=d.options,
                root=d.root,
            ))  # fmt: skip
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
        if isinstance(event, CallRecorded) and d.call == "folder":
            update["root"] = str(d.args.get("path") or ".")
        if isinstance(event, SignalAwaited):
            update.update(status="waiting", waiting_for=d.name)
        elif state.status == "waiting":
            update.update(status="running", waiting_for=None)
        return state.model_copy(update=update)


# -- the context ---------------------------------------------------------------------------------


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
    def model(self) -> str:
        """The model the run's calls go to (`llm` may name another per call)."""
        return self._shell.state.model

    @property
    def params(self) -> dict[str, Any]:
        """The LLM parameters the run's calls start from."""
        return dict(self._shell.state.params)

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
        state = self._shell.state
        forked = self._forked()
        base_model = (state.fork_model or state.model) if forked else state.model
        base_params = (state.fork_params if state.fork_params is not None else state.params) if forked else state.params
        request = LlmRequest(
            model=model or base_model,
            messages=messages,
            params={**base_params, **params},
            response_schema=schema.model_json_schema() if schema is not None else None,
        )
        events = self._llm_events(request)
        done: Any = events[-1]
        if isinstance(done, LlmFailed):
            if done.error.reason in LlmError.REASONS:
                raise LlmError.from_info(done.error)
            raise RuntimeError(done.error.line())
        if not isinstance(done, LlmCompleted):
            raise RuntimeError(f"LLM call {events[0].call_index} of {self._shell.stream_id} has no recorded result")  # type: ignore[attr-defined]
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
        events = self._tool_events(name, args)
        returned: Any = events[-1]
        if not isinstance(returned, ToolReturned):
            raise RuntimeError(f"tool call {events[0].call_index} of {self._shell.stream_id} has no recorded result")  # type: ignore[attr-defined]
        if not returned.ok:
            raise ToolError(returned.output, returned.error)
        return returned.output

    def request(self, request: LlmRequest) -> list[Event]:
        """An LLM call made with a whole `LlmRequest` (what `llm` builds from a prompt); its
        recorded events (`LlmRequested`, then `LlmCompleted` or `LlmFailed`). In a fork, after
        its `FunctionForked`, the request goes to the fork's model, with its parameters over
        the request's."""
        state = self._shell.state
        if self._forked():
            update: dict[str, Any] = {}
            if state.fork_model:
                update["model"] = state.fork_model
            if state.fork_params is not None:
                update["params"] = {**request.params, **state.fork_params}
            request = request.model_copy(update=update)
        return self._llm_events(request)

    def _forked(self) -> bool:
        after = self._shell.state.fork_after
        return after is not None and self._index + 1 > after

    def _llm_events(self, request: LlmRequest) -> list[Event]:
        return self._call(("llm", request.hash()), lambda: describe_request(request), lambda i: self._effects.llm(request, i))

    def emit(self, *events: Event) -> list[Event]:
        """Record events of the agent's own (any registered event type: projections and
        `chorus log` see them) as the next call: appended live; a re-run or a replay checks
        they are the same as recorded there (NonDeterminismError if not). Returns them as
        appended (stamped with their time and version)."""
        if not events:
            return []
        facts = list(events)
        fingerprint = _facts_fingerprint(facts)
        return self._call(fingerprint, lambda: f"emit({', '.join(e.type_name for e in facts)})", lambda i: facts)

    def use_folder(self, path: str) -> None:
        """The folder the run's tools work in from the next call on (recorded): for an agent
        that finds its folder while it runs (a repository it cloned)."""
        self._value("folder", {"path": str(path)})

    def drive(self, behaviour: Behaviour[Any], start: Command) -> Any:
        """Run a decide/evolve `behaviour` (a `Behaviour` with `next_effect`, as the ReAct
        agent is) in-line from its `start` command to its end, and return its final state.
        Its LLM and tool calls are this function's calls; what it decides besides is
        recorded with `emit` after each call. A call the run's budget refuses is decided on
        as `StopAgent`, as `perform.drive` does."""
        from actors.runtime.effects import (
            CallLlm,
            CallTool,
            LlmReturned,
            Stop,
            StopAgent,
            ToolFinished,
        )

        state = behaviour.state_type()
        for e in self.emit(*behaviour.decide(state, start)):
            state = behaviour.evolve(state, e)
        last: tuple[str, int] | None = None
        while (effect := behaviour.next_effect(state)) is not None:  # type: ignore[attr-defined]
            if isinstance(effect, Stop):
                command: Command = StopAgent(key="stop", error=effect.error)
                recorded: list[Event] = []
            else:
                this = (type(effect).__name__, effect.call_index)
                if this == last:
                    raise RuntimeError(f"{behaviour.name} asked for {this[0]} {this[1]} again: its evolve does not advance past a call")
                last = this
                try:
                    if isinstance(effect, CallLlm):
                        recorded = self.request(effect.request)
                        command = LlmReturned(key=f"llm:{effect.call_index}", events=recorded)
                    elif isinstance(effect, CallTool):
                        recorded = self._tool_events(effect.tool, effect.args)
                        command = ToolFinished(key=f"tool:{effect.call_index}", events=recorded)
                    else:
                        raise TypeError(f"unknown effect {effect!r}")
                except BudgetExhausted as e:  # refused: the call's index stays empty (a replay refuses it again)
                    command, recorded = StopAgent(key="stop", error=e.error), []
            decided = behaviour.decide(state, command)
            ids = {id(e) for e in recorded}
            for e in recorded:
                state = behaviour.evolve(state, e)
            # The behaviour returns the call's events again among its decisions: they are recorded already.
            for e in self.emit(*[e for e in decided if id(e) not in ids]):
                state = behaviour.evolve(state, e)
        return state

    def _tool_events(self, name: str, args: dict[str, Any]) -> list[Event]:
        return self._call(
            ("tool", canonical_json([name, args])), lambda: f"tool({name!r}, {_args(args)})",
            lambda i: self._effects.tool(name, args, i),
        )  # fmt: skip

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
            return getattr(recorded[0], "until", None) if recorded else None
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
        expected = recorded or self._effects.recorded_at(index)  # a replay's recording
        if expected and _fingerprint_of(expected) != fingerprint:
            self.broken = NonDeterminismError(self._shell.stream_id, index, describe_recorded(expected[0]), described())
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
    cause = lambda: shell.last_event_id
    try:
        value = fn(ctx, state.goal, **state.options)
        ctx.check_end()
    except Suspended as s:
        return Outcome("waiting", waiting_for=s.name, nth=s.nth, until=s.until)
    except (ReplayDivergence, ToolDivergence, ImportPathError):
        raise
    except BudgetExhausted as e:
        shell.handle(Recorded(key="budget", events=[BudgetExceeded(error=e.error)]), causation_id=cause())
        return _failed(shell, e.error)
    except Failure as e:
        if ctx.broken is not None and not effects.live:
            raise ctx.broken from e
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
