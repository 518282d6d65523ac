"""The in-memory recorder (events/recorders/memory.py): its fast paths return exactly what
its library-interface reads return, for every bound; snapshots saved out of order."""

from __future__ import annotations

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from events.recorders.memory import MemoryRecorder, MemorySnapshots


def ev(stream: str, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(stream, version, topic, f"{stream}{version}".encode())


def test_stream_rows_equal_select_events_for_every_bound():
    r = MemoryRecorder()
    for k in range(1, 5):  # interleaved streams: positions are not versions
        r.insert_events([ev("a", k)])
        r.insert_events([ev("b", 2 * k - 1), ev("b", 2 * k)])
    for stream, head in (("a", 4), ("b", 8)):
        for gt in (None, 0, 1, head - 1, head, head + 3):
            for lte in (None, 0, 1, head - 1, head, head + 3):
                want = [(s.originator_version, s.topic, s.state) for s in r.select_events(stream, gt=gt, lte=lte)]
                assert r.stream_rows(stream, gt, lte) == want, (stream, gt, lte)
    assert r.stream_rows("nobody") == [] and r.select_events("nobody") == []


def test_latest_is_the_highest_snapshot_and_what_follows_it():
    r, snaps = MemoryRecorder(), MemorySnapshots()
    r.insert_events([ev("a", v) for v in range(1, 7)])
    snaps.insert_events([ev("a", 4)])
    snaps.insert_events([ev("a", 2)])  # an older one saved last
    snap, tail = r.latest("a", snaps)
    assert snap is not None and snap[0] == 4 and [v for v, _, _ in tail] == [5, 6]
    assert [s.originator_version for s in snaps.select_events("a")] == [2, 4]
    assert r.latest("nobody", snaps) == (None, [])


def test_a_duplicate_is_refused_whole_and_checked_groups_fail_alone():
    r = MemoryRecorder()
    r.insert_events([ev("a", 1)])
    with pytest.raises(IntegrityError):
        r.insert_events([ev("b", 1), ev("a", 1)])
    assert r.select_events("b") == [] and r.max_notification_id() == 1
    out = r.append_checked([[("a", 1, [ev("a", 2)])], [("b", 3, [ev("b", 4)])], [("c", 0, [ev("c", 1, "x")])]])
    assert out == [[2], ("b", 3), [3]]
    assert [p for p, *_ in r.records(0, 3, 10, topics=["x"])] == [3]
    assert [p for p, *_ in r.records(1, 3, 1)] == [2]
    assert [p for p, *_ in r.records_at([3, 1, 99])] == [1, 3]


def test_select_with_a_limit_either_way_is_the_full_selection_cut():
    r = MemoryRecorder()
    r.insert_events([ev("a", v) for v in range(1, 9)])
    for gt in (None, 2):
        for lte in (None, 6):
            full = [s.originator_version for s in r.select_events("a", gt=gt, lte=lte)]
            for limit in (1, 3, 20):
                assert [s.originator_version for s in r.select_events("a", gt=gt, lte=lte, limit=limit)] == full[:limit]
                down = [s.originator_version for s in r.select_events("a", gt=gt, lte=lte, desc=True, limit=limit)]
                assert down == full[::-1][:limit], (gt, lte, limit)
