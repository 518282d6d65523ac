"""Workflow runs (seed 001) as the runtime sees them: `TaskRun`.

A workflow run is a `run:ID` lifecycle plus the workflow's stream `task:ID`, served by
`TaskActor`. Replay re-executes the workflow from its log (actors/tasks/replay.py); a fork
re-runs the workflow as a new run (see `actors.tasks.fork`).
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

from actors.runtime.behaviour import Behaviour
from actors.runtime.client import Client, RunHandle
from actors.runtime.registry import Registry
from actors.runtime.replay import ReplayReport
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, RunKind, Running, Wording
from actors.tasks import cli
from actors.tasks.client import fork_task, resume_task, submit_task
from actors.tasks.progress import describe_workflow
from actors.tasks.replay import replay_workflow
from actors.tasks.runner import KIND
from actors.tasks.workflow import WorkflowBehaviour, task_stream
from events.base import Event
from events.store import Recorded


class TaskRunning(Running):
    """How a workflow runs: served by `TaskActor`; forked and resumed by actors.tasks.client."""

    def submit(self, client: Client, goal: str, *, run_id: str, budget: Any = None, **options: Any) -> RunHandle:
        """`goal` is the workflow (an S-expression, a task or tool name, or a question with
        `kind="query"`); `options` as `actors.tasks.runner.prepare` takes them. A workflow's
        limits are its own (`limits`); `budget` (LLM calls, tokens) covers the whole run."""
        return submit_task(client, goal, run_id=run_id, budget=budget, **options)

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        return fork_task(client, run_id, at, model=model, llm_params=llm_params)

    def resume(self, client: Client, run_id: str, **options: Any) -> RunHandle:
        return resume_task(client, run_id, **options)


class TaskReading(Reading):
    """How a workflow run is read: its `task:ID` stream, re-executed on replay."""

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        return WorkflowBehaviour() if stream_id == task_stream(first.run_id) else None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        """The workflow's events (a fork's `WorkflowForked` mark is not a fact of the workflow)."""
        stream = task_stream(run_id)
        events = [r.event for r in records if r.event.stream_id == stream and r.event.type_name != "WorkflowForked"]
        if not events:
            raise ValueError(f"run {run_id} has no workflow events")
        return sorted(events, key=lambda e: e.version)

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        return replay_workflow(records, run_id)

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe_workflow(event)


class TaskCommands(FrontDoor):
    """`chorus task`."""

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)


@Registry.register_run_kind
class TaskRun(RunKind):
    name = KIND
    running: ClassVar[type[Running]] = TaskRunning
    reading: ClassVar[type[Reading]] = TaskReading
    front: ClassVar[type[FrontDoor]] = TaskCommands
    wording = Wording(
        summary="an S-expression workflow of atomic tasks and tools (seed 001)",
        lead="workflow",
        noun="a task workflow",
        lead_label="workflows",
        tallies={"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "TaskCalled": "task calls"},
    )
    # Over HTTP: the workspace, template folders and a memory-index file only inside the
    # folders the server allows (a fresh workspace per run when left out).
    http = HttpPolicy(path_options={"workspace": "workspace", "template_dirs": "in workspaces", "index": "in workspaces"})
