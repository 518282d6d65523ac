"""A relay as a run of kind "relay": recorded, served to its end, resumable.

`start_relay` checks a person's input before anything is written (the workspace is a
folder, the roadmap file reads, max_retries is sane), then records the run (RunSubmitted,
RunStarted), the roadmap (from the file, or the Orchestrator's one LLM call, recorded in
`relay:<run>:orchestrator` before its reply is read) and the files the workspace held,
and commits them in the workspace's git repository. `serve_relay` drives the turns to the
end (actors.relay.run) with the workspace's git tree kept in step with the log, then
completes the run. A served run that stopped half way resumes from its log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.relay.builder import Builder
from actors.relay.edits import workspace_snapshot
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import (
    RecordedEffects,
    builder_stream,
    orchestrator_stream,
    scheduler_stream,
    verifier_stream,
)
from actors.relay.roadmap import (
    Roadmap,
    load_roadmap,
    roadmap_from_reply,
    roadmap_request,
)
from actors.relay.run import drive_relay, git_mirror, plan_relay
from actors.relay.scheduler import RelayState, SchedulerBehaviour
from actors.relay.verifier import Verifier
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, run_stream
from actors.runtime.shell import ActorShell
from events.base import Event
from events.effects import LlmCompleted
from events.errors import ErrorInfo
from events.relay import RelayBudget
from events.runs import Budget

KIND = "relay"


def _no_tools(name: str, args: dict[str, Any]) -> str:
    raise ValueError(f"no tool {name!r} here")


def provider_for(client: Any) -> Any:
    """The model the relay's actors call: the client's, else the configured endpoint."""
    if client.llm is not None:
        return client.llm
    from actors.runtime.llm.providers import provider_from_settings

    return provider_from_settings(client.ensure_llm())


def check_input(
    goal: str, workspace: str | Path, roadmap: str | Path | None, max_retries: int
) -> tuple[Path, Roadmap | None]:
    """ValueError (one line) for a person's bad input; nothing is written here."""
    if not goal.strip():
        raise ValueError("the goal is empty")
    folder = Path(workspace).expanduser()
    if not folder.is_dir():
        raise ValueError(f"workspace {str(workspace)!r} is not a folder")
    if max_retries < 0:
        raise ValueError(f"--max-retries must be 0 or more, not {max_retries}")
    return folder.resolve(), (load_roadmap(roadmap) if roadmap is not None else None)


def start_relay(
    client: Any,
    goal: str,
    *,
    run_id: str,
    workspace: str | Path,
    roadmap: str | Path | None = None,
    max_retries: int = 3,
    budget: Budget | None = None,
    llm_params: dict[str, Any] | None = None,
) -> str:
    folder, planned = check_input(goal, workspace, roadmap, max_retries)
    files = workspace_snapshot(folder)
    budget = budget or Budget()
    client.begin_run(
        run_id,
        goal=goal,
        agent=KIND,
        params={
            "workspace": str(folder),
            "roadmap": str(roadmap) if roadmap is not None else None,
            "max_retries": max_retries,
            "llm_params": dict(llm_params or {}),
        },
        budget=budget,
    )
    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), client.store, run_id=run_id).load()
    lifecycle.handle(Start(key="start", lead_stream=scheduler_stream(run_id)))
    if planned is None:
        try:
            planned = orchestrate(client, run_id, goal, llm_params or {})
        except ValueError as e:
            lifecycle.handle(
                Fail(
                    key="finish",
                    error=ErrorInfo(type="bad_roadmap", reason="ValueError", message=str(e)),
                )
            )
            raise
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), client.store, run_id=run_id).load()
    relay_budget = RelayBudget(max_tokens=budget.max_tokens, max_seconds=budget.max_wall_seconds)
    plan_relay(
        shell,
        goal,
        list(planned.items),
        max_retries=max_retries,
        budget=relay_budget,
        files=files,
    )
    git = GitWorkspace(folder).init()
    git.write(files)
    git.commit(f"relay {run_id}: the workspace before the relay")
    return run_id


def orchestrate(client: Any, run_id: str, goal: str, params: dict[str, Any]) -> Roadmap:
    """The Orchestrator: the goal becomes a roadmap through one recorded LLM call."""
    effects = RecordedEffects(
        client.store,
        orchestrator_stream(run_id),
        run_id,
        LiveEffects(LlmGateway(provider_for(client)), _no_tools),
    )
    outcome = effects.llm(roadmap_request(goal, client.settings.llm_model, params), 1)[-1]
    if not isinstance(outcome, LlmCompleted):
        raise ValueError(f"the orchestrator's model call failed: {outcome.error.message}")  # type: ignore[attr-defined]  # noqa: TRY004
    return roadmap_from_reply(goal, outcome.parsed if outcome.parsed is not None else outcome.content)


def serve_relay(client: Any, run_id: str, on_event: Callable[[Event], None] | None = None) -> RelayState:
    """Drive the relay to its end and complete the run; resumes a run cut short."""
    run = client.run_state(run_id)
    if run.agent != KIND:
        raise ValueError(f"run {run_id} is not a relay (it is {run.agent or 'react'})")
    store, model = client.store, client.settings.llm_model
    params = dict(run.params.get("llm_params", {}))
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store, run_id=run_id).load()
    git = GitWorkspace(run.params["workspace"]).init()
    git.sync(shell.state.files)  # a resumed run's tree is the log's
    gateway = LlmGateway(provider_for(client))
    builder, verifier = Builder(model, params), Verifier(model, params)
    mirror = git_mirror(git)

    def seen(e: Event) -> None:
        mirror(e)
        if on_event is not None:
            on_event(e)

    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    try:
        state = drive_relay(
            shell,
            builder,
            verifier,
            RecordedEffects(
                store,
                builder_stream(run_id),
                run_id,
                LiveEffects(gateway, builder.invoker()),
            ),
            RecordedEffects(
                store,
                verifier_stream(run_id),
                run_id,
                LiveEffects(gateway, verifier.invoker()),
            ),
            on_event=seen,
        )
    except Exception as e:  # the run ends failed, with why; its turns so far stay in the log
        error = ErrorInfo(type="runtime_error", reason=type(e).__name__, message=str(e)[:500])
        lifecycle.handle(Fail(key="finish", error=error))
        raise
    calls = sum(
        1
        for stream in (orchestrator_stream(run_id), builder_stream(run_id), verifier_stream(run_id))
        for e in store.read_stream(stream)
        if isinstance(e, LlmCompleted)
    )
    lifecycle.handle(Complete(key="finish", result=outcome(state), llm_calls=calls, tokens=state.tokens_used))
    return state


def outcome(state: RelayState) -> str:
    total = len(state.items)
    line = f"{state.passed} of {total} roadmap items passed, {state.escalated} escalated"
    return line + (f"; stopped: {state.stop_reason}" if state.status == "stopped" else "")
