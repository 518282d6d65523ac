"""Runs: one row per run, from its lifecycle events (events/runs.py).

What `chorus runs` and `Client.runs()` list. Read from the log, that list costs a scan of
every lifecycle event ever written on each call; the view costs a short query, and
catching it up costs only the events appended since.

    runs  run_id TEXT PK, status (submitted | running | waiting | completed | failed), goal,
          kind, forked_from (`RUN@POSITION` of a fork, else NULL), submitted_at,
          ended_at (NULL until the run ends), waiting_for (while waiting: the signal's
          name, or "sleep"), wake_at (while waiting on a durable timer: when it is due),
          position (of the RunSubmitted)

RunSubmitted makes the row; submitted again under the same run id (the lifecycle stream
never allows it), the row starts over but keeps its place. RunStarted moves a submitted or waiting
run to running (an ended run stays ended); RunWaiting moves a started run to waiting, naming
what it waits for; RunCompleted and RunFailed end it, the
latest one deciding, with its time. Lifecycle events of a run never submitted are
ignored. Listing is newest first by submitted_at, runs submitted at the same instant in
log order: the order the scan of the log gave.

Timestamps are the events' (UTC ISO-8601 text, fixed width, so text order is time order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from events.store import EventStore, Recorded
from projections.columns import clean, timestamp_text
from projections.projection import Projection, register_projection
from projections.runner import caught_up
from projections.views import ViewCursor, ViewStore

STATUSES = ("submitted", "running", "waiting", "completed", "failed")
FIELDS = ("run_id", "status", "goal", "kind", "forked_from", "submitted_at", "ended_at", "waiting_for", "wake_at")

_COLUMNS = (*FIELDS, "position")
_UPSERT = (
    f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in FIELDS[1:])
)
_NEWEST = "submitted_at DESC, position"
_IN = 500  # run ids per `IN (...)` when a batch reads the rows it folds into


@register_projection
class RunsProjection(Projection):
    name = "runs"
    schema_version = 3  # v2: waiting, waiting_for, wake_at; v3: `agent` is `kind`
    types = ("RunSubmitted", "RunStarted", "RunWaiting", "RunCompleted", "RunFailed")
    tables = ("runs",)
    indexes = (("runs_newest", "runs", _NEWEST),)

    def create(self, c: ViewCursor) -> None:
        c.execute(
            "CREATE TABLE IF NOT EXISTS runs ("
            "run_id TEXT PRIMARY KEY, status TEXT NOT NULL, goal TEXT NOT NULL, kind TEXT NOT NULL, "
            "forked_from TEXT, submitted_at TEXT NOT NULL, ended_at TEXT, waiting_for TEXT, wake_at TEXT, "
            "position BIGINT NOT NULL)"
        )
        self.create_indexes(c)

    def apply(self, c: ViewCursor, recorded: Recorded) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        # The batch's runs are read in one query, folded in memory and written once.
        rows = _read(c, {clean(r.event.run_id) for r in records})
        dirty: dict[str, None] = {}  # run ids in order of first change
        for r in records:
            e: Any = r.event
            run_id = clean(e.run_id) or ""
            t = e.type_name
            row = rows.get(run_id)
            if t == "RunSubmitted":
                rows[run_id] = {
                    "run_id": run_id, "status": "submitted", "goal": clean(e.goal), "kind": clean(e.kind),
                    "forked_from": clean(e.forked_from), "submitted_at": timestamp_text(e.timestamp),
                    "ended_at": None, "waiting_for": None, "wake_at": None,
                    "position": r.position if row is None else row["position"],
                }  # fmt: skip
            elif row is None:
                continue  # a run never submitted
            elif t == "RunStarted":
                if row["status"] not in ("submitted", "waiting"):
                    continue
                row.update(status="running", waiting_for=None, wake_at=None)
            elif t == "RunWaiting":
                if row["status"] in ("completed", "failed"):
                    continue
                until = timestamp_text(e.until) if e.until is not None else None
                row.update(status="waiting", waiting_for=clean(e.waiting_for), wake_at=until)
            else:
                row["status"] = "completed" if t == "RunCompleted" else "failed"
                row.update(ended_at=timestamp_text(e.timestamp), waiting_for=None, wake_at=None)
            dirty[run_id] = None
        c.executemany(_UPSERT, [tuple(rows[k][col] for col in _COLUMNS) for k in dirty])


def _read(c: ViewCursor, run_ids: set[str | None]) -> dict[str, dict[str, Any]]:
    wanted = sorted(k for k in run_ids if k is not None)
    found: dict[str, dict[str, Any]] = {}
    for i in range(0, len(wanted), _IN):
        part = wanted[i : i + _IN]
        c.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id IN ({', '.join('?' * len(part))})", part
        )
        found.update((row["run_id"], row) for row in c.fetchall())
    return found


# -- reading the view ------------------------------------------------------------------------


class RunsView:
    """Queries over the runs view. Run the projection first (a runner's `run_once`), or
    `RunsView.open(store)`, which catches it up.

    Rows are dicts with the keys of `FIELDS`; times are timezone-aware UTC datetimes.
    """

    def __init__(self, views: ViewStore) -> None:
        self.views = views

    @classmethod
    def open(cls, store: EventStore, *, catch_up: bool = True) -> RunsView:
        return cls(caught_up(store, RunsProjection(), catch_up=catch_up))

    def list(
        self,
        limit: int | None = None,
        *,
        status: str | Iterable[str] | None = None,
        kind: str | None = None,
    ) -> list[dict[str, Any]]:
        """Runs, newest first: those in `status` (one or several) and of `kind`, at most
        `limit` (None: all)."""
        if limit is not None and limit < 1:
            return []
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            wanted = _statuses(status)
            if not wanted:
                return []
            where.append(f"status IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        if kind is not None:
            where.append("kind = ?")
            params.append(clean(kind))
        sql = f"SELECT {', '.join(FIELDS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {_NEWEST}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_run(row) for row in self.views.query(sql, params)]

    def get(self, run_id: str) -> dict[str, Any] | None:
        """One run by its id; None if the view holds no such run."""
        rows = self.views.query(f"SELECT {', '.join(FIELDS)} FROM runs WHERE run_id = ?", (clean(run_id),))
        return _run(rows[0]) if rows else None


def _statuses(status: str | Iterable[str]) -> list[str]:
    wanted = [s.lower() for s in ([status] if isinstance(status, str) else status)]
    for s in wanted:
        if s not in STATUSES:
            raise ValueError(f"unknown run status {s!r} (known: {', '.join(STATUSES)})")
    return wanted


def status_label(row: dict[str, Any]) -> str:
    """A row's status as `chorus runs` shows it: `waiting:NAME` names what a waiting run waits for."""
    return f"waiting:{row['waiting_for']}" if row["status"] == "waiting" and row.get("waiting_for") else row["status"]


def _run(row: dict[str, Any]) -> dict[str, Any]:
    for column in ("submitted_at", "ended_at", "wake_at"):
        if row[column] is not None:
            row[column] = datetime.fromisoformat(row[column])
    return row
