"""A run's lifecycle as a tiny behaviour: submitted → started → completed | failed; a started
run whose agent function is suspended is waiting (RunWaiting) until it is started again.

Its stream is `run:{run_id}`. The client appends RunSubmitted; the actor serving the run
appends the rest, or the client `Cancel`s it (RunFailed with an error of type `cancelled`). Every command is idempotent by state (starting a started run appends
nothing), so a retried lead actor cannot start or finish a run twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import model_validator

from actors.runtime.behaviour import Behaviour, Command
from events.base import Event, State
from events.errors import ErrorInfo
from events.runs import (
    Budget,
    RunCompleted,
    RunFailed,
    RunStarted,
    RunSubmitted,
    RunWaiting,
)

RunStatus = Literal["new", "submitted", "running", "waiting", "completed", "failed"]
TERMINAL_TYPES = ("RunCompleted", "RunFailed")


class UnknownRun(LookupError):
    """No run with that id in the store."""


def run_stream(run_id: str) -> str:
    return f"run:{run_id}"


class RunState(State):
    status: RunStatus = "new"
    goal: str = ""
    kind: str = ""  # the run's kind (RunSubmitted.kind)
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    lead_stream: str | None = None
    result: str | None = None
    error: ErrorInfo | None = None
    forked_from: str | None = None
    waiting_for: str | None = None  # while waiting: the signal's name, or "sleep"
    wake_at: datetime | None = None  # while waiting on a durable timer: when it is due

    @model_validator(mode="before")
    @classmethod
    def _kind_was_agent(cls, data: Any) -> Any:
        """A state snapshotted before the rename named the kind `agent` (see RunSubmitted v3)."""
        if isinstance(data, dict) and "agent" in data and "kind" not in data:
            data = {**data, "kind": data["agent"]}
            del data["agent"]
        return data


class Submit(Command):
    goal: str
    kind: str = ""  # the run's kind; empty: RunSubmitted's default
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    forked_from: str | None = None


class Start(Command):
    lead_stream: str


class Wait(Command):
    """The run's agent function is suspended: on a signal named `waiting_for`, or a timer
    due at `until`. Nothing serves the run meanwhile."""

    waiting_for: str
    until: datetime | None = None


class Complete(Command):
    result: str
    llm_calls: int = 0
    tokens: int = 0


class Fail(Command):
    error: ErrorInfo


class Cancel(Command):
    """A person stopped the run (Ctrl-C, SIGTERM, `Client.cancel`): it fails as `cancelled`."""

    reason: str = "interrupted"
    message: str = "the run was cancelled"


class RunLifecycle(Behaviour[RunState]):
    name = "run"
    state_type = RunState

    def decide(self, state: RunState, command: Command) -> list[Event]:
        if isinstance(command, Submit):
            if state.status != "new":
                return []
            kind: dict[str, Any] = {"kind": command.kind} if command.kind else {}
            return [
                RunSubmitted(
                    goal=command.goal,
                    **kind,
                    params=command.params,
                    budget=command.budget,
                    forked_from=command.forked_from,
                )
            ]
        if state.status in ("completed", "failed"):
            return []  # a finished run stays finished
        if isinstance(command, Start):
            if state.status == "running":
                return []
            return [RunStarted(lead_stream=command.lead_stream)]
        if isinstance(command, Wait):
            if state.status == "waiting" and (state.waiting_for, state.wake_at) == (command.waiting_for, command.until):
                return []
            return [RunWaiting(waiting_for=command.waiting_for, until=command.until)]
        if isinstance(command, Complete):
            return [
                RunCompleted(result=command.result, llm_calls=command.llm_calls, tokens=command.tokens)
            ]
        if isinstance(command, Fail):
            return [RunFailed(error=command.error)]
        if isinstance(command, Cancel):
            if state.status == "new":
                return []  # nothing was submitted: nothing to cancel
            return [RunFailed(error=ErrorInfo(type="cancelled", reason=command.reason, message=command.message))]
        raise TypeError(f"run cannot handle {type(command).__name__}")

    def evolve(self, state: RunState, event: Event) -> RunState:
        if isinstance(event, RunSubmitted):
            return state.model_copy(
                update=dict(
                    status="submitted",
                    goal=event.goal,
                    kind=event.kind,
                    params=event.params,
                    budget=event.budget,
                    forked_from=event.forked_from,
                )
            )
        if isinstance(event, RunStarted):
            return state.model_copy(
                update=dict(status="running", lead_stream=event.lead_stream, waiting_for=None, wake_at=None)
            )
        if isinstance(event, RunWaiting):
            return state.model_copy(update=dict(status="waiting", waiting_for=event.waiting_for, wake_at=event.until))
        if isinstance(event, RunCompleted):
            return state.model_copy(update=dict(status="completed", result=event.result, waiting_for=None, wake_at=None))
        if isinstance(event, RunFailed):
            return state.model_copy(update=dict(status="failed", error=event.error, waiting_for=None, wake_at=None))
        return state
