"""What a replay found: identical, or the first difference and why."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from events.base import Event


@dataclass
class Divergence:
    stream_id: str
    version: int  # the first version that differs
    expected: Event | None  # what the log holds there
    actual: Event | None  # what the replay produced
    reason: str = ""

    def describe(self) -> str:
        def show(e: Event | None) -> str:
            if e is None:
                return "(nothing)"
            return f"{e.type_name} {_short(e.payload())}"

        head = f"{self.stream_id}@{self.version}"
        lines = [f"first difference at {head}" + (f": {self.reason}" if self.reason else "")]
        lines.append(f"  expected: {show(self.expected)}")
        lines.append(f"  actual:   {show(self.actual)}")
        return "\n".join(lines)


@dataclass
class ReplayReport:
    run_id: str
    streams: list[str] = field(default_factory=list)
    events: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    original_s: float = 0.0
    replay_s: float = 0.0
    divergence: Divergence | None = None
    # what else the kind's replay checked, as lines `chorus replay` prints (a relay: its workspace)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.divergence is None

    @property
    def speedup(self) -> float:
        return self.original_s / self.replay_s if self.replay_s > 0 else float("inf")

    def add(self, stream_id: str, original: list[Event], replayed: list[Event]) -> None:
        """Count one replayed stream. A fork's stream counts from its fork mark on: the events
        before it are the origin's, copied (with the origin's timestamps), and were taken as
        recorded, not re-executed; its "live" time runs from the mark to its last event."""
        self.streams.append(stream_id)
        own = own_start(original)
        timed = original[max(own - 1, 0) :]  # from the mark (when the fork began) to the end
        if timed:
            self.original_s += (timed[-1].timestamp - timed[0].timestamp).total_seconds()
        replayed = replayed[own_start(replayed) :]
        self.events += len(replayed)
        self.llm_calls += sum(1 for e in replayed if e.type_name in ("LlmCompleted", "LlmFailed"))
        self.tool_calls += sum(1 for e in replayed if e.type_name == "ToolReturned")


# what the runtime writes at the head of a fork's stream, after the origin's copied events:
# the fork's mark, and a person's edit of the prompt it continues from (events/debug.py)
FORK_MARKS = frozenset({"AgentForked", "FunctionForked", "PromptEdited"})  # a workflow fork copies nothing


def own_start(events: list[Event]) -> int:
    """Where a stream's own events begin: after its last fork mark (0 for a stream that is not
    a fork's)."""
    return max((i + 1 for i, e in enumerate(events) if e.type_name in FORK_MARKS), default=0)


def first_difference(stream_id: str, original: list[Event], replayed: list[Event], reason: str = "") -> Divergence | None:
    """Where a replayed stream first differs from the recorded one (type or payload)."""
    for i in range(max(len(original), len(replayed))):
        a = original[i] if i < len(original) else None
        b = replayed[i] if i < len(replayed) else None
        if a is None or b is None or a.type_name != b.type_name or a.payload() != b.payload():
            return Divergence(stream_id, i + 1, a, b, reason)
    if reason:
        return Divergence(stream_id, len(replayed) + 1, None, None, reason)
    return None


def _short(payload: dict[str, Any], limit: int = 300) -> str:
    text = json.dumps(payload, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
