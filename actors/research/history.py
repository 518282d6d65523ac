"""Research history: seed 000's `research_history` table, one row per research run.

A row starts at ResearchRequested and follows the run's lifecycle events
(actors/research/events.py): PENDING → INDEXING → RUNNING → COMPLETED | FAILED, the latest
one deciding (a resumed run may leave FAILED again). `log_stream` is the JSON array of
the run's agent steps, from the agent events that carry its run_id, in log order:

    StepDecided    a step {thought, action, args, observation: null} ...
    ToolReturned   ... whose observation (and ok) the actor's next tool result fills in
    StepRejected   a step with the rejection's observation and `rejected` (the reason)
    AnswerGiven    a step with action "answer", args {"answer": ...}

Each step also names its `actor` (stream), `iteration` and `position` (of the step's
event, to find it in the audit trail). Agent events of runs that are not research runs
are ignored, and so are lifecycle events of a run never requested.

    research_history  id INTEGER PK (1, 2, ... in order of ResearchRequested in the log:
                      seed 000's autoincrement, reproduced by every rebuild),
                      run_id TEXT UNIQUE (the key the events carry), objective, repo_url,
                      status, log_stream (JSON), final_report, created_at, updated_at,
                      and beyond the seed: error (ErrorInfo JSON of the last failure,
                      cleared when the run moves on), indexed_files, indexed_chunks

Timestamps are the events' (UTC ISO-8601 text, fixed width, so text order is time
order): created_at of ResearchRequested, updated_at of the latest event that changed the row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import actors.research.events  # noqa: F401  (registers the event types this view reads)
from events.errors import ErrorInfo
from events.store import EventStore, Recorded
from projections.columns import clean, json_column, timestamp_text
from projections.projection import Projection, register_projection
from projections.runner import caught_up
from projections.views import ViewCursor, ViewStore

STATUSES = ("PENDING", "INDEXING", "RUNNING", "COMPLETED", "FAILED")

_LIFECYCLE = (
    "ResearchRequested",
    "IndexingStarted",
    "IndexingCompleted",
    "ResearchStarted",
    "ReportWritten",
    "ResearchFailed",
)
_STEPS = ("StepDecided", "StepRejected", "ToolReturned", "AnswerGiven")
_COLUMNS = (
    "id", "run_id", "objective", "repo_url", "status", "log_stream", "final_report",
    "created_at", "updated_at", "error", "indexed_files", "indexed_chunks",
)
_INSERT = (
    f"INSERT INTO research_history ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_COLUMNS))})"
)
_UPDATE = (
    f"UPDATE research_history SET {', '.join(f'{c} = ?' for c in _COLUMNS[2:])} WHERE id = ?"
)


@register_projection
class ResearchHistoryProjection(Projection):
    name = "research"
    schema_version = 1
    types = _LIFECYCLE + _STEPS
    tables = ("research_history",)

    def create(self, c: ViewCursor) -> None:
        c.execute(
            "CREATE TABLE IF NOT EXISTS research_history ("
            "id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, objective TEXT NOT NULL, "
            "repo_url TEXT, status TEXT NOT NULL, log_stream TEXT NOT NULL, final_report TEXT, "
            "created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT, "
            "indexed_files INTEGER, indexed_chunks INTEGER)"
        )
        c.execute(
            "CREATE INDEX IF NOT EXISTS research_history_status ON research_history (status, id)"
        )

    def apply(self, c: ViewCursor, recorded: Recorded) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        # Each run touched in the batch is read once, folded in memory and written once:
        # a long log_stream is not rewritten for every step.
        batch = _Batch(c)
        for r in records:
            e: Any = r.event
            t = e.type_name
            if t == "ResearchRequested":
                batch.request(r)
                continue
            row = batch.row(e.run_id)
            if row is None:
                continue  # not a research run (or one whose request is not in the log)
            if t in _LIFECYCLE:
                _lifecycle(row, e)
            elif not _step(row, r):
                continue
            row["updated_at"] = timestamp_text(e.timestamp)
            batch.dirty.add(e.run_id)
        batch.write()


class _Batch:
    """Rows of the runs one batch touches, read on first use and written at the end."""

    def __init__(self, c: ViewCursor) -> None:
        self.c = c
        self.rows: dict[str, dict[str, Any] | None] = {}
        self.new: set[str] = set()
        self.dirty: set[str] = set()
        self.next_id: int | None = None

    def row(self, run_id: str) -> dict[str, Any] | None:
        if run_id not in self.rows:
            found = self.c.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM research_history WHERE run_id = ?",
                (clean(run_id),),
            ).fetchone()
            if found is not None:
                found["log_stream"] = json.loads(found["log_stream"])
            self.rows[run_id] = found
        return self.rows[run_id]

    def request(self, r: Recorded) -> None:
        e: Any = r.event
        if self.row(e.run_id) is not None:
            return  # asked again under the same run id: the first request stands
        if self.next_id is None:
            top = self.c.execute("SELECT MAX(id) AS top FROM research_history").fetchone()
            self.next_id = int((top or {}).get("top") or 0) + 1
        at = timestamp_text(e.timestamp)
        self.rows[e.run_id] = {
            "id": self.next_id, "run_id": clean(e.run_id), "objective": clean(e.objective),
            "repo_url": clean(e.repo_url), "status": "PENDING", "log_stream": [],
            "final_report": None, "created_at": at, "updated_at": at, "error": None,
            "indexed_files": None, "indexed_chunks": None,
        }
        self.next_id += 1
        self.new.add(e.run_id)
        self.dirty.add(e.run_id)

    def write(self) -> None:
        inserts, updates = [], []
        for run_id in sorted(self.dirty, key=lambda k: self.rows[k]["id"]):  # type: ignore[index]
            row = dict(self.rows[run_id])  # type: ignore[arg-type]
            row["log_stream"] = json_column(row["log_stream"])
            if run_id in self.new:
                inserts.append(tuple(row[k] for k in _COLUMNS))
            else:
                updates.append((*(row[k] for k in _COLUMNS[2:]), row["id"]))
        self.c.executemany(_INSERT, inserts)
        self.c.executemany(_UPDATE, updates)


def _lifecycle(row: dict[str, Any], e: Any) -> None:
    t = e.type_name
    if t == "IndexingStarted":
        row["status"] = "INDEXING"
        row["repo_url"] = row["repo_url"] or clean(e.repo_url)
    elif t == "IndexingCompleted":
        row.update(status="RUNNING", indexed_files=e.files, indexed_chunks=e.chunks)
    elif t == "ResearchStarted":
        row["status"] = "RUNNING"
    elif t == "ReportWritten":
        row.update(status="COMPLETED", final_report=clean(e.final_report))
    elif t == "ResearchFailed":
        row.update(status="FAILED", error=json_column(e.error.model_dump(mode="json")))
        return
    row["error"] = None  # the run moved on from its last failure


def _step(row: dict[str, Any], r: Recorded) -> bool:
    """Fold an agent event into the log stream; False when it changes nothing."""
    e: Any = r.event
    t = e.type_name
    steps: list[dict[str, Any]] = row["log_stream"]
    if t == "ToolReturned":
        # The result of the actor's latest decided step, if that still waits for one.
        for step in reversed(steps):
            if step["actor"] == e.stream_id:
                if step["rejected"] is None and step["action"] != "answer" and step["observation"] is None:
                    step.update(observation=e.output, ok=e.ok)
                    return True
                return False
        return False
    step = {
        "position": r.position, "actor": e.stream_id, "iteration": e.iteration,
        "thought": e.thought, "action": "answer", "args": {}, "observation": None,
        "ok": None, "rejected": None,
    }
    if t == "AnswerGiven":
        step["args"] = {"answer": e.answer}
    else:
        step.update(action=e.action, args=e.args)
        if t == "StepRejected":
            step.update(observation=e.observation, rejected=e.reason)
    steps.append(step)
    return True


# -- reading the view ------------------------------------------------------------------------


@dataclass(frozen=True)
class ResearchStep:
    """One Thought / Action / Observation of the log stream."""

    position: int  # of the step's event in the log
    actor: str  # the agent's stream
    iteration: int
    thought: str
    action: str  # a tool name, or "answer"
    args: dict[str, Any]
    observation: str | None  # None: the tool has not returned (yet), or the final answer
    ok: bool | None  # the tool's success; None when no tool ran
    rejected: str | None  # why the step was not run (unparseable, repeat, ...), else None


@dataclass(frozen=True)
class ResearchRecord:
    id: int
    run_id: str
    objective: str
    repo_url: str | None
    status: str  # PENDING | INDEXING | RUNNING | COMPLETED | FAILED
    log_stream: list[ResearchStep]
    final_report: str | None  # markdown
    created_at: datetime
    updated_at: datetime
    error: ErrorInfo | None
    indexed_files: int | None
    indexed_chunks: int | None


class ResearchHistory:
    """Queries over the research history view (what `chorus research --history` shows).
    Run the projection first (a runner's `run_once`), or `ResearchHistory.open(store)`."""

    def __init__(self, views: ViewStore) -> None:
        self.views = views

    @classmethod
    def open(cls, store: EventStore, *, catch_up: bool = True) -> ResearchHistory:
        return cls(caught_up(store, ResearchHistoryProjection(), catch_up=catch_up))

    def list(
        self,
        *,
        status: str | Iterable[str] | None = None,
        objective: str | None = None,
        limit: int | None = None,
    ) -> list[ResearchRecord]:
        """Research runs, newest first: those in `status` (one or several), whose objective
        contains `objective` (case-insensitive), at most `limit`."""
        if limit is not None and limit < 1:
            return []
        where, params = [], []
        if status is not None:
            wanted = _statuses(status)
            if not wanted:
                return []
            where.append(f"status IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM research_history"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if objective is None and limit is not None:
            sql += f" LIMIT {int(limit)}"
        records = []
        needle = None if objective is None else objective.casefold()
        for row in self.views.query(sql, params):
            if needle is not None and needle not in row["objective"].casefold():
                continue
            records.append(_record(row))
            if limit is not None and len(records) >= limit:
                break
        return records

    def get(self, key: str | int) -> ResearchRecord | None:
        """One research run by its run id (str) or its history id (int); None if unknown."""
        column = "id" if isinstance(key, int) and not isinstance(key, bool) else "run_id"
        rows = self.views.query(
            f"SELECT {', '.join(_COLUMNS)} FROM research_history WHERE {column} = ?", (key,)
        )
        return _record(rows[0]) if rows else None


def _statuses(status: str | Iterable[str]) -> list[str]:
    wanted = [status] if isinstance(status, str) else list(status)
    out = []
    for s in wanted:
        if s.upper() not in STATUSES:
            raise ValueError(f"unknown research status {s!r} (known: {', '.join(STATUSES)})")
        out.append(s.upper())
    return out


def _record(row: dict[str, Any]) -> ResearchRecord:
    return ResearchRecord(
        id=int(row["id"]),
        run_id=row["run_id"],
        objective=row["objective"],
        repo_url=row["repo_url"],
        status=row["status"],
        log_stream=[ResearchStep(**step) for step in json.loads(row["log_stream"])],
        final_report=row["final_report"],
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        error=None if row["error"] is None else ErrorInfo.model_validate_json(row["error"]),
        indexed_files=row["indexed_files"],
        indexed_chunks=row["indexed_chunks"],
    )
