"""The workflow's one door to the world, and its record of what happened (rules 1 and 2).

The evaluator is ordinary recursive code, deterministic given what the Journal hands it.
Deterministic facts (steps, task calls) are noted and appended with the next effect; every
LLM completion and tool result goes through an `Effects` (live: the gateway and the tools;
replay: the log) and is appended to the workflow's stream *before* the evaluator sees it.

A restarted actor re-runs the workflow from the top against its own log: facts already in
the log are checked, not appended again, and effects the log holds are served from it; the
first thing the log does not hold runs live. So a crash costs at most the call in flight.
An LLM call the run's budget refuses (`actors.runtime.ledger`) is never sent: the refusal is
recorded (`BudgetExceeded`) and the task gets a failed call of type `budget_exhausted`.

A tool call's start (`ToolCalled`) is appended before the tool runs, its result
(`ToolReturned`) after. A call whose start the log holds without a result was cut off by a
crash; by default it runs again on resume (at-least-once, like Temporal's activities). A
workflow started with the limit `at_most_once=1` gets a FAILED result of type
`interrupted` for it instead, and the tool is not run again (at-most-once).

A forked workflow (`WorkflowForked`) may send its later LLM calls to another model or with
other parameters: the Journal retargets each request by the recorded rule before it is
checked or made, so a fork resumes and replays to the same requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from actors.runtime.behaviour import Command
from actors.runtime.effects import Effects
from actors.runtime.ledger import BudgetExhausted
from actors.runtime.llm.types import LlmRequest, check_recorded
from events.base import Event
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.errors import ErrorInfo
from events.runs import BudgetExceeded
from actors.tasks.events import WorkflowForked

if TYPE_CHECKING:  # the shell is the runtime's: it brings the store, which a pure core must not
    from actors.runtime.shell import ActorShell


AT_MOST_ONCE = "at_most_once"  # the workflow limit: 1 = never run a cut-off tool call again


class Record(Command):
    """Facts decided by the evaluator or recorded by an effect, to append as they are."""

    events: list[Event]


class JournalDivergence(Exception):
    """Re-running a workflow against its own log produced a different fact."""


class Journal:
    def __init__(
        self,
        shell: ActorShell[Any],
        effects: Effects,
        on_events: Callable[[list[Event]], None] | None = None,
    ) -> None:
        self.shell = shell
        self.effects = effects
        self.on_events = on_events
        self.pending: list[Event] = []
        self.llm_calls = 0
        self.tool_calls = 0
        self.retargets = list(shell.state.fork.get("retargets", []))
        # What a previous life of this workflow recorded after its start (resume).
        logged = shell.store.read_stream(shell.stream_id, 2) if shell.version > 1 else []
        self._log = [e for e in logged if not isinstance(e, WorkflowForked)]
        self._cursor = 0
        self._logged_llm = {e.call_index for e in self._log if isinstance(e, (LlmCompleted, LlmFailed))}
        self._logged_tools = {e.call_index for e in self._log if isinstance(e, ToolReturned)}
        self._started_tools = {e.call_index for e in self._log if isinstance(e, ToolCalled)}
        self.at_most_once = bool(getattr(shell.state, "limits", {}).get(AT_MOST_ONCE))

    @property
    def resuming(self) -> bool:
        return self._cursor < len(self._log)

    def note(self, event: Event) -> None:
        self.pending.append(event)

    def flush(self) -> None:
        if self.pending:
            events, self.pending = self.pending, []
            self._record(events)

    def llm(self, request: LlmRequest) -> LlmCompleted | LlmFailed:
        self.llm_calls += 1
        index = self.llm_calls
        request = retarget(request, self.retargets, index)
        if index in self._logged_llm:
            recorded = self._served(LlmRequested, LlmCompleted, LlmFailed, index)
            if recorded[0].request_hash != request.hash():  # type: ignore[attr-defined]
                raise JournalDivergence(f"LLM call {index} now asks something other than the log recorded")
            check_recorded(recorded[0])
        else:
            try:
                recorded = self.effects.llm(request, index)
            except BudgetExhausted as e:  # the run's budget refused it: recorded, never sent
                self._record(self._take() + [BudgetExceeded(error=e.error)])
                return LlmFailed(request_hash=request.hash(), call_index=index, error=e.error)
        self._record(self._take() + list(recorded))
        return recorded[-1]  # type: ignore[return-value]

    def tool(self, name: str, args: dict[str, Any]) -> ToolReturned:
        self.tool_calls += 1
        index = self.tool_calls
        if index in self._logged_tools:
            recorded = self._served(ToolCalled, ToolReturned, ToolReturned, index)
            self._record(self._take() + list(recorded))
            return recorded[-1]  # type: ignore[return-value]
        called = ToolCalled(tool=name, args=args, call_index=index)
        cut_off = index in self._started_tools  # a previous life started it; no result came
        self._record(self._take() + [called])  # durable before the tool touches the world
        if cut_off and self.at_most_once:
            returned = interrupted(called)
        else:
            recorded = self.effects.tool(name, args, index)
            if type(recorded[0]) is not ToolCalled or recorded[0].payload() != called.payload():
                raise JournalDivergence(f"tool call {index} ({name}) was served a different call")
            returned = recorded[-1]  # type: ignore[assignment]
        self._record([returned])
        return returned

    # -- internals -------------------------------------------------------------------------

    def _take(self) -> list[Event]:
        events, self.pending = self.pending, []
        return events

    def _served(self, first: type, ok: type, bad: type, index: int) -> list[Event]:
        found = [e for e in self._log if isinstance(e, (first, ok, bad)) and e.call_index == index]  # type: ignore[attr-defined]
        return [type(e).model_validate(e.payload()) for e in found]

    def _record(self, events: list[Event]) -> None:
        fresh: list[Event] = []
        for e in events:
            if self._cursor < len(self._log) and not fresh:
                logged = self._log[self._cursor]
                if type(logged) is not type(e) or logged.payload() != e.payload():
                    raise JournalDivergence(
                        f"{self.shell.stream_id}@{logged.version}: the log holds {logged.type_name}, "
                        f"re-running the workflow produced {e.type_name}"
                    )
                self._cursor += 1
            else:
                fresh.append(e)
        if not fresh:
            return
        appended = self.shell.handle(
            Record(key=f"record:{self.shell.version + 1}", events=fresh), causation_id=self.shell.last_event_id
        )
        if self.on_events is not None:
            self.on_events(appended)


def interrupted(called: ToolCalled) -> ToolReturned:
    """The result of a tool call cut off by a crash, in an at-most-once workflow."""
    message = f"{called.tool} was interrupted by a crash and is not run again (at-most-once)"
    return ToolReturned(
        tool=called.tool,
        call_index=called.call_index,
        ok=False,
        output=f"Error: {message}",
        error=ErrorInfo(type="interrupted", reason="crash", message=message),
    )


def retarget(request: LlmRequest, retargets: Sequence[dict[str, Any]], call_index: int) -> LlmRequest:
    """The request as LLM call `call_index` of a forked workflow makes it (see `WorkflowForked`)."""
    applies = [r for r in retargets if r["after"] < call_index]
    if not applies:
        return request
    rule = applies[-1]
    return request.model_copy(
        update={"model": rule.get("model") or request.model, "params": {**request.params, **(rule.get("params") or {})}}
    )
