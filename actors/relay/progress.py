"""The relay's events as progress lines: turn, item, builder summary, files changed,
verdict, defects, escalations. '' hides an event a person watching progress need not see
(the workspace's changes: the builder's line names them); with `brief` (`chorus log`)
every event gets a line. None: not the relay's event."""

from __future__ import annotations

from events.base import Event
from actors.relay.events import (
    AppResubmitted,
    BatonPassed,
    CheckpointStored,
    DefectResolved,
    EscalationRaised,
    EscalationResolved,
    RelayStopped,
    RelayTurnStarted,
    RoadmapCompleted,
    RoadmapPlanned,
    TurnVerified,
    WorkspaceChanged,
)


def _first(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(event: Event, brief: bool = False) -> str | None:
    if isinstance(event, RoadmapPlanned):
        n = len(event.roadmap)
        return f"roadmap: {n} item{'s' if n != 1 else ''}, up to {event.max_retries} retries each"
    if isinstance(event, RelayTurnStarted):
        retry = f" (retry {event.retry_count})" if event.retry_count else ""
        return f"turn {event.turn_number}: item {event.roadmap_index + 1}{retry}: {_first(event.roadmap_chunk)}"
    if isinstance(event, BatonPassed):
        files = ", ".join(event.baton.files_changed) or "none"
        line = f"turn {event.turn_number}: builder: {_first(event.baton.builder_summary)} | files changed: {files}"
        hints = [h for h in event.baton.verification_hints if "did not apply" in h or "failed" in h]
        return line + (f" | {hints[0]}" if hints else "")
    if isinstance(event, TurnVerified):
        line = f"turn {event.turn_number}: verifier: {event.status}"
        capsule = event.defect_capsule
        if capsule is not None:
            line += f" | defect ({capsule.defect_type}, {capsule.severity}): {_first(capsule.description)}"
        return line
    if isinstance(event, CheckpointStored):
        return f"checkpoint stored: {event.checkpoint_id} ({len(event.files)} files)"
    if isinstance(event, EscalationRaised):
        back = event.metadata.get("rolled_back")
        rolled = f" (rolled back to the last checkpoint: {', '.join(back)})" if back else ""
        return f"ESCALATION {event.escalation_id}: {event.reason}{rolled}"
    if isinstance(event, EscalationResolved):
        by = f" by {event.resolved_by}" if event.resolved_by else ""
        return f"escalation {event.escalation_id} resolved{by}: {event.resolution}"
    if isinstance(event, DefectResolved):
        return f"defect resolved: {event.defect_id}"
    if isinstance(event, RoadmapCompleted):
        return f"roadmap done: {event.passed} passed, {event.escalated} escalated"
    if isinstance(event, RelayStopped):
        return f"relay stopped: {event.message}"
    if isinstance(event, AppResubmitted):
        from actors.relay.resubmit import describe_outcome

        return describe_outcome(event)
    if isinstance(event, WorkspaceChanged):
        paths = ", ".join(f"{c['path']}{' (deleted)' if c['kind'] == 'delete' else ''}" for c in event.changes)
        return f"workspace changed: {paths}" if brief else ""
    return None
