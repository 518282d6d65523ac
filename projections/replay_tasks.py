"""Replay a task workflow run (seed 001) from its log: no model, no scripts, no file reads.

The workflow is re-executed from its recorded `WorkflowStarted` in a scratch in-memory store,
with every LLM completion and tool result served from the recording (`ReplayEffects`, which
fails closed on a request the log does not hold), and the stream it produces is compared
event by event with the original. `projections.replay.replay_run` hands task runs here.
"""

from __future__ import annotations

import time
from typing import Any

from actors.runtime.effects import ReplayEffects, ToolDivergence
from actors.runtime.llm.types import ReplayDivergence
from actors.runtime.shell import ActorShell
from actors.tasks.journal import JournalDivergence
from actors.tasks.workflow import ForkWorkflow, StartWorkflow, WorkflowBehaviour, execute_workflow, task_stream
from events.base import Event
from events.store import EventStore, Recorded
from events.tasks import WorkflowForked, WorkflowStarted


def is_task_run(records: list[Recorded], run_id: str) -> bool:
    stream = task_stream(run_id)
    return any(r.event.stream_id == stream and isinstance(r.event, WorkflowStarted) for r in records)


def replay_task_run(store: EventStore, run_id: str, records: list[Recorded] | None = None) -> Any:
    from projections.replay import Divergence, ReplayReport, run_records

    records = records if records is not None else run_records(store, run_id)
    stream_id = task_stream(run_id)
    original = sorted((r.event for r in records if r.event.stream_id == stream_id), key=lambda e: e.version)
    report = ReplayReport(run_id, streams=[stream_id])
    started = time.perf_counter()
    if not original or not isinstance(original[0], WorkflowStarted):
        report.divergence = Divergence(stream_id, 1, original[0] if original else None, None, "no WorkflowStarted")
        return report
    report.original_s = (original[-1].timestamp - original[0].timestamp).total_seconds()
    replayed, reason = _rerun(stream_id, original, run_id)
    report.events = len(replayed)
    report.llm_calls = sum(1 for e in replayed if e.type_name in ("LlmCompleted", "LlmFailed"))
    report.tool_calls = sum(1 for e in replayed if e.type_name == "ToolReturned")
    report.divergence = _first_difference(stream_id, original, replayed, reason)
    report.replay_s = time.perf_counter() - started
    return report


def _rerun(stream_id: str, original: list[Event], run_id: str) -> tuple[list[Event], str]:
    scratch = EventStore("memory://")

    def recorded_clock(version: int) -> Any:
        return original[min(version, len(original)) - 1].timestamp

    shell = ActorShell(WorkflowBehaviour(), stream_id, scratch, run_id=run_id, snapshot_every=0, clock=recorded_clock).load()
    first = original[0]
    reason = ""
    try:
        shell.handle(StartWorkflow.from_event(first, key=first.command_id or "start"), causation_id=first.causation_id)
        forked = original[1] if len(original) > 1 else None
        if isinstance(forked, WorkflowForked):  # a fork: its own recording serves all its calls
            fork = ForkWorkflow.from_event(forked, key=forked.command_id or "fork")
            shell.handle(fork, causation_id=forked.causation_id)
        execute_workflow(shell, ReplayEffects(original))
    except (ReplayDivergence, ToolDivergence, JournalDivergence, ValueError) as e:
        reason = str(e).splitlines()[0]
    return scratch.read_stream(stream_id), reason


def _first_difference(stream_id: str, original: list[Event], replayed: list[Event], reason: str) -> Any:
    from projections.replay import Divergence

    for i in range(max(len(original), len(replayed))):
        a = original[i] if i < len(original) else None
        b = replayed[i] if i < len(replayed) else None
        if a is None or b is None or a.type_name != b.type_name or a.payload() != b.payload():
            return Divergence(stream_id, i + 1, a, b, reason)
    if reason:
        return Divergence(stream_id, len(replayed) + 1, None, None, reason)
    return None
