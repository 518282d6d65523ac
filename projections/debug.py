"""Reading a run as a person debugging it: its timeline, an actor's state at any version,
and where two runs part ways."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from actors.runtime.progress import describe
from actors.runtime.registry import Registry
from actors.runtime.run import RunLifecycle
from actors.runtime.shell import rebuild
from events.base import Event, State
from events.store import EventStore, Recorded
from projections.replay import agent_name, agent_streams, run_records

ERROR_TYPES = frozenset({"LlmFailed", "AgentFailed", "RunFailed", "BudgetExceeded", "StepRejected"})


def timeline(store: EventStore, run_id: str, color: bool = False) -> list[str]:
    """One block per event in global order: offset from the run's start, actor, what happened."""
    records = run_records(store, run_id)
    start = records[0].event.timestamp
    lines = []
    for rec in records:
        e = rec.event
        text = describe(e, brief=True) or e.type_name
        if e.type_name == "ToolReturned" and e.output.strip():  # type: ignore[attr-defined]
            text += "\n" + _indent(e.output, 12)  # type: ignore[attr-defined]
        offset = (e.timestamp - start).total_seconds()
        actor = e.stream_id.split(":", 1)[0]
        line = f"{offset:8.2f}s  {rec.position:>6}  {actor:<6} {text}"
        if e.type_name in ERROR_TYPES or (e.type_name == "ToolReturned" and not e.ok):  # type: ignore[attr-defined]
            line = f"\033[31m{line}\033[0m" if color else f"{line}  <-- !"
        lines.append(line)
    return lines


def _indent(text: str, n: int, max_lines: int = 6) -> str:
    rows = text.strip().splitlines()
    shown = rows[:max_lines] + ([f"... ({len(rows) - max_lines} more lines)"] if len(rows) > max_lines else [])
    return "\n".join(" " * n + "| " + r for r in shown)


class UnknownStream(LookupError):
    pass


def state_at(store: EventStore, stream_id: str, version: int | None = None) -> tuple[int, State]:
    """The state an actor's stream folds to at `version` (default: its latest)."""
    latest = store.stream_version(stream_id)
    if latest == 0:
        raise UnknownStream(f"no stream with id {stream_id!r}")
    if version is not None and not 1 <= version <= latest:
        raise ValueError(f"stream {stream_id!r} has versions 1..{latest}; --at {version} is outside")
    events = store.read_stream(stream_id, 1, version)
    return events[-1].version, rebuild(behaviour_for(store, events), events)


def behaviour_for(store: EventStore, events: list[Event]) -> Any:
    if events[0].type_name == "RunSubmitted":
        return RunLifecycle()
    if events[0].type_name in ("AgentStarted", "ResearchRequested"):
        records = run_records(store, events[0].run_id)
        return Registry.agent_class(agent_name(records, events[0].run_id))()
    if events[0].type_name == "WorkflowStarted":
        from actors.tasks.workflow import WorkflowBehaviour

        return WorkflowBehaviour()
    raise ValueError(f"no behaviour known for a stream starting with {events[0].type_name}")


@dataclass
class RunDiff:
    run_a: str
    run_b: str
    shared: int  # leading events of the lead agents (or workflows) that are the same fact
    first_a: Event | None
    first_b: Event | None
    counts_a: Counter[str]
    counts_b: Counter[str]
    end_a: str
    end_b: str
    kind: str = "agent"  # "agent" or "workflow": what was compared

    def lines(self) -> list[str]:
        lead = "workflows" if self.kind == "workflow" else "lead agents"
        out = [f"{self.run_a} and {self.run_b}: the {lead} share their first {self.shared} events"]
        if self.first_a is None and self.first_b is None:
            out.append("no difference: the same events, in the same order")
        else:
            out.append(f"  {self.run_a}: {_show(self.first_a)}")
            out.append(f"  {self.run_b}: {_show(self.first_b)}")
        out.append(f"  {self.run_a}: {_tally(self.counts_a, self.kind)}; {self.end_a}")
        out.append(f"  {self.run_b}: {_tally(self.counts_b, self.kind)}; {self.end_b}")
        return out


def diff_runs(store: EventStore, run_a: str, run_b: str) -> RunDiff:
    """Where two runs of one kind part: their lead agents' streams, or for task workflow runs
    their workflow streams (a fork's `WorkflowForked` mark is not a fact of the workflow)."""
    kinds, streams = [], []
    for run_id in (run_a, run_b):
        kind, events = _lead_events(run_records(store, run_id), run_id)
        kinds.append(kind)
        streams.append(events)
    if kinds[0] != kinds[1]:
        raise ValueError(
            f"run {run_a} is {_a(kinds[0])} run and run {run_b} {_a(kinds[1])} run; diff compares runs of one kind"
        )
    a, b = streams
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x.type_name != y.type_name or _fact(x) != _fact(y):
            break
        shared += 1
    return RunDiff(
        run_a,
        run_b,
        shared,
        a[shared] if shared < len(a) else None,
        b[shared] if shared < len(b) else None,
        Counter(e.type_name for e in a),
        Counter(e.type_name for e in b),
        _end(store, run_a),
        _end(store, run_b),
        kinds[0],
    )


def _lead_events(records: list[Recorded], run_id: str) -> tuple[str, list[Event]]:
    if agent_name(records, run_id) == "task":
        from actors.tasks.workflow import task_stream

        stream = task_stream(run_id)
        events = [r.event for r in records if r.event.stream_id == stream and r.event.type_name != "WorkflowForked"]
        if not events:
            raise ValueError(f"run {run_id} has no workflow events")
        return "workflow", sorted(events, key=lambda e: e.version)
    agents = agent_streams(records)
    if not agents:
        raise ValueError(f"run {run_id} has no agent events")
    return "agent", next(iter(agents.values()))


def _a(kind: str) -> str:
    return "a task workflow" if kind == "workflow" else "an agent"


def _fact(e: Event) -> dict[str, Any]:
    payload = e.payload()
    payload.pop("latency_s", None)  # how long a call took is not what it decided
    return payload


def _end(store: EventStore, run_id: str) -> str:
    run = rebuild(RunLifecycle(), store.read_stream(f"run:{run_id}"))
    origin = f" (a fork of {run.forked_from})" if run.forked_from else ""
    if run.status == "completed":
        return f"completed: {(run.result or '')[:160]!r}{origin}"
    if run.status == "failed" and run.error:
        return f"failed: {run.error.line()}{origin}"
    return run.status + origin


def _show(e: Event | None) -> str:
    if e is None:
        return "(no more events)"
    text = json.dumps(_fact(e), default=str, ensure_ascii=False)
    return f"@{e.version} {e.type_name} {text[:240]}"


TALLIES = {
    "agent": {"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "StepRejected": "rejected steps"},
    "workflow": {"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "TaskCalled": "task calls"},
}


def _tally(counts: Counter[str], kind: str = "agent") -> str:
    names = TALLIES[kind]
    return ", ".join(f"{counts.get(k, 0)} {name}" for k, name in names.items()) + f", {sum(counts.values())} events"
