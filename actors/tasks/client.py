"""Workflows from Python, on the runtime's Client (seed 001's `handle_task_command`):

    from actors import Client
    from actors.tasks.client import run_task, submit_task

    with Client() as chorus:
        result = run_task(chorus, '(call summarize-file :path "README.md")', workspace=".")
        print(result.status, result.content)

        run = submit_task(chorus, "summarize-file", params={"path": "README.md"})
        for rec in run.events():              # live, until the run ends
            print(rec.event.type_name)

A workflow is a run like any other (`chorus runs`, `chorus log`, `chorus replay`,
`chorus diff`, and `Client.fork`): its `RunKind` is `actors.tasks.kind.TaskRun`, so
`Client().submit(text, kind="task", params=...)` starts one too. The model
server is started only when the workflow can call a model.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.client import Client, RunHandle, new_run_id
from actors.tasks.actor import TaskActor
from actors.tasks.fork import read_fork
from actors.tasks.result import TaskResult, from_error
from actors.tasks.runner import needs_llm, prepare, submit, task_result
from actors.tasks.workflow import ForkWorkflow, StartWorkflow, task_stream
from events.errors import ErrorInfo
from events.runs import Budget
from actors.tasks.events import WorkflowForked, WorkflowStarted


def submit_task(
    client: Client, text: str, *, run_id: str | None = None, budget: Budget | None = None, **options: Any
) -> RunHandle:
    """Start a workflow run; returns at once. Options: see `actors.tasks.runner.prepare`
    (params, template_dirs, templates, workspace, index, history, kind, llm_params, limits).
    `budget` (LLM calls, tokens) covers every model call of the run (`actors.runtime.ledger`).
    Bad input raises ValueError before anything is written."""
    start = prepare(text, model=client.settings.llm_model, **options)
    return _launch(client, run_id or new_run_id(), start, budget=budget)


def fork_task(
    client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
) -> RunHandle:
    """A new run that re-runs workflow run `run_id`, served what it had recorded by global
    position `at`, then live (with `model` / `llm_params` if given); see `actors.tasks.fork`.
    The original run is untouched. ValueError, before anything is written, for a position
    outside the run or after its workflow finished."""
    original = client.run_state(run_id)  # UnknownRun
    start, fork = read_fork(client.store, run_id, at, model=model, params=llm_params)
    return _launch(client, new_run_id(), start, fork, forked_from=f"{run_id}@{at}", budget=original.budget)


def resume_task(client: Client, run_id: str, **options: Any) -> RunHandle:
    """Serve again a workflow run whose actor died: its start (and fork) commands rebuilt
    from what its stream recorded, so they append nothing, and the workflow goes on from
    its journal (a call already recorded is served from the log, not made again)."""
    if options:
        raise ValueError(f"resuming a workflow run takes no options, not {', '.join(sorted(options))}")
    recorded = client.store.read_stream(task_stream(run_id))
    if not recorded or not isinstance(recorded[0], WorkflowStarted):
        raise ValueError(f"run {run_id}'s workflow never started: there is nothing to resume (submit it again)")
    start = StartWorkflow.from_event(recorded[0], key=recorded[0].command_id or "start")
    second = recorded[1] if len(recorded) > 1 else None
    fork = ForkWorkflow.from_event(second, key=second.command_id or "fork") if isinstance(second, WorkflowForked) else None
    settings = client.ensure_llm() if needs_llm(start) else client.settings
    client.ensure_ray()
    return client.spawn(run_id, TaskActor, task_stream(run_id), (settings, run_id, client.llm), (start, fork))


def _launch(
    client: Client,
    run_id: str,
    start: StartWorkflow,
    fork: ForkWorkflow | None = None,
    forked_from: str | None = None,
    budget: Budget | None = None,
) -> RunHandle:
    """Record the run and serve it on a Ray actor that Ray restarts after a crash."""
    settings = client.ensure_llm() if needs_llm(start) else client.settings
    client.ensure_ray()
    submit(client.store, run_id, start, forked_from=forked_from, budget=budget)
    return client.spawn(run_id, TaskActor, task_stream(run_id), (settings, run_id, client.llm), (start, fork))


def result_of(client: Client, handle: RunHandle) -> TaskResult:
    """The TaskResult a finished run recorded (or its run error, if it died first)."""
    found = task_result(client.store, handle.run_id)
    if found is not None:
        return found
    run = handle.result
    return from_error(run.error or ErrorInfo(type="runtime_error", reason=run.status, message=f"run {run.status}"))


def run_task(client: Client, text: str, *, timeout: float | None = None, **options: Any) -> TaskResult:
    handle = submit_task(client, text, **options)
    handle.wait(timeout=timeout)
    return result_of(client, handle)
