"""Our recorders' own methods beyond the library's interface (events/recorders/), on every
backend, and what an earlier Chorus's database (the eventsourcing library's tables) gives."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from eventsourcing.persistence import StoredEvent

from events.store import EventStore, StoreUnavailable
from tests.conftest import POSTGRES_URL


def ev(stream: str, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(stream, version, topic, f"{stream}{version}".encode())


@pytest.fixture
def recorder(store_url):
    with EventStore(store_url) as store:
        yield store.recorder


def test_checked_groups_land_or_fail_alone_in_one_transaction(recorder):
    recorder.insert_events([ev("a", 1), ev("b", 1)])
    out = recorder.append_checked([
        [("a", 1, [ev("a", 2), ev("a", 3)])],
        [("b", 0, [ev("b", 1)])],  # b is at 1: fails, alone
        [("c", 0, [ev("c", 1, "x")]), ("d", 0, [ev("d", 1, "x")])],
    ])
    assert out[0] == [3, 4] and tuple(out[1]) == ("b", 0) and out[2] == [5, 6]
    assert [s.originator_version for s in recorder.select_events("a")] == [1, 2, 3]
    assert recorder.stream_rows("a", 1, 2) == [(2, "t", b"a2")]


def test_bulk_reads_filter_by_range_type_and_stream(recorder):
    recorder.insert_events([ev("a", 1), ev("b", 1, "x"), ev("a", 2, "x"), ev("c", 1)])
    assert [p for p, *_ in recorder.records(0, 4, 10)] == [1, 2, 3, 4]
    assert [p for p, *_ in recorder.records(1, 3, 10)] == [2, 3]
    assert [p for p, *_ in recorder.records(0, 4, 10, topics=["x"])] == [2, 3]
    assert [p for p, *_ in recorder.records(0, 4, 10, topics=["x"], streams=["a"])] == [3]
    assert recorder.records(0, 4, 1, streams=["c"]) == [(4, "c", 1, "t", b"c1")]
    assert [p for p, *_ in recorder.records_at([4, 2, 2, 99])] == [2, 4]


def test_an_earlier_sqlite_file_is_copied_into_our_tables_keeping_positions(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:  # the library's schema, as an earlier Chorus wrote it
        db.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, topic TEXT, "
                   "state BLOB, PRIMARY KEY (originator_id, originator_version))")
        db.execute("CREATE TABLE snapshots (originator_id TEXT, originator_version INTEGER, topic TEXT, "
                   "state BLOB, PRIMARY KEY (originator_id, originator_version))")
        db.executemany("INSERT INTO stored_events (rowid, originator_id, originator_version, topic, state) "
                       "VALUES (?, ?, ?, ?, ?)", [(1, "a", 1, "t", b"a1"), (2, "b", 1, "t", b"b1"), (5, "a", 2, "t", b"a2")])
        db.execute("INSERT INTO snapshots VALUES ('a', 1, 'S', x'00')")
    with EventStore(f"sqlite:///{path}") as store:
        assert [(n.id, n.originator_id) for n in store.recorder.select_notifications(1, 10)] == [(1, "a"), (2, "b"), (5, "a")]
        assert [s.originator_version for s in store.snapshots.select_events("a")] == [1]
        assert store.recorder.insert_events([ev("b", 2)]) == [6]
    with EventStore(f"sqlite:///{path}") as store:  # copied once, not again
        assert store.max_position() == 6 and len(store.recorder.select_notifications(1, 10)) == 4


@pytest.mark.postgres
def test_an_earlier_postgres_schema_is_refused_in_one_line(postgres_url):
    schema = postgres_url.rsplit("schema=", 1)[1]
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{schema}".stored_events (originator_id text, originator_version bigint)')
    with pytest.raises(StoreUnavailable) as info:
        EventStore(postgres_url)
    message = str(info.value)
    assert "\n" not in message and "stored_events" in message and "0015-own-recorders" in message
