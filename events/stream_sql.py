"""Reading one stream by plain SQL on the recorder's own table.

The eventsourcing library's `select_events` builds a dict row and a `StoredEvent` per
event, which cost as much as decoding ours; rehydrating a stream reads thousands. These
readers return `(version, topic, state)` tuples instead, for `EventStore.iter_stream`.
Like events/group_commit.py's batch writers, they are chosen per backend from the
library's recorder; the in-memory store has none and uses the recorder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.utils import retry

# (stream_id, after version or None, up to version or None) -> [(version, topic, state)]
StreamRows = Callable[[str, "int | None", "int | None"], list[tuple[int, str, bytes]]]


def stream_rows(backend: str, recorder: Any) -> StreamRows | None:
    """The reader of a stream's stored events as plain tuples for `backend`, by SQL on
    `recorder`'s table; None: use the recorder (the in-memory store)."""
    if backend == "sqlite":
        select = (
            f"SELECT originator_version, topic, state FROM {recorder.events_table_name} WHERE originator_id=?"
        )

        def sqlite_rows(stream_id: str, gt: int | None, lte: int | None) -> list[tuple[int, str, bytes]]:
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
        def postgres_rows(stream_id: str, gt: int | None, lte: int | None) -> list[tuple[int, str, bytes]]:
            key = (gt is not None, lte is not None)
            if key not in selects:
                text, _ = _bounded("SELECT originator_version, topic, state FROM {0} WHERE originator_id = %s",
                                   "%s", stream_id, gt, lte)
                selects[key] = SQL(text).format(table)  # type: ignore[arg-type]
            params = [stream_id, *(b for b in (gt, lte) if b is not None)]
            with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                cur.execute(selects[key], params, prepare=True)
                rows = cur.fetchall()
            return [(v, t, b if b.__class__ is bytes else bytes(b)) for v, t, b in rows]

        return postgres_rows
    return None


def _bounded(select: str, mark: str, stream_id: str, gt: int | None, lte: int | None) -> tuple[str, list[Any]]:
    sql, params = select, [stream_id]
    if gt is not None:
        sql += f" AND originator_version>{mark}"
        params.append(gt)
    if lte is not None:
        sql += f" AND originator_version<={mark}"
        params.append(lte)
    return sql + " ORDER BY originator_version ASC", params
