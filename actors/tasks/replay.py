"""Replaying a workflow run (seed 001): the workflow re-executed from its recorded
`WorkflowStarted` (and a fork's `WorkflowForked`), every LLM completion and tool result served
from the log, its `task:ID` stream compared event by event with the recorded one. A journal
that no longer matches the workflow's steps is a divergence, not an error (`JournalDivergence`).
"""

from __future__ import annotations

from typing import Any

from actors.runtime.replay import Divergence, ReplayReport, replay_stream
from actors.tasks.events import WorkflowForked, WorkflowStarted
from actors.tasks.journal import JournalDivergence
from actors.tasks.workflow import (
    ForkWorkflow,
    StartWorkflow,
    WorkflowBehaviour,
    execute_workflow,
    task_stream,
)
from events.store import Recorded


def replay_workflow(records: list[Recorded], run_id: str) -> ReplayReport:
    """Re-execute a workflow run's `task:ID` stream against its recording (see `replay_stream`)."""
    stream_id = task_stream(run_id)
    original = sorted((r.event for r in records if r.event.stream_id == stream_id), key=lambda e: e.version)
    report = ReplayReport(run_id, streams=[stream_id])
    if not original or not isinstance(original[0], WorkflowStarted):
        report.divergence = Divergence(stream_id, 1, original[0] if original else None, None, "no WorkflowStarted")
        return report

    def begin(shell: Any) -> None:
        first = original[0]
        shell.handle(StartWorkflow.from_event(first, key=first.command_id or "start"), causation_id=first.causation_id)
        forked = original[1] if len(original) > 1 else None
        if isinstance(forked, WorkflowForked):  # a fork: its own recording serves all its calls
            fork = ForkWorkflow.from_event(forked, key=forked.command_id or "fork")
            shell.handle(fork, causation_id=forked.causation_id)

    replayed, divergence = replay_stream(
        WorkflowBehaviour(), stream_id, original, run_id,
        begin=begin, execute=execute_workflow, expected=(JournalDivergence,),
    )  # fmt: skip
    report.streams.clear()
    report.add(stream_id, original, replayed)
    report.divergence = divergence
    return report


__all__ = ["replay_workflow"]
