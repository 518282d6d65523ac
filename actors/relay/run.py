"""Driving a relay: the Scheduler decides, the Builder and Verifier do the turns.

`drive_relay` asks the scheduler what comes next (`next_action`), runs the Builder or the
Verifier on the folded state, and hands their result back as a command keyed by the turn
(`built:N`, `verified:N`), so a command retried after a crash appends nothing twice. It is
resumable: a restarted driver loads the scheduler's stream and continues where the log
ends, and the effects already recorded in the builder's and verifier's streams are served
from there (actors.relay.recording).

The Builder and the Verifier are anything with their `build` / `verify`: the plain objects
called in this process with their effects, or proxies of their Ray actors
(actors.relay.actor), which hold their own effects and are passed None here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from actors.relay.roadmap import RoadmapItem
from actors.relay.scheduler import BuilderFinished, PlanRoadmap, RelayState, VerifierFinished, next_action
from actors.relay.workspace import fold_workspace
from actors.runtime.shell import ActorShell
from events.base import Event
from actors.relay.events import RelayBudget, WorkspaceChanged

PLAN_KEY = "plan"


class TurnBuilder(Protocol):
    """A Builder (actors.relay.builder), or a proxy of one on another actor."""

    def build(self, state: RelayState, effects: Any) -> BuilderFinished: ...


class TurnVerifier(Protocol):
    """A Verifier (actors.relay.verifier), or a proxy of one on another actor."""

    def verify(self, state: RelayState, effects: Any, before: Mapping[str, str] | None = None) -> VerifierFinished: ...


def plan_relay(
    shell: ActorShell[RelayState],
    task: str,
    items: list[RoadmapItem],
    *,
    max_retries: int = 3,
    budget: RelayBudget | None = None,
    files: dict[str, str] | None = None,
    escalation_rollback: bool = True,
) -> list[Event]:
    """Record the roadmap (and the files the workspace held already); idempotent.
    `escalation_rollback` False only to replay a log planned before it existed."""
    command = PlanRoadmap(
        key=PLAN_KEY,
        task_id=shell.run_id or shell.stream_id,
        task=task,
        items=items,
        max_retries=max_retries,
        budget=budget or RelayBudget(),
        files=dict(files or {}),
        escalation_rollback=escalation_rollback,
    )
    return shell.handle(command)


def files_before_turn(shell: ActorShell[RelayState]) -> dict[str, str]:
    """The workspace before the current builder turn's changes: the diff the coherence
    check reads is from this to `state.files`."""
    turn = shell.state.last_turn_id
    events = shell.store.read_stream(shell.stream_id)
    return fold_workspace(e for e in events if not (isinstance(e, WorkspaceChanged) and e.turn_id == turn))


def drive_relay(
    scheduler_shell: ActorShell[RelayState],
    builder: TurnBuilder,
    verifier: TurnVerifier,
    builder_effects: Any,
    verifier_effects: Any,
    on_event: Callable[[Event], None] | None = None,
) -> RelayState:
    """Run turns until the relay is done or stopped; the final state."""
    shell = scheduler_shell
    while True:
        state = shell.state
        action = next_action(state)
        if action is None:
            return state
        if action == "build":
            command: Any = builder.build(state, builder_effects)
        else:
            command = verifier.verify(state, verifier_effects, before=files_before_turn(shell))
        appended = shell.handle(command, causation_id=shell.last_event_id)
        if not appended and next_action(shell.state) == action and shell.state == state:
            raise RuntimeError(f"the scheduler took nothing from {command.key}: the relay cannot move on")
        if on_event is not None:
            for e in appended:
                on_event(e)


def git_mirror(workspace: Any, commits: dict[str, str] | None = None) -> Callable[[Event], None]:
    """An `on_event` that keeps a GitWorkspace in step with the log: each WorkspaceChanged
    applied to its working tree, each CheckpointStored committed (the sha kept in
    `commits` by checkpoint id). The log stays the truth; the repository is its mirror."""
    from actors.relay.events import CheckpointStored

    def on_event(e: Event) -> None:
        if isinstance(e, WorkspaceChanged):
            workspace.apply(e.changes)
        elif isinstance(e, CheckpointStored):
            sha = workspace.commit(f"checkpoint {e.checkpoint_id}: {e.metadata.get('builder_summary', '')[:200]}")
            if commits is not None:
                commits[e.checkpoint_id] = sha

    return on_event
