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
        """Count one replayed stream."""
        self.streams.append(stream_id)
        if original:
            self.original_s += (original[-1].timestamp - original[0].timestamp).total_seconds()
        self.events += len(replayed)
        self.llm_calls += sum(1 for e in replayed if e.type_name in ("LlmCompleted", "LlmFailed"))
        self.tool_calls += sum(1 for e in replayed if e.type_name == "ToolReturned")


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
