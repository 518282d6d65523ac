"""Replay a recorded run: re-execute its agents against the log, with no model, no tools and
no network, and check they decide exactly what they decided the first time.

The replay runs in a scratch in-memory store, so nothing is ever written to the real log.
LLM completions, tool results and clock readings (event timestamps) are served from the
recording; anything the recording does not hold fails closed with the first difference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.effects import ReplayEffects, ToolDivergence, drive
from actors.runtime.llm.types import ReplayDivergence
from actors.runtime.registry import Registry
from actors.runtime.run import RunLifecycle, UnknownRun, run_stream
from actors.runtime.shell import ActorShell, rebuild
from events.base import Event
from events.store import EventStore, Recorded


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

    @property
    def ok(self) -> bool:
        return self.divergence is None

    @property
    def speedup(self) -> float:
        return self.original_s / self.replay_s if self.replay_s > 0 else float("inf")


def run_records(store: EventStore, run_id: str) -> list[Recorded]:
    records = list(store.read_all(run_id=run_id))
    if not records:
        raise UnknownRun(f"no run with id {run_id!r}")
    return records


def agent_streams(records: list[Recorded]) -> dict[str, list[Event]]:
    """The run's agent streams (the lead's `agent:RUN`, and any that begin with
    AgentStarted), events in order."""
    streams: dict[str, list[Event]] = {}
    for rec in records:
        streams.setdefault(rec.event.stream_id, []).append(rec.event)
    return {
        sid: sorted(evs, key=lambda e: e.version)
        for sid, evs in streams.items()
        if evs and (sid.startswith("agent:") or min(evs, key=lambda e: e.version).type_name == "AgentStarted")
    }


def agent_name(records: list[Recorded], run_id: str) -> str:
    run = rebuild(RunLifecycle(), [r.event for r in records if r.event.stream_id == run_stream(run_id)])
    return run.agent or "react"


def replay_stream(behaviour: Any, stream_id: str, original: list[Event], run_id: str) -> tuple[list[Event], Divergence | None]:
    """Re-execute one agent stream against its own recording, in a scratch store."""
    scratch = EventStore("memory://")

    def recorded_clock(version: int) -> Any:
        return original[version - 1].timestamp if version <= len(original) else original[-1].timestamp

    shell = ActorShell(behaviour, stream_id, scratch, run_id=run_id, snapshot_every=0, clock=recorded_clock).load()
    first = original[0]
    reason = ""
    try:
        shell.handle(behaviour.start_command(first, key=first.command_id or "start"), causation_id=first.causation_id)
        drive(shell, ReplayEffects(original))
    except (ReplayDivergence, ToolDivergence) as e:
        reason = str(e).splitlines()[0]
    replayed = scratch.read_stream(stream_id)
    for i in range(max(len(original), len(replayed))):
        a = original[i] if i < len(original) else None
        b = replayed[i] if i < len(replayed) else None
        if a is None or b is None or a.type_name != b.type_name or a.payload() != b.payload():
            return replayed, Divergence(stream_id, i + 1, a, b, reason)
    if reason:
        return replayed, Divergence(stream_id, len(replayed) + 1, None, None, reason)
    return replayed, None


def replay_run(store: EventStore, run_id: str) -> ReplayReport:
    records = run_records(store, run_id)
    if agent_name(records, run_id) == "task":  # a seed 001 workflow run
        from projections.replay_tasks import replay_task_run

        return replay_task_run(store, run_id, records)
    behaviour = Registry.agent_class(agent_name(records, run_id))()
    report = ReplayReport(run_id)
    started = time.perf_counter()
    for stream_id, original in agent_streams(records).items():
        report.streams.append(stream_id)
        report.original_s += (original[-1].timestamp - original[0].timestamp).total_seconds()
        replayed, divergence = replay_stream(behaviour, stream_id, original, run_id)
        report.events += len(replayed)
        report.llm_calls += sum(1 for e in replayed if e.type_name in ("LlmCompleted", "LlmFailed"))
        report.tool_calls += sum(1 for e in replayed if e.type_name == "ToolReturned")
        if divergence is not None:
            report.divergence = divergence
            break
    report.replay_s = time.perf_counter() - started
    return report


def _short(payload: dict[str, Any], limit: int = 300) -> str:
    import json

    text = json.dumps(payload, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
