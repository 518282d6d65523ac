"""Escalations reach a person (seed 004: "ESCALATE to human"): listed from the relays' logs
and resolved by a person, which the scheduler records as `EscalationResolved`.

An escalation is raised when a roadmap item still fails after its retries; the relay rolls
the failed attempt back to the last checkpoint and moves on (actors.relay.scheduler). What
the person does about it (writes the code by hand, changes the roadmap, accepts the loss)
is theirs; resolving records that they did, with their note and who they are, on the
relay's own stream, whether the relay still runs or ended. `chorus escalations [RUN]`,
`chorus resolve RUN ESCALATION_ID --note TEXT` and the HTTP API's recovery routes
(actors.relay.api) all call these.
"""

from __future__ import annotations

from typing import Any

from actors.relay.recording import scheduler_stream
from actors.relay.scheduler import ResolveEscalation, SchedulerBehaviour
from actors.relay.session import KIND
from actors.runtime.shell import ActorShell
from actors.relay.events import EscalationRaised, EscalationResolved, RoadmapPlanned


def escalations(client: Any, run_id: str | None = None, *, open_only: bool = False) -> list[dict[str, Any]]:
    """The escalations of relay `run_id` (every relay's when None), oldest first: each a
    dict of run_id, escalation_id, item (1-based), title, turn, defect_id, reason,
    rolled_back (paths), raised_at, resolved, resolution, resolved_by, resolved_at.
    UnknownRun for an unknown id, ValueError for a run that is not a relay."""
    if run_id is not None:
        run = client.run_state(run_id)
        if run.kind != KIND:
            raise ValueError(f"run {run_id} is not a relay (it is {run.kind or 'react'})")
        ids = [run_id]
    else:
        ids = [r["run_id"] for r in reversed(client.runs()) if r.get("kind") == KIND]
    found = [x for rid in ids for x in _of(client.store, rid)]
    return [x for x in found if not (open_only and x["resolved"])]


def resolve(client: Any, run_id: str, escalation_id: str, note: str = "", resolved_by: str = "") -> dict[str, Any]:
    """Record that a person dealt with `escalation_id` (once: resolving it again changes
    nothing) and return the escalation as `escalations` lists it. ValueError for an id the
    relay never raised."""
    run = client.run_state(run_id)
    if run.kind != KIND:
        raise ValueError(f"run {run_id} is not a relay (it is {run.kind or 'react'})")
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), client.store, run_id=run_id).load()
    command = ResolveEscalation(
        key=f"resolve:{escalation_id}", escalation_id=escalation_id, note=note.strip(), resolved_by=resolved_by
    )
    shell.handle(command, causation_id=shell.last_event_id)
    return next(x for x in _of(client.store, run_id) if x["escalation_id"] == escalation_id)


def _of(store: Any, run_id: str) -> list[dict[str, Any]]:
    events = store.read_stream(scheduler_stream(run_id))
    planned = next((e for e in events if isinstance(e, RoadmapPlanned)), None)
    titles = [str(i.get("title", "")) for i in planned.items] if planned and planned.items else []
    if planned and not titles:
        titles = [text.split("\n")[0] for text in planned.roadmap]
    resolved = {e.escalation_id: e for e in events if isinstance(e, EscalationResolved)}
    out = []
    for e in events:
        if not isinstance(e, EscalationRaised):
            continue
        index = int(e.metadata.get("roadmap_index", -1))
        done = resolved.get(e.escalation_id)
        out.append(
            {
                "run_id": run_id,
                "escalation_id": e.escalation_id,
                "item": index + 1,
                "title": titles[index] if 0 <= index < len(titles) else "",
                "turn": e.turn,
                "defect_id": e.defect_id,
                "reason": e.reason,
                "rolled_back": list(e.metadata.get("rolled_back", [])),
                "raised_at": e.timestamp.isoformat() if e.timestamp else None,
                "resolved": done is not None,
                "resolution": done.resolution if done else None,
                "resolved_by": done.resolved_by if done else None,
                "resolved_at": done.timestamp.isoformat() if done and done.timestamp else None,
            }
        )
    return out


def describe(x: dict[str, Any]) -> str:
    """One escalation in a line or two, for `chorus escalations`."""
    state = f"resolved by {x['resolved_by'] or 'someone'}: {x['resolution'] or '(no note)'}" if x["resolved"] else "OPEN"
    head = f"{x['escalation_id']}  [{state}]"
    body = f"  item {x['item']}: {x['title']} (turn {x['turn']}) — {x['reason']}"
    if x["rolled_back"]:
        body += f"; rolled back: {', '.join(x['rolled_back'])}"
    return f"{head}\n{body}"
