"""Reading one stream by plain SQL on the recorder's own table.

The eventsourcing library's `select_events` builds a dict row and a `StoredEvent` per
event, which cost as much as decoding ours; rehydrating a stream reads thousands. These
readers return `(version, topic, state)` tuples instead, for `EventStore.iter_stream`.
Like events/group_commit.py's batch writers, they are chosen per backend from the
library's recorder. The in-memory store's readers take the rows from the in-memory
recorder's per-stream index, walking back from the stream's head, where the recorder's
`select_events` walks every version of the stream to find those after a snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.utils import retry

Row = tuple[int, str, bytes]  # (version, topic, state)
# (stream_id, after version or None, up to version or None) -> [(version, topic, state)]
StreamRows = Callable[[str, "int | None", "int | None"], list[Row]]
# stream_id -> (its latest snapshot's row or None, the stream's rows after that snapshot)
LatestRows = Callable[[str], tuple["Row | None", list[Row]]]


def stream_rows(backend: str, recorder: Any) -> StreamRows | None:
    """The reader of a stream's stored events as plain tuples for `backend`, by SQL on
    `recorder`'s table (or its in-memory index); None: use the recorder."""
    if backend == "popo":
        return _popo_rows(recorder)
    if backend == "sqlite":
        select = (
            f"SELECT originator_version, topic, state FROM {recorder.events_table_name} WHERE originator_id=?"
        )

        def sqlite_rows(stream_id: str, gt: int | None, lte: int | None) -> list[Row]:
            sql, params = _bounded(select, "?", stream_id, gt, lte)
            with recorder.datastore.transaction(commit=False) as c:
                cur = c.sqlite_cursor.connection.cursor()
                cur.row_factory = None  # plain tuples
                try:
                    cur.execute(sql, params)
                    return cur.fetchall()  # type: ignore[no-any-return]
                finally:
                    cur.close()

        return sqlite_rows
    if backend == "postgres":
        from psycopg.rows import tuple_row  # lazily: only PostgreSQL needs the driver
        from psycopg.sql import SQL, Identifier

        table = SQL("{0}.{1}").format(Identifier(recorder.datastore.schema), Identifier(recorder.events_table_name))
        selects: dict[tuple[bool, bool], Any] = {}

        # As the library's recorder reads: a dropped connection is retried (the pool replaces it).
        @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
        def postgres_rows(stream_id: str, gt: int | None, lte: int | None) -> list[Row]:
            key = (gt is not None, lte is not None)
            if key not in selects:
                text, _ = _bounded("SELECT originator_version, topic, state FROM {0} WHERE originator_id = %s",
                                   "%s", stream_id, gt, lte)
                selects[key] = SQL(text).format(table)  # type: ignore[arg-type]
            params = [stream_id, *(b for b in (gt, lte) if b is not None)]
            with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(selects[key], params, prepare=True, binary=True)  # bytea as bytes, not hex
                rows = cur.fetchall()
            return [(v, t, b if b.__class__ is bytes else bytes(b)) for v, t, b in rows]

        return postgres_rows
    return None


