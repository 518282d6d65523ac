"""Reading stored events (msgpack, undecoded) from the log, for projections and the views'
queries: by position range, type and stream, or at chosen positions.

Views in the store's own database (`ViewStore.log_table`) read with SQL on the recorder's
table: the library's `select_notifications` query, rows as plain tuples, without its
per-row `Notification` objects and dict rows (which cost about as much as the rest of
the read). The in-memory store's views live apart from its log; there the recorder's
`select_notifications` serves, with the stream filter applied here.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Collection, Iterator, Sequence
from typing import Any, cast

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.utils import retry

from events.store import EventStore
from projections.projection import StoredRecord
from projections.views import ViewStore, pg_sql


def read_stored(
    store: EventStore,
    views: ViewStore,
    after: int,
    head: int,
    limit: int,
    types: Sequence[str] = (),
    streams: Collection[str] = (),
) -> list[StoredRecord]:
    """Up to `limit` stored events after position `after` up to `head`, of `types` and
    in `streams` if given, in log order. Fewer than `limit`: there are no more."""
    if views.log_table is not None:
        where: list[str] = []
        params: list[Any] = []
        for column, values in (("topic", types), ("originator_id", streams)):
            if values:
                where.append(f" AND {column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        key = _key(views)
        return _select(
            views,
            f"{key} > ? AND {key} <= ?{''.join(where)} ORDER BY {key} LIMIT ?",
            [after, head, *params, limit],
            store,
        )
    found: list[StoredRecord] = []
    start = after + 1
    while start <= head and len(found) < limit:
        with store._available():
            page = store.recorder.select_notifications(start, limit, stop=head, topics=tuple(types))
        found.extend(
            StoredRecord(n.id, cast(str, n.originator_id), n.originator_version, n.topic, n.state, store.codecs)
            for n in page
            if not streams or n.originator_id in streams
        )
        if len(page) < limit:
            break
        start = page[-1].id + 1
    return found[:limit]


def read_positions(store: EventStore, views: ViewStore, positions: Collection[int]) -> dict[int, StoredRecord]:
    """The stored events at `positions`, by position (positions past the log are left out)."""
    wanted = sorted(set(positions))
    if views.log_table is not None:
        key = _key(views)
        found = []
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            found += _select(views, f"{key} IN ({', '.join('?' * len(part))}) ORDER BY {key}", part, store)
    else:
        found = []
        for p in wanted:
            with store._available():
                found.extend(
                    StoredRecord(n.id, cast(str, n.originator_id), n.originator_version, n.topic, n.state, store.codecs)
                    for n in store.recorder.select_notifications(p, 1, stop=p)
                )
    return {r.position: r for r in found}


def _key(views: ViewStore) -> str:
    """The column of a stored event's position."""
    return "notification_id" if views.dialect == "postgres" else "rowid"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a page of events is read or decoded: thousands of new
    small containers and no cycles, so its passes (a tenth of a rebuild's time when
    left on) would find nothing to collect."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _select(views: ViewStore, where: str, params: list[Any], store: EventStore) -> list[StoredRecord]:
    sql = (
        f"SELECT {_key(views)}, originator_id, originator_version, topic, state "
        f"FROM {views.log_table} WHERE {where}"
    )
    with views.available(), gc_paused():
        if views.dialect == "postgres":
            return _select_pg(views, sql, params, store)
        with views.recorder.datastore.transaction(commit=False) as raw:
            cur = raw.sqlite_cursor.connection.cursor()
            cur.row_factory = None  # plain tuples
            try:
                cur.execute(sql, params)
                resolve = store.codecs
                return [StoredRecord(*row, resolve) for row in cur.fetchall()]  # type: ignore[call-arg]  # row: 5 columns
            finally:
                cur.close()


# As the library's PostgreSQL recorders do for their reads: a dropped connection is
# retried (the pool replaces it) before it becomes StoreUnavailable.
@retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
def _select_pg(views: ViewStore, sql: str, params: list[Any], store: EventStore) -> list[StoredRecord]:
    from psycopg.rows import tuple_row  # lazily: only PostgreSQL needs the driver

    with views.recorder.datastore.transaction(commit=False) as raw:
        with raw.connection.cursor(row_factory=tuple_row) as cur:
            cur.execute(pg_sql(sql), params, prepare=True)
            rows = cur.fetchall()
    resolve = store.codecs
    return [StoredRecord(n, o, v, t, s if s.__class__ is bytes else bytes(s), resolve) for n, o, v, t, s in rows]
