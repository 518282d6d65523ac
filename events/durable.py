"""The facts of an agent written as a plain Python function (`actors.runtime.durable`).

Its stream (`function:RUN`) opens with `FunctionStarted`; each context call is recorded at
its call index before the function sees its result: an LLM call as `LlmRequested` +
`LlmCompleted`, a tool call as `ToolCalled` + `ToolReturned` (events/effects.py), a clock
reading, random number, timer (`sleep`: its value is the wake-up time) or child agent as
`CallRecorded`, a wait for a person as
`SignalAwaited` and, once a signal came, `SignalConsumed`. Signals sent to a run wait on
their own stream (`signals:RUN`) as `SignalSent` until the function takes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type


@event_type("FunctionStarted")
class FunctionStarted(Event):
    agent: str  # the function's import path, "package.module:name"
    goal: str
    model: str = ""
    params: dict[str, Any] = {}  # the LLM parameters its calls start from
    root: str = "."  # the folder the run's tools work in ("." in logs from before it was recorded)
    options: dict[str, Any] = {}  # keyword arguments the function is called with besides the goal


@event_type("FunctionForked")
class FunctionForked(Event):
    """The calls before it were copied from another run; those after use `model`/`params`."""

    origin_run: str
    origin_position: int
    after_call: int  # the last call index the copied prefix holds
    model: str | None = None
    params: dict[str, Any] | None = None


@event_type("CallRecorded")
class CallRecorded(Event):
    """A context call that is neither an LLM nor a tool call: now, random, sleep, agent."""

    call_index: int
    call: str
    args: dict[str, Any] = {}
    value: Any = None


@event_type("SignalAwaited")
class SignalAwaited(Event):
    call_index: int
    name: str
    timeout_s: float | None = None
    until: datetime | None = None  # with a timeout: when it times out (None in logs before durable timers)


@event_type("SignalConsumed")
class SignalConsumed(Event):
    call_index: int
    name: str
    data: Any = None  # the signal's payload (JSON)
    timed_out: bool = False


@event_type("SignalSent")
class SignalSent(Event):
    name: str
    data: Any = None  # the signal's payload (JSON)
    sent_by: str | None = None


@event_type("FunctionCompleted")
class FunctionCompleted(Event):
    result: str


@event_type("FunctionFailed")
class FunctionFailed(Event):
    error: ErrorInfo
