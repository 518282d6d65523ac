"""Performing effects: the live side of the wall, and the loop that drives a behaviour.

`drive` asks an `Effects` implementation for what the behaviour needs next and hands the
recorded result events back as a command. `LiveEffects` calls the model through the gateway
and tools through an invoker; `ReplayEffects` serves what a log recorded and fails closed on
anything else (`ReplayDivergence`, `ToolDivergence`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from actors.runtime.effects import (
    CallLlm,
    CallTool,
    Effects,
    LlmReturned,
    Stop,
    StopAgent,
    ToolFinished,
)
from actors.runtime.ledger import BUDGET_EXHAUSTED, BudgetExhausted, charged
from actors.runtime.llm.types import LlmRequest, ReplayDivergence, check_recorded
from actors.runtime.shell import ActorShell
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

__all__ = [
    "Effects", "LiveEffects", "RepeatedEffect", "ReplayEffects", "ToolDivergence", "ToolInvoker", "drive",
    "local_invoker", "ray_invoker", "tool_error_message",
]

ToolInvoker = Callable[[str, dict[str, Any]], str]


class LiveEffects:
    """Calls the model through the gateway and tools through `invoke(name, args)`. With a
    `ledger` (`actors.runtime.ledger`), every call draws on the run's budget first: one it
    cannot cover raises `BudgetExhausted` and is not sent."""

    def __init__(self, gateway: Any, invoke: ToolInvoker, ledger: Any = None) -> None:
        self.gateway = gateway
        self.invoke = invoke
        self.ledger = ledger

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        return charged(self.ledger, request, lambda: self.gateway.call(request, call_index).events)

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        called = ToolCalled(tool=name, args=args, call_index=call_index)
        started = time.perf_counter()
        try:
            output = self.invoke(name, args)
        except Exception as e:  # a tool's failure is an observation, not a crash
            message = tool_error_message(e)
            returned = ToolReturned(
                tool=name,
                call_index=call_index,
                ok=False,
                output=f"Error: {message}",
                latency_s=time.perf_counter() - started,
                error=ErrorInfo(type="tool_error", reason=type(_cause(e)).__name__, message=message),
            )
        else:
            returned = ToolReturned(
                tool=name,
                call_index=call_index,
                ok=True,
                output=str(output),
                latency_s=time.perf_counter() - started,
            )
        return [called, returned]


def _cause(e: BaseException) -> BaseException:
    # Ray wraps a remote exception in RayTaskError; its `.cause` is the original one.
    return getattr(e, "cause", None) or e


def tool_error_message(e: BaseException) -> str:
    cause = _cause(e)
    text = str(cause).strip().splitlines()
    detail = text[-1] if text else ""
    if isinstance(cause, ValueError) and detail:
        return detail  # bad input from the model: the message says what to do instead
    return f"{type(cause).__name__}: {detail}" if detail else type(cause).__name__


def local_invoker(tools: Mapping[str, Any]) -> ToolInvoker:
    """Tools as in-process objects (tests, replay checks)."""
    return lambda name, args: tools[name].execute(**args)


def ray_invoker(call: Callable[[str, dict[str, Any]], Any], timeout_s: float = 120.0) -> ToolInvoker:
    """Tools on Ray actors: `call(name, args)` sends the call and gives its object ref (a run's
    `RunTools`, actors.runtime.tool_host, makes the actors on first use)."""
    import ray  # lazily: replay and in-process tools never load Ray

    def invoke(name: str, args: dict[str, Any]) -> str:
        return ray.get(call(name, args), timeout=timeout_s)

    return invoke


class ToolDivergence(Exception):
    """A replay asked for a tool call the log does not hold."""


class ReplayEffects:
    """Serves the effects recorded in a stream, in order; never calls out. A call the run's
    budget refused (a recorded `BudgetExceeded` of type budget_exhausted) is refused again."""

    def __init__(self, recorded: list[Event]) -> None:
        self._llm: dict[int, list[Event]] = {}
        self._tools: dict[int, list[Event]] = {}
        self._refusals: list[ErrorInfo] = []
        for e in recorded:
            if isinstance(e, (LlmRequested, LlmCompleted, LlmFailed)):
                self._llm.setdefault(e.call_index, []).append(e)
            elif isinstance(e, (ToolCalled, ToolReturned)):
                self._tools.setdefault(e.call_index, []).append(e)
            elif isinstance(e, BudgetExceeded) and e.error.type == BUDGET_EXHAUSTED:
                self._refusals.append(e.error)
        self.live_calls = 0  # stays 0: there are none

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        pair = self._llm.get(call_index)
        if not pair and self._refusals:
            raise BudgetExhausted(self._refusals.pop(0))
        if not pair:
            raise ReplayDivergence(call_index, None, request.hash())
        recorded = pair[0]
        if recorded.request_hash != request.hash():  # type: ignore[attr-defined]
            raise ReplayDivergence.between(
                call_index, LlmRequest.from_recorded(recorded), recorded.request_hash, request  # type: ignore[attr-defined]
            )
        check_recorded(recorded)
        return [_fresh(e) for e in pair]

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        pair = self._tools.get(call_index)
        if not pair:
            raise ToolDivergence(f"replay diverged at tool call {call_index} ({name}): the log holds no such call")
        called = pair[0]
        if (called.tool, called.args) != (name, args):  # type: ignore[attr-defined]
            raise ToolDivergence(
                f"replay diverged at tool call {call_index}: "
                f"recorded {called.tool}({called.args}), "  # type: ignore[attr-defined]
                f"now {name}({args})"
            )
        return [_fresh(e) for e in pair]


def _fresh(e: Event) -> Event:
    """The recorded payload and timestamp, ready to append to a new stream."""
    return type(e).model_validate({**e.payload(), "timestamp": e.timestamp})


# -- the loop ------------------------------------------------------------------------------------


class RepeatedEffect(RuntimeError):
    """A behaviour asked again for an effect whose result the log already holds: its
    `evolve` did not advance past the recorded result (or its `decide` dropped it), so the
    same call would be made again and again. Raised before anything is performed (Temporal
    raises a non-determinism error in the same place)."""


def _refuse_repeat(shell: ActorShell[Any], effect: Any) -> None:
    key = (
        f"llm:{effect.call_index}" if isinstance(effect, CallLlm)
        else f"tool:{effect.call_index}" if isinstance(effect, CallTool)
        else None
    )  # fmt: skip
    if key is not None and key in shell.keys:  # the most recent keys, in memory: no read
        raise RepeatedEffect(
            f"{shell.stream_id}: the behaviour asked again for {key}, whose result the log already holds "
            f"(version {shell.version}): its evolve must advance call_index past a recorded "
            f"LlmRequested/LlmCompleted or ToolCalled/ToolReturned, and its decide must keep them"
        )


def drive(
    shell: ActorShell[Any],
    effects: Effects,
    on_events: Callable[[list[Event]], None] | None = None,
) -> Any:
    """Run an agent behaviour until `next_effect` is None. Resumable: it starts from the state
    the shell rebuilt from the log, so a restarted actor continues where the log ends."""
    behaviour = shell.behaviour
    while True:
        effect = behaviour.next_effect(shell.state)  # type: ignore[attr-defined]
        if effect is None:
            return shell.state
        cause = shell.last_event_id  # each step follows from the decision before it
        _refuse_repeat(shell, effect)
        if isinstance(effect, Stop):
            appended = shell.handle(StopAgent(key="stop", error=effect.error), causation_id=cause)
        elif isinstance(effect, CallLlm):
            try:
                recorded = effects.llm(effect.request, effect.call_index)
            except BudgetExhausted as e:  # the run's budget refused the call: the agent stops
                appended = shell.handle(StopAgent(key="stop", error=e.error), causation_id=cause)
                if not appended:  # a behaviour that does not stop for it: the call stays refused
                    raise
            else:
                command = LlmReturned(key=f"llm:{effect.call_index}", events=recorded)
                appended = shell.handle(command, causation_id=cause)
        elif isinstance(effect, CallTool):
            recorded = effects.tool(effect.tool, effect.args, effect.call_index)
            command = ToolFinished(key=f"tool:{effect.call_index}", events=recorded)
            appended = shell.handle(command, causation_id=cause)
        else:
            raise TypeError(f"unknown effect {effect!r}")
        if on_events is not None:
            on_events(appended)
