"""Effects recorded before use (rule 2): every model call and check of a Builder or
Verifier turn is appended to the actor's own stream (`relay:<run>:builder`,
`relay:<run>:verifier`) before the turn reads its result.

`RecordedEffects` wraps the effects that perform a call (`LiveEffects` live, `ReplayEffects`
in a replay). Before performing anything it looks in the stream: a call the stream holds
already (a driver restarted after a crash between the call and the scheduler's command)
is served from there, never made twice. LLM calls are found by their call index (the
builder turn's number), tool calls by name and arguments (the arguments name the turn).
"""

from __future__ import annotations

from typing import Any

from actors.runtime.llm.types import LlmRequest, ReplayDivergence, check_recorded
from actors.runtime.perform import Effects
from events.base import Event
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.store import EventStore


def builder_stream(run_id: str) -> str:
    return f"relay:{run_id}:builder"


def verifier_stream(run_id: str) -> str:
    return f"relay:{run_id}:verifier"


def orchestrator_stream(run_id: str) -> str:
    return f"relay:{run_id}:orchestrator"


def scheduler_stream(run_id: str) -> str:
    return f"relay:{run_id}"


class RecordedEffects:
    """`inner`'s effects, appended to `stream_id` in `store` before they are returned."""

    def __init__(self, store: EventStore, stream_id: str, run_id: str, inner: Effects) -> None:
        self.store = store
        self.stream_id = stream_id
        self.run_id = run_id
        self.inner = inner

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        recorded = self.store.read_stream(self.stream_id)
        pair = [
            e for e in recorded if isinstance(e, (LlmRequested, LlmCompleted, LlmFailed)) and e.call_index == call_index
        ]
        if any(isinstance(e, (LlmCompleted, LlmFailed)) for e in pair):
            if pair[0].request_hash != request.hash():  # type: ignore[attr-defined]
                raise ReplayDivergence.between(
                    call_index,
                    LlmRequest.from_recorded(pair[0]),
                    pair[0].request_hash,
                    request,  # type: ignore[arg-type, attr-defined]
                )
            check_recorded(pair[0])
            return pair
        return self._append(self.inner.llm(request, call_index))

    def tool(self, name: str, args: dict[str, Any], call_index: int | None = None) -> list[Event]:
        """A check's result; `call_index` None takes the stream's next tool index."""
        recorded = self.store.read_stream(self.stream_id)
        calls = [e for e in recorded if isinstance(e, ToolCalled)]
        for called in calls:
            if (called.tool, called.args) == (name, args):
                done = [e for e in recorded if isinstance(e, ToolReturned) and e.call_index == called.call_index]
                if done:
                    return [called, done[0]]
        if call_index is None:
            call_index = max((c.call_index for c in calls), default=0) + 1
        return self._append(self.inner.tool(name, args, call_index))

    def _append(self, events: list[Event]) -> list[Event]:
        stamped = [e.stamp(run_id=e.run_id or self.run_id) for e in events]
        version = self.store.stream_version(self.stream_id)
        return [r.event for r in self.store.append(self.stream_id, stamped, version)]
