"""The calls of an agent function (`actors.runtime.durable`) as its stream records them: who
performs one (live, or from a recording), how a recorded call is found by its index and
told apart from another, and the error when a re-run asks for something else than the log
holds. Pure but for `LiveDurable`, which reads the run's signals from the store."""

from __future__ import annotations

import random as _random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from actors.runtime.effects import Effects
from actors.runtime.llm.types import LlmRequest, canonical_json
from events.base import Event
from events.durable import CallRecorded, SignalAwaited, SignalConsumed, SignalSent
from events.effects import LlmRequested, ToolCalled


def function_stream(run_id: str) -> str:
    return f"function:{run_id}"


def signal_stream(run_id: str) -> str:
    return f"signals:{run_id}"



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



# -- who performs a call: live, or from a recording ----------------------------------------------


class DurableEffects(Protocol):
    live: bool

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]: ...

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]: ...

    def value(self, call: str, args: dict[str, Any], call_index: int) -> Any: ...

    def signal(self, name: str, nth: int, call_index: int) -> SignalConsumed | None: ...

    def recorded_at(self, call_index: int) -> list[Event] | None: ...

    def now(self) -> datetime: ...


class LiveDurable:
    """LLM and tool calls through `effects` (`LiveEffects`: gateway, invoker, budget);
    clock and random from this machine; signals from the run's signal stream."""

    live = True

    def __init__(self, effects: Effects, store: Any, run_id: str, clock: Callable[[], datetime] | None = None) -> None:
        self.effects, self.store, self.run_id = effects, store, run_id
        self.clock = clock or (lambda: datetime.now(UTC))

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

    def recorded_at(self, call_index: int) -> list[Event] | None:
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
            index = call_of(e)
            if index is not None:
                self.by_index.setdefault(index, []).append(e)

    def recorded_at(self, call_index: int) -> list[Event] | None:
        return self.by_index.get(call_index) or None

    def now(self) -> datetime:
        return datetime.now(UTC)  # not used to decide anything in replay

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



# -- recorded calls --------------------------------------------------------------------------------


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
    if getattr(e, "call_index", None) is None:
        return f"emit({e.type_name}, ...)"
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


def _fingerprint_of(events: list[Event]) -> tuple[str, str]:
    """A recorded call's fingerprint: its first event's, or for facts (`ctx.emit`, events
    with no call index of their own) the types and payloads of them all."""
    if getattr(events[0], "call_index", None) is not None or isinstance(events[0], (LlmRequested, ToolCalled)):
        return _fingerprint(events[0])
    return _facts_fingerprint(events)


def _facts_fingerprint(events: list[Event]) -> tuple[str, str]:
    return ("emit", canonical_json([[e.type_name, e.payload()] for e in events]))


def call_of(e: Event) -> int | None:
    """The call index an event of a function stream belongs to: its command's key `call:N`
    (the events a call appended together, facts from `ctx.emit` too), else its `call_index`."""
    key = e.command_id or ""
    if key.startswith("call:") and key[5:].isdigit():
        return int(key[5:])
    return getattr(e, "call_index", None)


def index_calls(events: list[Event]) -> dict[int, list[Event]]:
    """A stream's recorded calls by call index, each call's events in version order."""
    calls: dict[int, list[Event]] = {}
    for e in sorted(events, key=lambda e: e.version):
        index = call_of(e)
        if index is not None:
            calls.setdefault(index, []).append(e)
    return calls
