"""Snapshots: the state of every actor at its latest event and at every `every`-th
version, as JSON files, maintained as a projection (rule 3) and readable across format
versions through a chain of migrations (seed 002: 0.1.0 -> 0.2.0 -> 0.3.0).

Files, under the store's data directory (see `snapshot_directory` for PostgreSQL):

    snapshots/<stream>/latest.json     the state at the stream's latest event
    snapshots/<stream>/<version>.json  the state at versions every, 2*every, ... (100)

`<stream>` is the stream id, percent-encoded where it is not a safe file name
(`agent:ID` stays `agent:ID`; `/` becomes `%2F`). A file holds one `ActorSnapshot`:

    {"schema_version": "0.3.0", "stream": "agent:ID", "version": 41, "position": 1234,
     "timestamp": "2026-01-01T00:00:05.123456+00:00", "actor": "react",
     "state_type": "AgentState", "state_schema_version": 1, "state": {...}}

Which behaviour folds a stream follows `projections.debug.behaviour_for`: a stream that
begins with RunSubmitted is a run (RunLifecycle); one that begins with AgentStarted is
the agent its run names (RunSubmitted.agent, default "react"), from the Registry. Other
streams have no snapshots.

Tables: `actor_heads` (each stream's latest state, or `actor` NULL for a stream with no
behaviour), `actor_snapshots` (the states at chosen versions) and `snapshot_outbox`
(files still to write). State is the state model's JSON.

Exactly once, for files. A file cannot join the database transaction, so the files are
written after it commits, from an outbox: the transaction that moves a state also
queues its file (`snapshot_outbox`), so a queued file is committed with its state or
not at all. `committed()` (which the runner calls after every commit, and when it opens
the view, to finish what a crash left) writes each queued file from the committed rows
(temporary file, fsync, rename) and only then removes it from the queue. A crash can
therefore repeat a write, never lose one; and a write is idempotent (the same rows
give the same bytes), so repeating it changes nothing. Writers take the projection's
lock, and a queue entry is removed only if it still names the version written, so a
slower writer can never leave an older latest.json behind a newer one. Files are never
ahead of the committed view, but may lag it by one flush; a rebuild rewrites them from
the start (latest.json goes back and forward again). Files of a dropped view are not
deleted (a rebuild gives the same files again).

Changing `every` changes the view: rebuild it (`chorus projections rebuild snapshots`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from eventsourcing.persistence import PersistenceError

from events.base import Event, State
from events.store import EventStore, StoreUnavailable
from projections.projection import Projection, StoredRecord, register_projection
from projections.views import ViewCursor, ViewStore

from projections.snapshot_files import (  # noqa: E402,F401  (the file format; re-exported)
    SNAPSHOT_SCHEMA,
    EVERY,
    SnapshotFormatError,
    ActorSnapshot,
    migration,
    migration_chain,
    migrate,
    read_snapshot,
    write_snapshot,
    stream_folder,
    snapshot_directory,
)


# -- behaviours ----------------------------------------------------------------------------

_BEHAVIOURS: dict[str, Any] = {}


def behaviour_named(actor: str | None) -> Any:
    """The behaviour an `actor` name stands for: "run", or an agent in the Registry."""
    if not actor:
        raise SnapshotFormatError("the snapshot does not say which actor it is of")
    behaviour = _BEHAVIOURS.get(actor)
    if behaviour is None:
        if actor == "run":
            from actors.runtime.run import RunLifecycle

            behaviour = RunLifecycle()
        else:
            from actors.runtime.registry import Registry

            behaviour = Registry.agent_class(actor)()
        _BEHAVIOURS[actor] = behaviour
    return behaviour


def actor_of(first: Event, run_agent: Callable[[str], str | None]) -> str | None:
    """The behaviour name for a stream whose first event is `first` (None: no snapshots).
    `run_agent(run_id)` is the agent its run asked for, if the run is known."""
    if first.type_name == "RunSubmitted":
        return "run"
    if first.type_name == "AgentStarted":
        return run_agent(first.run_id) or "react"
    return None


def _timestamp(t: datetime) -> str:
    if t.tzinfo is not timezone.utc:
        t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")


# -- the projection ------------------------------------------------------------------------

_HEAD_COLUMNS = (
    "stream_id", "actor", "version", "position", "timestamp", "state_type",
    "state_schema_version", "state",
)
_UPSERT_HEAD = (
    f"INSERT INTO actor_heads ({', '.join(_HEAD_COLUMNS)}) VALUES ({', '.join('?' * len(_HEAD_COLUMNS))}) "
    "ON CONFLICT (stream_id) DO UPDATE SET "
    + ", ".join(f"{k} = excluded.{k}" for k in _HEAD_COLUMNS[1:])
)
_SNAPSHOT_COLUMNS = _HEAD_COLUMNS
_QUEUE = (
    "INSERT INTO snapshot_outbox (stream_id, file, version) VALUES (?, ?, ?) "
    "ON CONFLICT (stream_id, file) DO UPDATE SET version = excluded.version"
)
_FLUSH_PAGE = 256


class _Head:
    """A stream's fold while a batch is applied: its state model parsed on first use."""

    __slots__ = ("stream_id", "actor", "behaviour", "version", "position", "timestamp", "state", "json")

    def __init__(self, stream_id: str, actor: str | None, behaviour: Any = None) -> None:
        self.stream_id = stream_id
        self.actor = actor
        self.behaviour = behaviour
        self.version = 0
        self.position = 0
        self.timestamp: str | None = None
        self.state: State | None = None
        self.json: str | None = None  # the stored state, until parsed

    def row(self) -> tuple[Any, ...]:
        if self.actor is None:
            return (self.stream_id, None, 0, 0, None, None, None, None)
        state = self.current()
        return (
            self.stream_id, self.actor, self.version, self.position, self.timestamp,
            type(state).__name__, type(state).schema_version, state.model_dump_json(),
        )

    def current(self) -> State:
        if self.state is None:
            self.state = self.behaviour.state_type.model_validate_json(self.json)
        return self.state


