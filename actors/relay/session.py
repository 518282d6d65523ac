"""A relay as a run of kind "relay": recorded, served to its end, resumable.

`start_relay` checks a person's input before anything is written (the workspace is a
folder, the roadmap file reads, max_retries is sane), then records the run (RunSubmitted,
RunStarted), the roadmap (from the file, or the Orchestrator's one LLM call, recorded in
`relay:<run>:orchestrator` before its reply is read) and the files the workspace held,
and commits them in the workspace's git repository. `serve_relay` drives the turns to the
end (actors.relay.run) with the workspace's git tree kept in step with the log, then
completes the run. A served run that stopped half way resumes from its log.

The turns run on the Builder and the Verifier that `local_turns` makes in this process,
or on whatever `turns` a caller gives (RelayActor gives proxies of their Ray actors); both
are made by `relay_builder` / `relay_verifier`, so they record alike. A served Builder
recalls the top 5 similar past turns of the run's task from TurnMemory (actors.relay.memory),
caught up from the log before each build. After each checkpoint the run's resubmit hook, if
it has one, runs and its outcome is recorded (actors.relay.resubmit); a hook a dead
scheduler left unrun runs when the relay resumes.

A run's `probes` (name -> argv, the run param `probes`; `chorus relay --probe NAME=CMD`)
are the seed's domain-specific probes: the Verifier runs each in the sandbox in the
workspace's scratch copy after the tests, exit 0 passing. The Verifier reads them from the
run's RunSubmitted, wherever it runs (this process or its Ray actor).

A relay whose process died resumes with `chorus resume RUN` (`Client.resume`, the kind's
`resume`): `serve_relay` again, which continues from the log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from actors.relay import resubmit as hooks
from actors.relay.builder import Builder
from actors.relay.git_workspace import GitWorkspace, relay_branch
from actors.relay.memory import Embed, TurnRecall
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
from actors.relay.run import (
    TurnBuilder,
    TurnVerifier,
    drive_relay,
    git_mirror,
    plan_relay,
)
from actors.relay.scheduler import RelayState, SchedulerBehaviour, next_action
from actors.relay.verifier import Verifier
from actors.relay.workspace_files import workspace_snapshot
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, run_stream
from actors.runtime.shell import ActorShell
from events.base import Event
from events.effects import LlmCompleted
from events.errors import ErrorInfo
from actors.relay.events import CheckpointStored, RelayBudget
from events.runs import Budget
from events.store import EventStore

KIND = "relay"
PROBE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _no_tools(name: str, args: dict[str, Any]) -> str:
    raise ValueError(f"no tool {name!r} here")


def provider_for(client: Any) -> Any:
    """The model the relay's actors call: the client's, else the configured endpoint."""
    if client.llm is not None:
        return client.llm
    from actors.runtime.llm.providers import provider_from_settings

    return provider_from_settings(client.ensure_llm())


def check_probes(probes: Any) -> dict[str, list[str]]:
    """The probes as the run records them (name -> argv); ValueError (one line) for a bad one."""
    if probes is None:
        return {}
    if not isinstance(probes, dict):
        raise ValueError("probes must map a name to a command (a list of arguments)")  # noqa: TRY004 - a person's input
    out: dict[str, list[str]] = {}
    for name, argv in probes.items():
        if not isinstance(name, str) or not PROBE_NAME.fullmatch(name):
            raise ValueError(f"probe name {name!r}: letters, digits, '.', '_' and '-' only (at most 64)")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ValueError(f"probe {name!r}: its command must be a non-empty list of arguments")
        out[name] = list(argv)
    return out


def check_input(
    goal: str,
    workspace: str | Path,
    roadmap: str | Path | None,
    max_retries: int,
    resubmit: Any = None,
    probes: Any = None,
) -> tuple[Path, Roadmap | None]:
    """ValueError (one line) for a person's bad input; nothing is written here."""
    hooks.hook_spec(resubmit)
    check_probes(probes)
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
    resubmit: hooks.Hook | None = None,
    probes: dict[str, list[str]] | None = None,
) -> str:
    """Record a relay run and its roadmap; `resubmit` is the hook run after each
    checkpoint: a command (argv list) or a callable `hook(checkpoint, workspace)`;
    `probes` the domain probes the Verifier runs (name -> argv)."""
    folder, planned = check_input(goal, workspace, roadmap, max_retries, resubmit, probes)
    files = workspace_snapshot(folder)
    budget = budget or Budget()
    spec = hooks.hook_spec(resubmit)
    if callable(resubmit):
        hooks.local_hooks[run_id] = resubmit
    client.begin_run(
        run_id,
        goal=goal,
        kind=KIND,
        params={
            "workspace": str(folder),
            "roadmap": str(roadmap) if roadmap is not None else None,
            "max_retries": max_retries,
            "llm_params": dict(llm_params or {}),
            **({"resubmit": spec} if spec is not None else {}),
            **({"probes": check_probes(probes)} if probes else {}),
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
    git = GitWorkspace(folder).init(relay_branch(run_id))
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


class Turns(NamedTuple):
    """Who does a relay's turns: `drive_relay`'s builder and verifier with their effects
    (None for proxies of Ray actors, which record their own)."""

    builder: TurnBuilder
    verifier: TurnVerifier
    builder_effects: Any = None
    verifier_effects: Any = None


TurnsFactory = Callable[[str, dict[str, Any]], Turns]  # (task id, llm params) -> Turns


def relay_builder(
    store: EventStore,
    settings: Any,
    provider: Any,
    run_id: str,
    task_id: str,
    params: dict[str, Any],
    embed: Embed | None = None,
) -> tuple[Builder, RecordedEffects]:
    """A served Builder, its memory the run's TurnMemory, and its recorded effects."""
    recall = TurnRecall.from_settings(settings, store, task_id, embed)
    builder = Builder(settings.llm_model, params, memory=recall)
    gateway = LlmGateway(provider)
    return builder, RecordedEffects(store, builder_stream(run_id), run_id, LiveEffects(gateway, builder.invoker()))


def relay_verifier(
    store: EventStore, settings: Any, provider: Any, run_id: str, params: dict[str, Any]
) -> tuple[Verifier, RecordedEffects]:
    run = ActorShell(RunLifecycle(), run_stream(run_id), store).load().state
    verifier = Verifier(settings.llm_model, params, probes=check_probes(run.params.get("probes")))
    gateway = LlmGateway(provider)
    return verifier, RecordedEffects(store, verifier_stream(run_id), run_id, LiveEffects(gateway, verifier.invoker()))


def local_turns(client: Any, run_id: str, embed: Embed | None = None) -> TurnsFactory:
    """The Builder and the Verifier in this process."""

    def make(task_id: str, params: dict[str, Any]) -> Turns:
        provider = provider_for(client)
        builder, builder_effects = relay_builder(
            client.store, client.settings, provider, run_id, task_id, params, embed
        )
        verifier, verifier_effects = relay_verifier(client.store, client.settings, provider, run_id, params)
        return Turns(builder, verifier, builder_effects, verifier_effects)

    return make


def serve_relay(
    client: Any,
    run_id: str,
    on_event: Callable[[Event], None] | None = None,
    *,
    turns: TurnsFactory | None = None,
    embed: Embed | None = None,
) -> RelayState:
    """Drive the relay to its end and complete the run; resumes a run cut short. `turns`
    makes who does the turns (default: `local_turns`, with `embed` for the memory)."""
    run = client.run_state(run_id)
    if run.kind != KIND:
        raise ValueError(f"run {run_id} is not a relay (it is {run.kind or 'react'})")
    store = client.store
    params = dict(run.params.get("llm_params", {}))
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store, run_id=run_id).load()
    folder = Path(run.params["workspace"])
    git = GitWorkspace(folder)
    if shell.version:  # served again: a git its dead server was running may have left its lock
        git.drop_stale_lock()
    git.init(relay_branch(run_id))
    git.sync(shell.state.files)  # a resumed run's tree is the log's
    mirror = git_mirror(git)
    hook = hooks.resolve(run.params.get("resubmit"), run_id)

    def resubmitted(checkpoint: CheckpointStored) -> None:
        if hook is None:
            return
        done = hooks.resubmit(store, run_id, checkpoint, hook, folder)
        if done is not None and on_event is not None:
            on_event(done)

    def seen(e: Event) -> None:
        mirror(e)
        if on_event is not None:
            on_event(e)
        if isinstance(e, CheckpointStored):  # committed by the mirror: the hook sees the checkpoint
            resubmitted(e)

    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    try:
        if hook is not None:  # a scheduler that died between a checkpoint and its hook
            stored = [e for e in store.read_stream(scheduler_stream(run_id)) if isinstance(e, CheckpointStored)]
            for checkpoint in hooks.pending(store, run_id, stored):
                resubmitted(checkpoint)
        state = shell.state
        if next_action(state) is not None:  # else the relay ended already: no one to start
            workers = (turns or local_turns(client, run_id, embed))(state.task_id or run_id, params)
            state = drive_relay(shell, *workers, on_event=seen)
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
