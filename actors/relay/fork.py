"""Forking a relay at a builder turn: a new lineage with its own workspace, continued live.

`chorus fork RUN --at TURN` counts in builder turns, the "turn N" of the relay's progress
(`RelayTurnStarted.turn_number`), as a simulation's fork counts in cycles. The new run's
streams begin with a copy of the original's up to and including turn TURN's verification
and what the scheduler decided with it (the checkpoint or the escalation, and the next
turn), with the relay's other streams up to that point: the Builder's and Verifier's
recorded calls, the Orchestrator's plan, the resubmit hook's outcomes (so a hook that ran
for a copied checkpoint does not run again). TURN 0 copies the plan alone: the fork redoes
every turn. A fork
needs a turn still to run: the turn that finished the relay (or stopped it) is refused.

The copy is re-addressed to the new run: its streams, its `run_id`, and the ids the
scheduler derives from the run (task id, turn, checkpoint, defect and escalation ids,
the turn named in a check's arguments), so the views, keyed by those ids, keep the two
lineages apart, and the fork's own `chorus replay` decides the same ids. Model calls are
copied as recorded (their prompts name no run: their hashes stay true). Timestamps move
by one offset so the last copied event is the fork's time: the wall-time budget counts
the original's time up to TURN plus the fork's own, not the time in between.

The fork gets its own workspace, a fresh git repository (by default a sibling of the
original's, named after the new run: `<workspace>-<new run id>`) holding the files
rebuilt from the copied log, committed once. The original run and its workspace are
untouched. Bad input (an unknown run, a run that is not a relay, a turn out of range, a
workspace folder in use) is a ValueError before anything is written.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from actors.relay.git_workspace import GitWorkspace, relay_branch
from actors.relay.recording import scheduler_stream
from actors.relay.scheduler import RelayState, SchedulerBehaviour
from actors.relay.session import KIND
from actors.runtime.client import new_run_id
from actors.runtime.run import RunLifecycle, Start, UnknownRun, run_stream
from actors.runtime.shell import ActorShell, rebuild
from events.base import Event
from actors.relay.events import RoadmapPlanned, TurnVerified
from events.store import Recorded

# Copied as recorded: a model call's request and reply name no run, and its hash stays true.
_AS_RECORDED = frozenset({"LlmRequested", "LlmCompleted", "LlmFailed"})


def fork_point(records: list[Recorded], run_id: str, turn: int) -> int:
    """The global position the fork copies up to: the last event of the scheduler's
    command that recorded turn `turn`'s verification (0: of the plan). ValueError for a
    turn the relay has not verified."""
    lead = sorted(
        (r for r in records if r.event.stream_id == scheduler_stream(run_id)),
        key=lambda r: r.event.version,
    )
    if not lead or not isinstance(lead[0].event, RoadmapPlanned):
        raise ValueError(f"relay {run_id} has no roadmap yet: there is nothing to fork")
    verified = [r for r in lead if isinstance(r.event, TurnVerified)]
    marks = {r.event.turn_number: r for r in verified}  # type: ignore[attr-defined]
    mark = lead[0] if turn == 0 else marks.get(turn)
    if mark is None:
        raise ValueError(
            f"relay {run_id} has verified {len(verified)} builder turn(s); "
            f"fork it at a turn from 0 to {len(verified)}, not {turn}"
        )
    end = lead.index(mark)
    command = mark.event.command_id
    while (
        command is not None
        and end + 1 < len(lead)
        and lead[end + 1].event.command_id == command
    ):
        end += 1
    return lead[end].position


def readdress(value: Any, old: str, new: str) -> Any:
    """`value` with every id derived from run `old` (the id itself, or `old:...`) renamed
    to run `new`'s, in strings, lists and dicts at any depth."""
    if isinstance(value, str):
        if value == old or value.startswith(old + ":"):
            return new + value[len(old) :]
        return value
    if isinstance(value, dict):
        return {k: readdress(v, old, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [readdress(v, old, new) for v in value]
    return value


def copy_history(
    records: list[Recorded], run_id: str, upto: int, new_id: str
) -> dict[str, list[Event]]:
    """The original's relay streams (`relay:<run>` and every `relay:<run>:...`: the
    scheduler's, the Builder's, the Verifier's, the Orchestrator's, the resubmit hook's) up
    to position `upto`, re-addressed to run `new_id`: new stream id -> events, in version
    order."""
    lead = scheduler_stream(run_id)
    kept = sorted(
        (
            r
            for r in records
            if r.position <= upto
            and (r.event.stream_id == lead or r.event.stream_id.startswith(lead + ":"))
        ),
        key=lambda r: r.position,
    )
    if not kept:
        return {}
    shift = datetime.now(UTC) - max(r.event.timestamp for r in kept)
    batches: dict[str, list[Event]] = {}
    for r in kept:
        e = r.event
        payload = (
            e.payload()
            if e.type_name in _AS_RECORDED
            else readdress(e.payload(), run_id, new_id)
        )
        copy = type(e).model_validate(
            {
                **payload,
                "timestamp": e.timestamp + shift,
                "run_id": new_id,
                "command_id": e.command_id,
            }
        )
        batches.setdefault(
            scheduler_stream(new_id) + e.stream_id[len(lead) :], []
        ).append(copy)
    return batches  # each stream in version order: a stream's positions rise with it


def fork_workspace(
    original: str | Path | None, new_id: str, workspace: str | Path | None
) -> Path:
    """The fork's workspace folder: `workspace`, or `<original>-<new_id>` beside the
    original's. ValueError if it is a file or a folder that holds anything."""
    if workspace is None:
        if not original:
            raise ValueError(
                "the relay's run records no workspace: give the fork one (workspace=DIR)"
            )
        base = Path(original)
        workspace = base.parent / f"{base.name}-{new_id}"
    folder = Path(workspace).expanduser().resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(
            f"the fork's workspace {str(folder)!r} is in use: give an empty or new folder"
        )
    return folder


def fork_relay(
    client: Any,
    run_id: str,
    turn: int,
    *,
    new_id: str | None = None,
    workspace: str | Path | None = None,
    llm_params: dict[str, Any] | None = None,
) -> str:
    """Record a new relay run forked from `run_id` at builder turn `turn` and build its
    workspace; returns its id. Serve it with `actors.relay.session.serve_relay`."""
    original = client.run_state(run_id)  # UnknownRun for an unknown id
    if original.kind != KIND:
        raise ValueError(
            f"run {run_id} is not a relay (it is {original.kind or 'react'})"
        )
    records = list(client.store.read_all(run_id=run_id))
    upto = fork_point(records, run_id, turn)
    new_id = new_id or new_run_id()
    if _exists(client, new_id):
        raise ValueError(f"run {new_id} exists already")
    batches = copy_history(records, run_id, upto, new_id)
    state = rebuild(SchedulerBehaviour(), batches[scheduler_stream(new_id)])
    _continues(state, run_id, turn)
    folder = fork_workspace(original.params.get("workspace"), new_id, workspace)

    made = not folder.exists()
    try:
        git = GitWorkspace(folder).init(relay_branch(new_id))
        git.write(state.files)
        git.commit(f"relay {new_id}: forked from relay {run_id} at turn {turn}")
    except (OSError, RuntimeError) as e:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
        raise ValueError(
            f"the fork's workspace {str(folder)!r} could not be made: {e}"
        ) from None

    params = {
        **original.params,
        "workspace": str(folder),
        "forked_at_turn": turn,
        "llm_params": {**original.params.get("llm_params", {}), **(llm_params or {})},
    }
    client.begin_run(
        new_id,
        goal=original.goal,
        kind=KIND,
        params=params,
        budget=original.budget,
        forked_from=run_id,
    )
    client.store.append_many(
        [(stream, events, 0) for stream, events in batches.items()]
    )
    lifecycle = ActorShell(
        RunLifecycle(), run_stream(new_id), client.store, run_id=new_id
    ).load()
    lifecycle.handle(Start(key="start", lead_stream=scheduler_stream(new_id)))
    return new_id


def _exists(client: Any, run_id: str) -> bool:
    try:
        client.run_state(run_id)
    except UnknownRun:
        return False
    return True


def _continues(state: RelayState, run_id: str, turn: int) -> None:
    """ValueError unless the copied history leaves a builder turn to run."""
    if state.status == "building":
        return
    if state.status == "done":
        raise ValueError(
            f"relay {run_id} finished its roadmap with turn {turn}: fork it at an earlier turn"
        )
    why = f" ({state.stop_reason})" if state.stop_reason else ""
    raise ValueError(
        f"relay {run_id} stopped after turn {turn}{why}: fork it at an earlier turn"
    )
