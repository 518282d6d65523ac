"""Forking a session at a cycle: a new lineage that shares the history up to that cycle.

The new session's streams begin with a copy of the original's events up to and
including cycle N's verdict (the world, the director, every synth and its recorded calls),
re-addressed to the new run, so `chorus replay` replays the shared cycles from the
fork's own log and `chorus diff` shows where the two lineages part. Stimuli and admin
patches in the shared history keep the ids the original gave them (made from its run id):
replay takes inputs' ids from the log, never re-derives them from the fork's. The
original is untouched; the fork then steps on its own (`chorus sim step NEW`). A snapshot
restore over HTTP is this too: a new lineage from the end of a cycle.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.run import RunLifecycle, Start, run_stream
from actors.runtime.shell import ActorShell
from actors.simulation.streams import director_stream
from events.base import Event
from actors.simulation.events import CycleCommitted, CycleRolledBack, SynthCreated, WorldCreated
from events.store import Recorded


def fork_point(records: list[Recorded], run_id: str, cycle: int) -> int:
    """The global position the fork copies up to: cycle `cycle`'s verdict (0: the start)."""
    ds = director_stream(run_id)
    verdicts = [r for r in records if r.event.stream_id == ds and isinstance(r.event, CycleCommitted | CycleRolledBack)]
    if cycle < 0 or cycle > len(verdicts):
        raise ValueError(f"session {run_id} has run {len(verdicts)} cycle(s); it cannot be forked at cycle {cycle}")
    if cycle > 0:
        return verdicts[cycle - 1].position
    return max(r.position for r in records if isinstance(r.event, WorldCreated | SynthCreated))


def fork_session(client: Any, run_id: str, cycle: int, new_run_id: str) -> str:
    records = [r for r in client.store.read_all(run_id=run_id)]
    state = client.run_state(run_id)
    upto = fork_point(records, run_id, cycle)
    old, new = f"sim:{run_id}:", f"sim:{new_run_id}:"
    batches: dict[str, list[Event]] = {}
    for r in records:
        e = r.event
        if r.position > upto or not e.stream_id.startswith(old):
            continue
        batches.setdefault(new + e.stream_id[len(old):], []).append(
            type(e).model_validate({**e.payload(), "timestamp": e.timestamp, "run_id": new_run_id})
        )
    params = {**state.params, "forked_at_cycle": cycle}
    client.begin_run(new_run_id, goal=state.goal, kind=state.kind, params=params, forked_from=run_id)
    client.store.append_many([(stream, events, 0) for stream, events in batches.items()])
    run = ActorShell(RunLifecycle(), run_stream(new_run_id), client.store, run_id=new_run_id).load()
    run.handle(Start(key="start", lead_stream=director_stream(new_run_id)))
    return new_run_id