@register_projection
class SnapshotProjection(Projection):
    name = "snapshots"
    schema_version = 1
    types = ()  # every event: an actor's stream holds all kinds
    tables = ("actor_heads", "actor_snapshots", "snapshot_outbox")
    stored = True  # streams without a behaviour are never decoded

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, every: int = EVERY,
                 durable: bool = True) -> None:
        if every < 1:
            raise ValueError(f"every must be at least 1, not {every}")
        self.directory = None if directory is None else Path(directory)
        self.every = every
        self.durable = durable  # fsync each file before it leaves the outbox

    def folder(self, views: ViewStore) -> Path | None:
        return self.directory or snapshot_directory(views.url)

    def create(self, c: ViewCursor) -> None:
        columns = (
            "stream_id TEXT NOT NULL, actor TEXT, version BIGINT NOT NULL, position BIGINT NOT NULL, "
            "timestamp TEXT, state_type TEXT, state_schema_version INTEGER, state TEXT"
        )
        c.execute(f"CREATE TABLE IF NOT EXISTS actor_heads ({columns}, PRIMARY KEY (stream_id))")
        c.execute(f"CREATE TABLE IF NOT EXISTS actor_snapshots ({columns}, PRIMARY KEY (stream_id, version))")
        c.execute(
            "CREATE TABLE IF NOT EXISTS snapshot_outbox (stream_id TEXT NOT NULL, file TEXT NOT NULL, "
            "version BIGINT NOT NULL, PRIMARY KEY (stream_id, file))"
        )

    def apply(self, c: ViewCursor, recorded: Any) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[StoredRecord]) -> None:  # type: ignore[override]
        heads = self._load_heads(c, {r.stream_id for r in records})
        changed: dict[str, _Head] = {}
        kept: list[tuple[Any, ...]] = []
        for r in records:
            head = heads.get(r.stream_id)
            if head is None:
                head = heads[r.stream_id] = self._first(c, r, heads)
                changed[r.stream_id] = head
            if head.actor is None:
                continue
            event = r.event
            head.state = head.behaviour.evolve(head.current(), event)
            head.version, head.position = event.version, r.position
            head.timestamp = _timestamp(event.timestamp)
            changed[r.stream_id] = head
            if event.version % self.every == 0:
                kept.append(head.row())
        rows = [head.row() for head in changed.values()]
        c.executemany(_UPSERT_HEAD, rows)
        c.insert_rows("actor_snapshots", _SNAPSHOT_COLUMNS, kept)
        queue = [(row[0], "latest", row[2]) for row in rows if row[1] is not None]
        queue += [(row[0], str(row[2]), row[2]) for row in kept]
        # Sorted, as `committed` deletes them: two transactions touching the same queue
        # rows lock them in one order, so they cannot deadlock.
        c.executemany(_QUEUE, sorted(queue))

    def _load_heads(self, c: ViewCursor, streams: Iterable[str]) -> dict[str, _Head]:
        heads: dict[str, _Head] = {}
        wanted = sorted(streams)
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            found = c.execute(
                f"SELECT * FROM actor_heads WHERE stream_id IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall()
            for row in found:
                heads[row["stream_id"]] = self._head_of(row)
        return heads

    def _head_of(self, row: dict[str, Any]) -> _Head:
        actor = row["actor"]
        head = _Head(row["stream_id"], actor, behaviour_named(actor) if actor else None)
        if actor:
            head.version, head.position, head.timestamp = row["version"], row["position"], row["timestamp"]
            head.json = row["state"]
        return head

    def _first(self, c: ViewCursor, r: StoredRecord, heads: dict[str, _Head]) -> _Head:
        """The head of a stream seen for the first time (at version 1: every event is read)."""
        if r.version != 1 or r.type_name not in ("RunSubmitted", "AgentStarted"):
            return _Head(r.stream_id, None)

        def run_agent(run_id: str) -> str | None:
            stream = f"run:{run_id}"
            run = heads.get(stream)
            if run is None:
                row = c.execute("SELECT * FROM actor_heads WHERE stream_id = ?", (stream,)).fetchone()
                run = None if row is None else self._head_of(row)
            if run is None or run.actor != "run":
                return None
            return getattr(run.current(), "agent", None) or None

        actor = actor_of(r.event, run_agent)
        try:
            behaviour = behaviour_named(actor) if actor else None
        except LookupError:  # an agent no module registered: no snapshots for it
            return _Head(r.stream_id, None)
        head = _Head(r.stream_id, actor, behaviour)
        if behaviour is not None:
            head.state = behaviour.initial()
        return head

    # -- files, after the commit -----------------------------------------------------------

    def committed(self, views: ViewStore) -> None:
        """Write the queued files, a page per transaction, and dequeue them (see above)."""
        folder = self.folder(views)
        while True:
            with views.transaction() as c:
                views.lock(c, self.name)
                queued = c.execute(
                    f"SELECT stream_id, file, version FROM snapshot_outbox "
                    f"ORDER BY stream_id, file LIMIT {_FLUSH_PAGE}"
                ).fetchall()
                if not queued:
                    return
                if folder is not None:
                    for snapshot, name in self._documents(c, queued):
                        target = folder / stream_folder(snapshot.stream)
                        target.mkdir(parents=True, exist_ok=True)
                        write_snapshot(target / name, snapshot, durable=self.durable)
                c.executemany(
                    "DELETE FROM snapshot_outbox WHERE stream_id = ? AND file = ? AND version = ?",
                    sorted((q["stream_id"], q["file"], q["version"]) for q in queued),
                )
            if len(queued) < _FLUSH_PAGE:
                return

    def _documents(self, c: ViewCursor, queued: list[dict[str, Any]]) -> Iterable[tuple[ActorSnapshot, str]]:
        for q in queued:
            if q["file"] == "latest":
                row = c.execute("SELECT * FROM actor_heads WHERE stream_id = ?", (q["stream_id"],)).fetchone()
                name = "latest.json"
            else:
                row = c.execute(
                    "SELECT * FROM actor_snapshots WHERE stream_id = ? AND version = ?",
                    (q["stream_id"], q["version"]),
                ).fetchone()
                name = f"{q['version']}.json"
            if row is not None and row["actor"] is not None:
                yield _snapshot_of(row), name


def _snapshot_of(row: Mapping[str, Any]) -> ActorSnapshot:
    return ActorSnapshot(
        stream=row["stream_id"], version=int(row["version"]), position=int(row["position"]),
        timestamp=row["timestamp"], actor=row["actor"], state_type=row["state_type"],
        state_schema_version=int(row["state_schema_version"]), state=json.loads(row["state"]),
    )


# -- on demand (`chorus snapshot`) -----------------------------------------------------------


def snapshot_at(store: EventStore, stream_id: str, version: int | None = None) -> ActorSnapshot:
    """An actor's snapshot at `version` (default: its latest), as the projection makes it.

    Starts from the snapshots view when it holds a state at or before `version` (the
    view need not be caught up), and folds the rest of the stream from the log. Reads
    only: it writes nothing, to the log or to the view. `position` is known only when
    the state came straight from the view.
    """
    from projections.debug import UnknownStream

    latest = store.stream_version(stream_id)
    if latest == 0:
        raise UnknownStream(f"no stream with id {stream_id!r}")
    if version is None:
        version = latest
    elif not 1 <= version <= latest:
        raise ValueError(f"stream {stream_id!r} has versions 1..{latest}; --at {version} is outside")
    base = _view_base(store, stream_id, version)
    if base is not None and base.version == version:
        return base
    if base is None:
        events = store.read_stream(stream_id, 1, version)

        def run_agent(run_id: str) -> str | None:
            first = store.read_stream(f"run:{run_id}", 1, 1)
            return getattr(first[0], "agent", None) if first else None

        actor = actor_of(events[0], run_agent)
        if actor is None:
            raise ValueError(f"no behaviour known for a stream starting with {events[0].type_name}")
        behaviour = behaviour_named(actor)
        state = behaviour.fold(behaviour.initial(), events)
    else:
        actor = base.actor
        behaviour = behaviour_named(actor)
        events = store.read_stream(stream_id, base.version + 1, version)
        state = behaviour.fold(base.typed_state(behaviour), events)
    return ActorSnapshot(
        stream=stream_id, version=version, position=None, timestamp=_timestamp(events[-1].timestamp),
        actor=actor, state_type=type(state).__name__, state_schema_version=type(state).schema_version,
        state=json.loads(state.model_dump_json()),
    )


def _view_base(store: EventStore, stream_id: str, version: int) -> ActorSnapshot | None:
    """The view's latest state of the stream at or before `version`, if it has one (and
    the views can be read here at all: else the log alone serves)."""
    try:
        views = ViewStore.for_store(store)
        if views.schema_version(SnapshotProjection.name) != SnapshotProjection.schema_version:
            return None  # never built here, or built by other code
        rows = views.query(
            "SELECT * FROM actor_heads WHERE stream_id = ? AND version <= ? AND actor IS NOT NULL",
            (stream_id, version),
        )
        if not rows:
            rows = views.query(
                "SELECT * FROM actor_snapshots WHERE stream_id = ? AND version <= ? "
                "ORDER BY version DESC LIMIT 1",
                (stream_id, version),
            )
    except (StoreUnavailable, PersistenceError):
        return None
    return _snapshot_of(rows[0]) if rows else None
