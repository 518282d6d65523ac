"""Snapshots: an index of the snapshots actor shells take, and those snapshots as JSON
files, maintained as a projection (rule 3) and readable across format versions
(`projections.snapshot_files`: 0.1.0 -> 0.2.0 -> 0.3.0).

The view runs no actor code. Folding a stream needs its behaviour, which is the
runtime's: the shell (`actors.runtime.shell.ActorShell.snapshot`) saves the state in the
store's snapshot recorder (every version kept, each saved once) every `snapshot_every`
versions (CHORUS_SNAPSHOT_EVERY, 100; at the first version at or past each multiple, as
events are appended in groups) and when its actor finishes serving a run. A shell
snapshot says what it is (actor, state_type, state schema version, and the timestamp
and log position of the event at its version); the view copies it, never recomputes it.
A state at any other version, on demand, is `actors.runtime.replay.state.snapshot_at`.

Files, under the store's data directory (see `snapshot_directory` for PostgreSQL):

    snapshots/<stream>/latest.json     the newest shell snapshot of the stream
    snapshots/<stream>/<version>.json  every shell snapshot of the stream

`<stream>` is the stream id, percent-encoded where it is not a safe file name
(`agent:ID` stays `agent:ID`; `/` becomes `%2F`). A file holds one `ActorSnapshot`:

    {"schema_version": "0.3.0", "stream": "agent:ID", "version": 41, "position": 1234,
     "timestamp": "2026-01-01T00:00:05.123456+00:00", "actor": "react",
     "state_type": "AgentState", "state_schema_version": 1, "state": {...}}

Tables. `actor_heads`: every stream's head from the log (version, position, timestamp
of its latest event) and its newest indexed snapshot (`snapshot_version`, `actor`; NULL
while it has none: a stream no shell snapshots keeps a head and gets no files).
`actor_snapshots`: every indexed shell snapshot. `snapshot_pending` and
`snapshot_outbox`: work still to do after a commit (empty at rest).

Two inputs, each exactly once. The heads are the log's: a batch upserts them with the
tracked position, in one transaction, and queues each stream it moved in
`snapshot_pending` in that transaction too. The snapshots are the snapshot recorder's,
which a batch's transaction cannot read consistently (and a projection is not handed the
store), so `committed()` (which the runner calls after every commit, and when it opens
the view, to finish what a crash left) indexes them: for each pending stream it reads
the shell snapshots with versions in (newest indexed, head version], inserts them, moves
the head's `snapshot_version`, queues their files and removes the stream from the
queue, all in one transaction. Never beyond the head: the view holds no state of an
event it has not processed. Then it writes the queued files from the committed rows
(temporary file, fsync, rename) and only then dequeues them. A crash can repeat a step,
never lose one, and each is idempotent (the same rows give the same bytes). Writers take
the projection's lock (and indexing the tracked position's, as batches do), and a file's
queue entry is removed only if it still names the version written, so a slower writer
never leaves an older latest.json behind a newer one. Files are never ahead of the
committed view, but may lag it by one flush; a rebuild rewrites them from the start.
Files of a dropped view are not deleted (a rebuild gives the same files again).

Late snapshots. A shell saves its snapshot just after appending the event, so the view
can pass that event first. Any later event of the stream looks again from the newest
indexed snapshot, so only a stream that then stops needs more; `committed()` re-checks,
within a bound:
- streams this projection object indexed and left behind their head (newest indexed
  snapshot older than the head), at its first calls at least 0, 1 and 10 seconds after,
  then no more; at most the 1024 most recent such streams are remembered;
- when it first runs (a runner opening the view), the 256 streams with the highest head
  positions that are behind their head (what a runner that died left).
Past that bound (a snapshot saved long after its stream's last event, with the view
already by) the snapshot is indexed at the stream's next event or by a rebuild. A
snapshot saved at a version below one already indexed (a stale writer of the stream)
is indexed only by a rebuild. The runner calls `committed()` only after a commit, so on
an idle log the re-checks wait for the next event anywhere or the next runner.
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from events.store import EventStore, Recorded, Snapshot
from projections.projection import Projection, StoredRecord, register_projection
from projections.snapshot_files import (
    ActorSnapshot,
    snapshot_directory,
    stream_folder,
    write_snapshot,
)
from projections.views import ViewCursor, ViewStore

SHELL_SNAPSHOT = "ShellSnapshot"  # the kind the actor shell saves its snapshots as

RECHECK_AFTER = (0.0, 1.0, 10.0)  # seconds after a stream was left behind its head
RECHECK_REMEMBERED = 1024
RECHECK_ON_OPEN = 256

_SNAPSHOT_COLUMNS = (
    "stream_id", "version", "position", "timestamp", "actor", "state_type",
    "state_schema_version", "state",
)
_UPSERT_HEAD = (
    "INSERT INTO actor_heads (stream_id, version, position, timestamp) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (stream_id) DO UPDATE SET version = excluded.version, "
    "position = excluded.position, timestamp = excluded.timestamp"
)
_PEND = "INSERT INTO snapshot_pending (stream_id) VALUES (?) ON CONFLICT (stream_id) DO NOTHING"
_QUEUE = (
    "INSERT INTO snapshot_outbox (stream_id, file, version) VALUES (?, ?, ?) "
    "ON CONFLICT (stream_id, file) DO UPDATE SET version = excluded.version"
)
_PAGE = 256


def _timestamp(t: datetime) -> str:
    """As the shell writes them (`actors.runtime.shell.utc_timestamp`)."""
    if t.tzinfo is not timezone.utc:
        t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")


def _head(r: StoredRecord | Recorded) -> tuple[str, int, int, str]:
    """(stream, version, position, timestamp) of one event, decoding only its envelope."""
    if isinstance(r, StoredRecord):
        return r.stream_id, r.version, r.position, _timestamp(r.unpacked()[5])
    e = r.event
    return e.stream_id, e.version, r.position, _timestamp(e.timestamp)


def snapshot_row(s: Snapshot) -> tuple[Any, ...] | None:
    """The `actor_snapshots` row of a shell snapshot, copied from it (None: not the shell's)."""
    if s.kind != SHELL_SNAPSHOT or not isinstance(s.data, Mapping) or "state" not in s.data:
        return None
    d = s.data
    return (
        s.stream_id, s.version, d.get("position"), d.get("timestamp"), d.get("actor"),
        d.get("state_type"), int(d.get("schema_version", 1)), to_json(d["state"]).decode(),
    )


@register_projection
class SnapshotProjection(Projection):
    name = "snapshots"
    schema_version = 2  # 1 folded streams itself
    types = ()  # every event: any stream may have a shell
    tables = ("actor_heads", "actor_snapshots", "snapshot_pending", "snapshot_outbox")
    stored = True  # a batch decodes only the envelope of each stream's last event

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, durable: bool = True,
                 store: EventStore | None = None) -> None:
        self.directory = None if directory is None else Path(directory)
        self.durable = durable  # fsync each file before it leaves the outbox
        self.store = store  # where the shells' snapshots are; default: the views' store
        # Streams left behind their head: stream -> (when, re-checks done), oldest first.
        self._behind: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._opened = False

    def folder(self, views: ViewStore) -> Path | None:
        return self.directory or snapshot_directory(views.url)

    def create(self, c: ViewCursor) -> None:
        c.execute(
            "CREATE TABLE IF NOT EXISTS actor_heads (stream_id TEXT NOT NULL, version BIGINT NOT NULL, "
            "position BIGINT NOT NULL, timestamp TEXT, actor TEXT, snapshot_version BIGINT, "
            "PRIMARY KEY (stream_id))"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS actor_snapshots (stream_id TEXT NOT NULL, version BIGINT NOT NULL, "
            "position BIGINT, timestamp TEXT, actor TEXT, state_type TEXT, state_schema_version INTEGER, "
            "state TEXT NOT NULL, PRIMARY KEY (stream_id, version))"
        )
        c.execute("CREATE TABLE IF NOT EXISTS snapshot_pending (stream_id TEXT NOT NULL, PRIMARY KEY (stream_id))")
        c.execute(
            "CREATE TABLE IF NOT EXISTS snapshot_outbox (stream_id TEXT NOT NULL, file TEXT NOT NULL, "
            "version BIGINT NOT NULL, PRIMARY KEY (stream_id, file))"
        )

    def apply(self, c: ViewCursor, recorded: Any) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[StoredRecord]) -> None:  # type: ignore[override]
        last: dict[str, StoredRecord] = {}
        for r in records:
            last[r.stream_id if isinstance(r, StoredRecord) else r.event.stream_id] = r
        heads = sorted(_head(r) for r in last.values())
        c.executemany(_UPSERT_HEAD, heads)
        # Sorted, as `committed` takes them: two transactions touching the same rows
        # lock them in one order, so they cannot deadlock.
        c.executemany(_PEND, [(h[0],) for h in heads])

    # -- after the commit: snapshots, then files ---------------------------------------

    def committed(self, views: ViewStore) -> None:
        """Index the pending streams' shell snapshots, re-check late ones, write the
        queued files (see the module's docstring)."""
        store = self._store(views)
        # Due before this call indexes: a stream it leaves behind waits for a later call.
        due = self._due()
        if not self._opened:
            self._opened = True
            due += self._behind_in_view(views)
        indexed: set[str] = set()
        while self._index_pending(views, store, indexed):
            pass
        self._recheck(views, store, sorted(set(due) - indexed))
        self._flush(views)

    def _store(self, views: ViewStore) -> EventStore:
        """The store whose shells' snapshots to index: given, or the one these views are of
        (a runner hands a projection only its views)."""
        store = self.store or views.store
        if store is not None:
            return store
        raise RuntimeError(f"no open event store has these views ({views.url}): pass store= to SnapshotProjection")

    def _begin(self, views: ViewStore, c: ViewCursor) -> None:
        # The projection's lock, then its tracked position's, as `ensure` takes them:
        # no batch is half-way while heads and pending streams are read and moved.
        views.lock(c, self.name)
        views.hold(c, self.name)

    def _index_pending(self, views: ViewStore, store: EventStore, indexed: set[str]) -> bool:
        """Index one page of pending streams (adding them to `indexed`); True if there
        may be more."""
        with views.transaction() as c:
            self._begin(views, c)
            page = c.execute(
                "SELECT h.stream_id, h.version, h.snapshot_version FROM snapshot_pending p "
                f"JOIN actor_heads h ON h.stream_id = p.stream_id ORDER BY p.stream_id LIMIT {_PAGE}"
            ).fetchall()
            if not page:
                return False
            self._index(c, store, page)
            c.executemany("DELETE FROM snapshot_pending WHERE stream_id = ?", [(h["stream_id"],) for h in page])
        indexed.update(h["stream_id"] for h in page)
        return len(page) == _PAGE

    def _recheck(self, views: ViewStore, store: EventStore, streams: list[str]) -> None:
        for i in range(0, len(streams), _PAGE):
            chunk = streams[i : i + _PAGE]
            with views.transaction() as c:
                self._begin(views, c)
                heads = c.execute(
                    "SELECT stream_id, version, snapshot_version FROM actor_heads "
                    f"WHERE stream_id IN ({', '.join('?' * len(chunk))}) ORDER BY stream_id",
                    chunk,
                ).fetchall()
                self._index(c, store, heads, recheck=True)

    def _index(self, c: ViewCursor, store: EventStore, heads: Iterable[Mapping[str, Any]], *,
               recheck: bool = False) -> None:
        """Index the shell snapshots of `heads` in (snapshot_version, version], in `c`."""
        rows: list[tuple[Any, ...]] = []
        moved: list[tuple[Any, ...]] = []
        queue: list[tuple[str, str, int]] = []
        now = time.monotonic()
        for h in heads:
            stream, head, indexed = h["stream_id"], h["version"], h["snapshot_version"] or 0
            found = [row for s in store.list_snapshots(stream, indexed, head) if (row := snapshot_row(s))]
            if found:
                rows += found
                newest = found[-1]
                moved.append((newest[4], newest[1], stream))
                queue.append((stream, "latest", newest[1]))
                queue += [(stream, str(row[1]), row[1]) for row in found]
                indexed = newest[1]
            self._watch(stream, indexed < head, now, recheck)
        c.insert_rows("actor_snapshots", _SNAPSHOT_COLUMNS, rows)
        c.executemany("UPDATE actor_heads SET actor = ?, snapshot_version = ? WHERE stream_id = ?", moved)
        c.executemany(_QUEUE, sorted(queue))

    def _watch(self, stream: str, behind: bool, now: float, recheck: bool) -> None:
        """After a stream was indexed: remember it for re-checks if its head moved and it
        is still behind; forget it once caught up. A re-check remembers nothing new
        (`_due` counts the re-checks of a remembered stream)."""
        if not behind:
            self._behind.pop(stream, None)
        elif not recheck:
            self._behind[stream] = (now, 0)
            self._behind.move_to_end(stream)
            while len(self._behind) > RECHECK_REMEMBERED:
                self._behind.popitem(last=False)

    def _due(self) -> list[str]:
        """The remembered streams due a re-check now (each is counted as checked)."""
        now, due = time.monotonic(), []
        for stream, (since, checks) in list(self._behind.items()):
            if now - since < RECHECK_AFTER[checks]:
                continue
            due.append(stream)
            if checks + 1 < len(RECHECK_AFTER):
                self._behind[stream] = (since, checks + 1)
            else:
                del self._behind[stream]
        return due

    def _behind_in_view(self, views: ViewStore) -> list[str]:
        rows = views.query(
            "SELECT stream_id FROM actor_heads WHERE snapshot_version IS NULL OR snapshot_version < version "
            f"ORDER BY position DESC LIMIT {RECHECK_ON_OPEN}"
        )
        return [r["stream_id"] for r in rows]

    def _flush(self, views: ViewStore) -> None:
        """Write the queued files, a page per transaction, and dequeue them."""
        folder = self.folder(views)
        while True:
            with views.transaction() as c:
                views.lock(c, self.name)
                queued = c.execute(
                    f"SELECT stream_id, file, version FROM snapshot_outbox ORDER BY stream_id, file LIMIT {_PAGE}"
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
            if len(queued) < _PAGE:
                return

    def _documents(self, c: ViewCursor, queued: list[dict[str, Any]]) -> Iterable[tuple[ActorSnapshot, str]]:
        for q in queued:
            if q["file"] == "latest":  # the newest now, whatever version was queued
                row = c.execute(
                    "SELECT s.* FROM actor_heads h JOIN actor_snapshots s "
                    "ON s.stream_id = h.stream_id AND s.version = h.snapshot_version WHERE h.stream_id = ?",
                    (q["stream_id"],),
                ).fetchone()
                name = "latest.json"
            else:
                row = c.execute(
                    "SELECT * FROM actor_snapshots WHERE stream_id = ? AND version = ?",
                    (q["stream_id"], q["version"]),
                ).fetchone()
                name = f"{q['version']}.json"
            if row is not None:
                yield snapshot_of(row), name


def snapshot_of(row: Mapping[str, Any]) -> ActorSnapshot:
    """The file document of an `actor_snapshots` row."""
    return ActorSnapshot(
        stream=row["stream_id"], version=int(row["version"]),
        position=None if row["position"] is None else int(row["position"]),
        timestamp=row["timestamp"], actor=row["actor"], state_type=row["state_type"],
        state_schema_version=int(row["state_schema_version"]), state=json.loads(row["state"]),
    )
