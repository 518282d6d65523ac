"""Relay checkpoints: seed 004's agent_turns, checkpoints, defects and escalations tables,
filled from the relay's events (actors/relay/events.py).

    RelayTurnStarted    a builder row, status pending, content empty
    BatonPassed         the builder row's content, files_changed and summary (created if missing)
    TurnVerified        the builder row passed / failed; a verifier row; a defect row from the
                        defect capsule (a capsule whose defect_id is known again reopens that
                        row and moves it to the newly verified turn)
    CheckpointStored    a checkpoint row
    DefectResolved      defects.resolved = 1
    EscalationRaised    an escalation row
    EscalationResolved  escalations.resolved = 1

Tables (the seed's columns; its `vector` columns are left to the Qdrant view, which embeds
`content`). `metadata` is the event's own metadata plus the named fields that have no
column of their own (those win on a clash). Status is the seed's passed / failed /
pending: a RETRY verdict is `failed`, with `verdict` "RETRY" in metadata. Booleans are
INTEGER 0/1; JSON goes in TEXT; timestamps are the events' (UTC ISO-8601 text) when the
row was made. Beyond the seed, every table has `position` (of the event that made the
row: the order of reading) and checkpoints and defects carry `task_id`.

    agent_turns   turn_id PK, agent_role (builder | verifier), content, task_id,
                  turn_number, status, timestamp, files_changed, roadmap_chunk, metadata
    checkpoints   checkpoint_id PK, turn_id, checkpoint_type, timestamp, files, metadata
    defects       defect_id PK, turn_id (the builder turn it is in), defect_type, severity,
                  description, resolved, timestamp, metadata (with suggested_fix)
    escalations   escalation_id PK, task_id, turn, defect_id, timestamp, resolved, metadata
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import actors.relay.events  # noqa: F401  (registers the event types this view reads)
from events.store import EventStore, Recorded
from projections.columns import clean, json_column, timestamp_text
from projections.projection import Projection, register_projection
from projections.runner import caught_up
from projections.views import ViewCursor, ViewStore

_TURN_COLUMNS = (
    "turn_id", "agent_role", "content", "task_id", "turn_number", "status", "timestamp",
    "files_changed", "roadmap_chunk", "metadata", "position",
)
_CHECKPOINT_COLUMNS = (
    "checkpoint_id", "turn_id", "checkpoint_type", "timestamp", "files", "metadata",
    "task_id", "position",
)
_DEFECT_COLUMNS = (
    "defect_id", "turn_id", "defect_type", "severity", "description", "resolved",
    "timestamp", "metadata", "task_id", "position",
)
_ESCALATION_COLUMNS = (
    "escalation_id", "task_id", "turn", "defect_id", "timestamp", "resolved", "metadata",
    "position",
)


def _insert(table: str, columns: tuple[str, ...], *, replace: bool = False) -> str:
    key = columns[0]
    conflict = (
        f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns[1:])}"
        if replace
        else "DO NOTHING"
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({key}) {conflict}"
    )


_PUT_TURN = _insert("agent_turns", _TURN_COLUMNS, replace=True)
_ADD_CHECKPOINT = _insert("checkpoints", _CHECKPOINT_COLUMNS)
_PUT_DEFECT = _insert("defects", _DEFECT_COLUMNS, replace=True)
_ADD_ESCALATION = _insert("escalations", _ESCALATION_COLUMNS)


_HANDLERS = {
    "RelayTurnStarted": "_turn_started",
    "BatonPassed": "_baton_passed",
    "TurnVerified": "_turn_verified",
    "CheckpointStored": "_checkpoint_stored",
    "DefectResolved": "_defect_resolved",
    "EscalationRaised": "_escalation_raised",
    "EscalationResolved": "_escalation_resolved",
}


@register_projection
class RelayCheckpointsProjection(Projection):
    name = "relay"
    schema_version = 1
    types = tuple(_HANDLERS)
    tables = ("agent_turns", "checkpoints", "defects", "escalations")

    def create(self, c: ViewCursor) -> None:
        c.execute(
            "CREATE TABLE IF NOT EXISTS agent_turns ("
            "turn_id TEXT PRIMARY KEY, agent_role TEXT NOT NULL, content TEXT NOT NULL, "
            "task_id TEXT NOT NULL, turn_number INTEGER NOT NULL, status TEXT NOT NULL, "
            "timestamp TEXT NOT NULL, files_changed TEXT NOT NULL, roadmap_chunk TEXT NOT NULL, "
            "metadata TEXT NOT NULL, position BIGINT NOT NULL)"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS checkpoints ("
            "checkpoint_id TEXT PRIMARY KEY, turn_id TEXT NOT NULL, checkpoint_type TEXT NOT NULL, "
            "timestamp TEXT NOT NULL, files TEXT NOT NULL, metadata TEXT NOT NULL, "
            "task_id TEXT NOT NULL, position BIGINT NOT NULL)"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS defects ("
            "defect_id TEXT PRIMARY KEY, turn_id TEXT NOT NULL, defect_type TEXT NOT NULL, "
            "severity TEXT NOT NULL, description TEXT NOT NULL, resolved INTEGER NOT NULL, "
            "timestamp TEXT NOT NULL, metadata TEXT NOT NULL, task_id TEXT NOT NULL, "
            "position BIGINT NOT NULL)"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS escalations ("
            "escalation_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, turn INTEGER NOT NULL, "
            "defect_id TEXT, timestamp TEXT NOT NULL, resolved INTEGER NOT NULL, "
            "metadata TEXT NOT NULL, position BIGINT NOT NULL)"
        )
        for name, table, columns in (
            ("agent_turns_task", "agent_turns", "task_id, position"),
            ("checkpoints_task", "checkpoints", "task_id, position"),
            ("defects_task", "defects", "task_id, position"),
            ("escalations_task", "escalations", "task_id, position"),
        ):
            c.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({columns})")

    def apply(self, c: ViewCursor, recorded: Recorded) -> None:
        e: Any = recorded.event
        getattr(self, _HANDLERS[e.type_name])(c, e, recorded.position)

    # -- turns -------------------------------------------------------------------------------

    def _turn_started(self, c: ViewCursor, e: Any, position: int) -> None:
        turn = _turn(c, e.turn_id) or _new_turn(e, position, "builder")
        turn["roadmap_chunk"] = clean(e.roadmap_chunk)
        turn["metadata"].update(
            roadmap_index=e.roadmap_index, retry_count=e.retry_count, defect_id=e.defect_id
        )
        _put_turn(c, turn)

    def _baton_passed(self, c: ViewCursor, e: Any, position: int) -> None:
        baton = e.baton
        turn = _turn(c, e.turn_id) or _new_turn(e, position, "builder")
        turn["content"] = clean(baton.response_text)
        turn["files_changed"] = list(baton.files_changed)
        turn["metadata"].update(baton.metadata)
        turn["metadata"].update(
            builder_summary=baton.builder_summary, verification_hints=list(baton.verification_hints)
        )
        _put_turn(c, turn)

    def _turn_verified(self, c: ViewCursor, e: Any, position: int) -> None:
        status = "passed" if e.status == "PASSED" else "failed"
        capsule = e.defect_capsule
        defect_id = None if capsule is None else capsule.defect_id
        built = _turn(c, e.verified_turn_id)
        if built is not None:
            built["status"] = status
            built["metadata"].update(verdict=e.status, verified_by=e.turn_id, defect_id=defect_id)
            _put_turn(c, built)
        verifier = _new_turn(e, position, "verifier")
        verifier.update(
            content=clean(e.report),
            status=status,
            files_changed=[] if built is None else built["files_changed"],
            roadmap_chunk="" if built is None else built["roadmap_chunk"],
        )
        verifier["metadata"].update(
            verdict=e.status,
            verified_turn_id=e.verified_turn_id,
            checks=[check.model_dump(mode="json") for check in e.checks],
            defect_id=defect_id,
        )
        _put_turn(c, verifier)
        if capsule is not None:
            self._defect(c, e, capsule, position)

    # -- defects, checkpoints, escalations ---------------------------------------------------

    def _defect(self, c: ViewCursor, e: Any, capsule: Any, position: int) -> None:
        known = c.execute(
            "SELECT timestamp, position FROM defects WHERE defect_id = ?", (clean(capsule.defect_id),)
        ).fetchone()
        metadata = {**capsule.metadata, "suggested_fix": capsule.suggested_fix, "found_by": e.turn_id}
        c.execute(
            _PUT_DEFECT,
            (
                clean(capsule.defect_id), clean(e.verified_turn_id), capsule.defect_type,
                capsule.severity, clean(capsule.description), 0,
                timestamp_text(e.timestamp) if known is None else known["timestamp"],
                json_column(metadata), clean(e.task_id), position if known is None else known["position"],
            ),
        )

    def _defect_resolved(self, c: ViewCursor, e: Any, position: int) -> None:
        row = c.execute(
            "SELECT metadata FROM defects WHERE defect_id = ?", (clean(e.defect_id),)
        ).fetchone()
        if row is None:
            return
        metadata = {**json.loads(row["metadata"]), "resolved_by": e.turn_id}
        c.execute(
            "UPDATE defects SET resolved = 1, metadata = ? WHERE defect_id = ?",
            (json_column(metadata), clean(e.defect_id)),
        )

    def _checkpoint_stored(self, c: ViewCursor, e: Any, position: int) -> None:
        c.execute(
            _ADD_CHECKPOINT,
            (
                clean(e.checkpoint_id), clean(e.turn_id), clean(e.checkpoint_type),
                timestamp_text(e.timestamp), json_column(list(e.files)), json_column(e.metadata),
                clean(e.task_id), position,
            ),
        )

    def _escalation_raised(self, c: ViewCursor, e: Any, position: int) -> None:
        c.execute(
            _ADD_ESCALATION,
            (
                clean(e.escalation_id), clean(e.task_id), e.turn, clean(e.defect_id),
                timestamp_text(e.timestamp), 0, json_column({**e.metadata, "reason": e.reason}), position,
            ),
        )

    def _escalation_resolved(self, c: ViewCursor, e: Any, position: int) -> None:
        row = c.execute(
            "SELECT metadata FROM escalations WHERE escalation_id = ?", (clean(e.escalation_id),)
        ).fetchone()
        if row is None:
            return
        metadata = {**json.loads(row["metadata"]), "resolution": e.resolution}
        c.execute(
            "UPDATE escalations SET resolved = 1, metadata = ? WHERE escalation_id = ?",
            (json_column(metadata), clean(e.escalation_id)),
        )


def _turn(c: ViewCursor, turn_id: str) -> dict[str, Any] | None:
    row = c.execute(
        f"SELECT {', '.join(_TURN_COLUMNS)} FROM agent_turns WHERE turn_id = ?", (clean(turn_id),)
    ).fetchone()
    if row is not None:
        row["files_changed"] = json.loads(row["files_changed"])
        row["metadata"] = json.loads(row["metadata"])
    return row


def _new_turn(e: Any, position: int, role: str) -> dict[str, Any]:
    return {
        "turn_id": clean(e.turn_id), "agent_role": role, "content": "", "task_id": clean(e.task_id),
        "turn_number": e.turn_number, "status": "pending", "timestamp": timestamp_text(e.timestamp),
        "files_changed": [], "roadmap_chunk": "", "metadata": {}, "position": position,
    }


def _put_turn(c: ViewCursor, turn: dict[str, Any]) -> None:
    row = {**turn, "files_changed": json_column(turn["files_changed"]), "metadata": json_column(turn["metadata"])}
    c.execute(_PUT_TURN, tuple(row[k] for k in _TURN_COLUMNS))


# -- reading the view ------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentTurn:
    turn_id: str
    agent_role: str  # builder | verifier
    content: str
    task_id: str
    turn_number: int
    status: str  # pending | passed | failed
    timestamp: datetime
    files_changed: list[str]
    roadmap_chunk: str
    metadata: dict[str, Any]
    position: int


@dataclass(frozen=True)
class Checkpoint:
    checkpoint_id: str
    turn_id: str
    checkpoint_type: str
    timestamp: datetime
    files: list[str]
    metadata: dict[str, Any]
    task_id: str
    position: int


@dataclass(frozen=True)
class Defect:
    defect_id: str
    turn_id: str
    defect_type: str  # lint | test | coherence | probe
    severity: str  # critical | high | medium | low
    description: str
    resolved: bool
    timestamp: datetime
    metadata: dict[str, Any]  # includes suggested_fix
    task_id: str
    position: int


@dataclass(frozen=True)
class Escalation:
    escalation_id: str
    task_id: str
    turn: int
    defect_id: str | None
    timestamp: datetime
    resolved: bool
    metadata: dict[str, Any]
    position: int


class RelayCheckpoints:
    """Queries over the relay views, each in log order. Run the projection first (a
    runner's `run_once`), or `RelayCheckpoints.open(store)`, which catches it up."""

    def __init__(self, views: ViewStore) -> None:
        self.views = views

    @classmethod
    def open(cls, store: EventStore, *, catch_up: bool = True) -> RelayCheckpoints:
        return cls(caught_up(store, RelayCheckpointsProjection(), catch_up=catch_up))

    def turns(
        self, task_id: str | None = None, *, role: str | None = None, status: str | None = None
    ) -> list[AgentTurn]:
        rows = self._rows("agent_turns", task_id=task_id, agent_role=role, status=status)
        return [AgentTurn(**_parsed(r, "files_changed", "metadata")) for r in rows]

    def checkpoints(self, task_id: str | None = None) -> list[Checkpoint]:
        return [Checkpoint(**_parsed(r, "files", "metadata")) for r in self._rows("checkpoints", task_id=task_id)]

    def latest_checkpoint(self, task_id: str) -> Checkpoint | None:
        """Where a relay resumes: the task's last stored checkpoint."""
        found = self.checkpoints(task_id)
        return found[-1] if found else None

    def defects(
        self, task_id: str | None = None, *, resolved: bool | None = None, turn_id: str | None = None
    ) -> list[Defect]:
        rows = self._rows("defects", task_id=task_id, resolved=_flag(resolved), turn_id=turn_id)
        return [Defect(**_parsed(r, "metadata", flag="resolved")) for r in rows]

    def escalations(self, task_id: str | None = None, *, resolved: bool | None = None) -> list[Escalation]:
        rows = self._rows("escalations", task_id=task_id, resolved=_flag(resolved))
        return [Escalation(**_parsed(r, "metadata", flag="resolved")) for r in rows]

    def _rows(self, table: str, **equal: Any) -> list[dict[str, Any]]:
        wanted = {k: v for k, v in equal.items() if v is not None}
        where = " AND ".join(f"{k} = ?" for k in wanted)
        return self.views.query(
            f"SELECT * FROM {table}{' WHERE ' + where if where else ''} ORDER BY position",
            list(wanted.values()),
        )


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _parsed(row: dict[str, Any], *json_columns: str, flag: str | None = None) -> dict[str, Any]:
    out = dict(row)
    for column in json_columns:
        out[column] = json.loads(out[column])
    if flag is not None:
        out[flag] = bool(out[flag])
    out["timestamp"] = datetime.fromisoformat(out["timestamp"])
    out["position"] = int(out["position"])
    return out
