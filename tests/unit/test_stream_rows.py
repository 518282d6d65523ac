"""The in-memory store's stream readers (events/stream_sql.py): rows from the in-memory
recorder's index, walking back from a stream's head, must be exactly what the recorder's
own `select_events` returns, for every bound; a recorder laid out otherwise gets none."""

from __future__ import annotations

from events import Event, event_type
from events.store import EventStore
from events.stream_sql import latest_rows, stream_rows


@event_type("test.rows.Noted")
class Noted(Event):
    n: int


def test_index_rows_equal_the_recorders_own_select_for_every_bound():
    store = EventStore("memory://")
    for k in range(4):  # interleaved streams: positions in the recorder's list are not versions
        store.append("a", [Noted(n=k)], expected_version=k)
        store.append("b", [Noted(n=10 + k), Noted(n=20 + k)], expected_version=2 * k)
    rows = stream_rows("popo", store.recorder)
    assert rows is not None
    for stream, head in (("a", 4), ("b", 8)):
        for gt in (None, 0, 1, head - 1, head, head + 3):
            for lte in (None, 0, 1, head - 1, head, head + 3):
                want = [(s.originator_version, s.topic, s.state)
                        for s in store.recorder.select_events(stream, gt=gt, lte=lte)]
                assert rows(stream, gt, lte) == want, (stream, gt, lte)
    assert rows("nobody", None, None) == []
    assert "nobody" not in store.recorder._stored_events_index  # reading adds no stream


def test_latest_is_the_highest_snapshot_and_what_follows_it():
    store = EventStore("memory://")
    store.append("a", [Noted(n=k) for k in range(6)], expected_version=0)
    for v in (4, 2):  # the older one saved last
        store.save_snapshot("a", v, Noted(n=v))
    latest = latest_rows("popo", store.recorder, store.snapshots)
    assert latest is not None
    snap, tail = latest("a")
    assert snap is not None and snap[0] == 4
    assert [v for v, _, _ in tail] == [5, 6]
    assert latest("nobody") == (None, [])


def test_a_recorder_without_the_index_layout_is_read_through_select_events():
    assert stream_rows("popo", object()) is None
    assert latest_rows("popo", object(), object()) is None