def latest_rows(backend: str, recorder: Any, snapshots: Any) -> LatestRows | None:
    """The reader of a stream's latest snapshot and the events after it, read together:
    what an actor's load needs. On PostgreSQL one statement (one round trip, where the
    library's recorders take two); on SQLite both reads in one transaction; in memory,
    from the index. None: read the snapshot, then the stream."""
    if backend == "popo":
        rows, snaps = _popo_rows(recorder), _popo_rows(snapshots)
        if rows is None or snaps is None:
            return None

        def memory_latest(stream_id: str) -> tuple[Row | None, list[Row]]:
            # The highest-version snapshot (they may have been saved out of order).
            found = snaps(stream_id, None, None)
            snap = max(found, default=None)
            return snap, rows(stream_id, snap[0] if snap else None, None)

        return memory_latest
    if backend == "sqlite":
        snap_sql = (f"SELECT originator_version, topic, state FROM {snapshots.events_table_name} "
                    "WHERE originator_id=? ORDER BY originator_version DESC LIMIT 1")
        tail_sql = (f"SELECT originator_version, topic, state FROM {recorder.events_table_name} "
                    "WHERE originator_id=? AND originator_version>? ORDER BY originator_version ASC")

        def sqlite_latest(stream_id: str) -> tuple[Row | None, list[Row]]:
            with recorder.datastore.transaction(commit=False) as c:
                cur = c.sqlite_cursor.connection.cursor()
                cur.row_factory = None  # plain tuples
                try:
                    cur.execute(snap_sql, (stream_id,))
                    snap = cur.fetchone()
                    cur.execute(tail_sql, (stream_id, snap[0] if snap else 0))
                    return snap, cur.fetchall()
                finally:
                    cur.close()

        return sqlite_latest
    if backend == "postgres":
        from psycopg.rows import tuple_row
        from psycopg.sql import SQL, Identifier

        schema = Identifier(recorder.datastore.schema)
        # One statement, so the snapshot and the tail come from one database snapshot. The
        # first column orders the rows: -1 for the snapshot's, the version for the tail's
        # (which PostgreSQL merges without sorting: the tail comes off the index in order).
        query = SQL(
            "WITH s AS (SELECT originator_version, topic, state FROM {0}.{1} WHERE originator_id = %s "
            "ORDER BY originator_version DESC LIMIT 1) "
            "SELECT -1 AS k, originator_version, topic, state FROM s UNION ALL "
            "SELECT originator_version, originator_version, topic, state FROM {0}.{2} WHERE originator_id = %s "
            "AND originator_version > COALESCE((SELECT originator_version FROM s), 0) "
            "ORDER BY k"
        ).format(schema, Identifier(snapshots.events_table_name), Identifier(recorder.events_table_name))

        @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
        def postgres_latest(stream_id: str) -> tuple[Row | None, list[Row]]:
            with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(query, (stream_id, stream_id), prepare=True, binary=True)
                rows = cur.fetchall()
            snap = None
            if rows and rows[0][0] == -1:
                _, v, t, b = rows[0]
                snap, rows = (v, t, b if b.__class__ is bytes else bytes(b)), rows[1:]
            return snap, [(v, t, b if b.__class__ is bytes else bytes(b)) for _, v, t, b in rows]

        return postgres_latest
    return None


def _popo_rows(recorder: Any) -> StreamRows | None:
    """Rows from the in-memory recorder's index (version -> position in its list), read
    under its lock; None if the recorder is not laid out so (another library version)."""
    lock = getattr(recorder, "_database_lock", None)
    index = getattr(recorder, "_stored_events_index", None)
    stored = getattr(recorder, "_stored_events", None)
    if lock is None or not isinstance(index, dict) or not isinstance(stored, list):
        return None

    def popo_rows(stream_id: str, gt: int | None, lte: int | None) -> list[Row]:
        with lock:
            versions = index.get(stream_id)  # .get: the index is a defaultdict; add nothing
            if not versions:
                return []
            rows: list[Row] = []
            for v in reversed(versions):  # from the head back: a tail costs its length
                if gt is not None and v <= gt:
                    break
                if lte is None or v <= lte:
                    s = stored[versions[v]]
                    rows.append((v, s.topic, s.state))
        rows.reverse()
        return rows

    return popo_rows


def _bounded(select: str, mark: str, stream_id: str, gt: int | None, lte: int | None) -> tuple[str, list[Any]]:
    sql, params = select, list[Any]([stream_id])
    if gt is not None:
        sql += f" AND originator_version>{mark}"
        params.append(gt)
    if lte is not None:
        sql += f" AND originator_version<={mark}"
        params.append(lte)
    return sql + " ORDER BY originator_version ASC", params
