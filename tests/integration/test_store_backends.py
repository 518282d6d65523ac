"""The shared backend suite: every store backend (memory, SQLite, PostgreSQL) passes it.

This is the eventsourcing library's pattern (one test-case class, many adapters), done with
a parametrized fixture: each test runs once per backend in `store_url`.
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timezone

import pytest
from pydantic import BaseModel, ConfigDict

from events import Event, event_type
from events.store import ConcurrencyError, EventStore, Recorded


@event_type("test.store.Noted")
class Noted(Event):
    text: str
    n: int = 0


@event_type("test.store.Flagged")
class Flagged(Event):
    flag: bool = True


class Counter(BaseModel):
    model_config = ConfigDict(frozen=True)

    count: int
    names: list[str] = []


@pytest.fixture
def store(store_url):
    s = EventStore(store_url)
    yield s
    s.close()


def other_store(store: EventStore) -> EventStore:
    """A second store object on the same data (the same object for memory://)."""
    return store if store.backend == "popo" else EventStore(store.url)


def notes(*texts: str, **envelope) -> list[Event]:
    return [Noted(text=t, n=i, **envelope) for i, t in enumerate(texts)]


# -- appending and reading streams ------------------------------------------------------


def test_empty_store(store):
    assert store.stream_version("nobody") == 0
    assert store.read_stream("nobody") == []
    assert store.max_position() == 0
    assert list(store.read_all()) == []
    assert store.load_snapshot("nobody") is None
    assert store.append("nobody", [], expected_version=0) == []
    assert store.max_position() == 0


def test_append_stamps_versions_and_returns_positions(store):
    recorded = store.append("s-1", notes("a", "b", "c"), expected_version=0)
    assert [r.event.version for r in recorded] == [1, 2, 3]
    assert {r.event.stream_id for r in recorded} == {"s-1"}
    assert all(isinstance(r, Recorded) for r in recorded)
    positions = [r.position for r in recorded]
    assert positions == sorted(positions) and len(set(positions)) == 3
    assert positions[0] >= 1

    more = store.append("s-1", notes("d"), expected_version=3)
    assert more[0].event.version == 4
    assert more[0].position > positions[-1]
    assert store.stream_version("s-1") == 4
    assert store.max_position() == more[0].position


def test_read_stream_from_and_to_version(store):
    store.append("s", notes(*"abcdef"), expected_version=0)
    texts = lambda evs: "".join(e.text for e in evs)  # noqa: E731
    assert texts(store.read_stream("s")) == "abcdef"
    assert texts(store.read_stream("s", from_version=3)) == "cdef"
    assert texts(store.read_stream("s", to_version=2)) == "ab"
    assert texts(store.read_stream("s", from_version=2, to_version=4)) == "bcd"
    assert texts(store.read_stream("s", from_version=6)) == "f"
    assert store.read_stream("s", from_version=7) == []
    assert [e.version for e in store.read_stream("s", from_version=3)] == [3, 4, 5, 6]


def test_streams_are_independent_and_text_ids_are_kept(store):
    odd_ids = ["researcher/1", "synth:Bird 🐦", "a" * 200, "x'y\"z"]
    for i, sid in enumerate(odd_ids):
        store.append(sid, notes(*(str(k) for k in range(i + 1))), expected_version=0)
    for i, sid in enumerate(odd_ids):
        assert store.stream_version(sid) == i + 1
        events = store.read_stream(sid)
        assert [e.stream_id for e in events] == [sid] * (i + 1)


def test_envelope_and_payload_round_trip(store):
    ts = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
    original = Noted(
        text="hello",
        n=7,
        run_id="run-1",
        causation_id="cmd-9",
        command_id="idem-1",
        timestamp=ts,
    )
    [recorded] = store.append("s", [original], expected_version=0)
    [loaded] = store.read_stream("s")
    assert loaded == recorded.event
    assert loaded.event_id == original.event_id
    assert (loaded.run_id, loaded.causation_id, loaded.command_id) == ("run-1", "cmd-9", "idem-1")
    assert loaded.timestamp == ts and loaded.timestamp.tzinfo is not None
    assert loaded.same_fact(recorded.event)
    [(position, from_log)] = list(store.read_all())
    assert position == recorded.position and from_log == loaded


# -- the global log ---------------------------------------------------------------------


def test_read_all_in_global_order_from_a_position(store):
    store.append("a", notes("a1", "a2"), expected_version=0)
    store.append("b", notes("b1"), expected_version=0)
    store.append("a", notes("a3"), expected_version=2)
    log = list(store.read_all())
    assert [r.event.text for r in log] == ["a1", "a2", "b1", "a3"]
    positions = [r.position for r in log]
    assert all(p < q for p, q in zip(positions, positions[1:], strict=False))
    assert [r.event.text for r in store.read_all(positions[2])] == ["b1", "a3"]
    assert [r.event.text for r in store.read_all(positions[1], to_position=positions[2])] == [
        "a2",
        "b1",
    ]
    assert list(store.read_all(positions[-1] + 1)) == []


def test_read_all_pages_through_a_long_log(store):
    store.append("s", notes(*(str(i) for i in range(23))), expected_version=0)
    got = [r.event.text for r in store.read_all(batch=5)]
    assert got == [str(i) for i in range(23)]


def test_read_all_filters_by_run_and_by_type(store):
    store.append("a", [Noted(text="1", run_id="r1"), Flagged(run_id="r1")], expected_version=0)
    store.append("b", [Noted(text="2", run_id="r2"), Flagged(run_id="r2")], expected_version=0)
    store.append("a", [Noted(text="3", run_id="r1")], expected_version=2)

    by_run = list(store.read_all(run_id="r1"))
    assert [(r.event.type_name, r.event.stream_id) for r in by_run] == [
        ("test.store.Noted", "a"),
        ("test.store.Flagged", "a"),
        ("test.store.Noted", "a"),
    ]
    by_type = list(store.read_all(types=["test.store.Flagged"]))
    assert [r.event.run_id for r in by_type] == ["r1", "r2"]
    both = list(store.read_all(run_id="r2", types=["test.store.Noted"]))
    assert [r.event.text for r in both] == ["2"]
    two_types = list(store.read_all(types=["test.store.Flagged", "test.store.Noted"]))
    assert len(two_types) == 5
    assert list(store.read_all(run_id="nope")) == []
    # a filter combined with paging still sees every match
    assert [r.event.text for r in store.read_all(run_id="r1", types=["test.store.Noted"], batch=1)] == [
        "1",
        "3",
    ]


def test_positions_strictly_increase_across_streams(store):
    seen: list[int] = []
    for i in range(10):
        for r in store.append(f"s{i % 3}", notes("x", "y"), expected_version=(i // 3) * 2):
            seen.append(r.position)
    assert all(p < q for p, q in zip(seen, seen[1:], strict=False))
    assert [r.position for r in store.read_all()] == seen
    assert store.max_position() == seen[-1]


# -- optimistic concurrency -------------------------------------------------------------


def _snapshot_of_log(store):
    return [(r.position, r.event.stream_id, r.event.version) for r in store.read_all()]


@pytest.mark.parametrize(
    "expected, why",
    [(0, "stream exists"), (1, "stale"), (2, "stale by one"), (4, "a gap"), (10, "a wide gap")],
)
def test_wrong_expected_version_raises_and_writes_nothing(store, expected, why):
    store.append("s", notes("a", "b", "c"), expected_version=0)
    store.append("other", notes("z"), expected_version=0)
    before = _snapshot_of_log(store)
    with pytest.raises(ConcurrencyError, match="s"):
        store.append("s", notes("p", "q", "r"), expected_version=expected)
    assert _snapshot_of_log(store) == before, why
    assert store.stream_version("s") == 3
    # the stream carries on from where it really is
    assert store.append("s", notes("d"), expected_version=3)[0].event.version == 4


def test_gap_on_a_new_stream_is_refused(store):
    with pytest.raises(ConcurrencyError):
        store.append("new", notes("a"), expected_version=1)
    assert store.stream_version("new") == 0
    assert list(store.read_all()) == []


def test_negative_expected_version_is_a_programming_error(store):
    with pytest.raises(ValueError):
        store.append("s", notes("a"), expected_version=-1)
    assert list(store.read_all()) == []


def test_concurrency_error_is_one_line(store):
    store.append("s", notes("a"), expected_version=0)
    with pytest.raises(ConcurrencyError) as info:
        store.append("s", notes("b"), expected_version=0)
    assert "\n" not in str(info.value)


# -- one transaction across streams (a director's cycle) ------------------------------------


def test_append_many_writes_every_stream_with_contiguous_versions(store):
    store.append("world", notes("w1"), expected_version=0)
    recorded = store.append_many(
        [("world", notes("w2", "w3"), 1), ("director", notes("d1"), 0), ("synth", notes("s1"), 0)]
    )
    assert [(r.event.stream_id, r.event.version) for r in recorded] == [
        ("world", 2), ("world", 3), ("director", 1), ("synth", 1),
    ]  # fmt: skip
    positions = [r.position for r in recorded]
    assert positions == sorted(positions) and len(set(positions)) == 4
    assert [e.text for e in store.read_stream("world")] == ["w1", "w2", "w3"]
    assert [r.event.text for r in store.read_all()] == ["w1", "w2", "w3", "d1", "s1"]


@pytest.mark.parametrize("stale", ["world", "synth"])
def test_append_many_with_one_stale_stream_writes_nothing_at_all(store, stale):
    store.append("world", notes("w1"), expected_version=0)
    store.append("synth", notes("s1"), expected_version=0)
    before = _snapshot_of_log(store)
    expected = {"world": 1, "synth": 1}
    expected[stale] = 0  # another writer moved it on since this writer read it
    with pytest.raises(ConcurrencyError):
        store.append_many(
            [("world", notes("w2"), expected["world"]), ("director", notes("d1"), 0),
             ("synth", notes("s2"), expected["synth"])]
        )  # fmt: skip
    assert _snapshot_of_log(store) == before
    assert store.stream_version("director") == 0


def test_append_many_racing_a_single_append_loses_as_a_whole(store):
    """A second store object (another process) appends to one stream between this
    writer's read and its commit: the unique key catches it inside the transaction."""
    writer = other_store(store)
    store.append("world", notes("w1"), expected_version=0)
    assert store.stream_version("world") == 1  # this writer now believes the stream is at 1
    writer.append("world", notes("theirs"), expected_version=1)
    with pytest.raises(ConcurrencyError):
        store.append_many([("director", notes("d1"), 0), ("world", notes("mine"), 1)])
    assert store.stream_version("director") == 0
    assert [e.text for e in store.read_stream("world")] == ["w1", "theirs"]


def test_append_many_refuses_a_stream_named_twice(store):
    with pytest.raises(ValueError):
        store.append_many([("s", notes("a"), 0), ("s", notes("b"), 1)])
    assert list(store.read_all()) == []


# -- snapshots ---------------------------------------------------------------------------


def test_snapshots_latest_and_at_or_below_a_version(store):
    assert store.load_snapshot("s") is None
    store.save_snapshot("s", 5, Counter(count=5, names=["a"]))
    store.save_snapshot("s", 10, Counter(count=10, names=["a", "b"]))
    store.save_snapshot("other", 3, Counter(count=3))

    latest = store.load_snapshot("s")
    assert (latest.stream_id, latest.version, latest.kind) == ("s", 10, "Counter")
    assert Counter.model_validate(latest.data) == Counter(count=10, names=["a", "b"])
    assert latest.schema_version == 1

    assert store.load_snapshot("s", max_version=10).version == 10
    assert store.load_snapshot("s", max_version=9).version == 5
    assert store.load_snapshot("s", max_version=5).data["count"] == 5
    assert store.load_snapshot("s", max_version=4) is None
    assert store.load_snapshot("other").version == 3
    assert store.load_snapshot("nobody") is None


def test_the_latest_snapshot_and_the_events_after_it_are_read_together(store):
    def latest(stream):
        snap, tail = store.load_latest(stream)
        return (None if snap is None else (snap.version, snap.data["count"])), [(e.version, e.text) for e in tail]

    assert latest("s") == (None, [])
    store.append("s", notes("a", "b", "c"), expected_version=0)
    assert latest("s") == (None, [(1, "a"), (2, "b"), (3, "c")])  # no snapshot: the whole stream
    store.save_snapshot("s", 2, Counter(count=2))
    store.save_snapshot("other", 1, Counter(count=9))
    assert latest("s") == ((2, 2), [(3, "c")])
    store.save_snapshot("s", 1, Counter(count=1))  # an older one saved late is not the latest
    store.append("s", notes("d", "e"), expected_version=3)
    assert latest("s") == ((2, 2), [(3, "c"), (4, "d"), (5, "e")])
    store.save_snapshot("s", 5, Counter(count=5))
    assert latest("s") == ((5, 5), [])  # a snapshot at the head: nothing after it
    assert latest("other") == ((1, 9), [])  # a snapshot of a stream with no events
    assert store.stream_version("s") == 5


def test_every_snapshot_is_kept_and_listed_by_version_range(store):
    for v in (3, 10, 5):  # saved out of order: listed by version
        store.save_snapshot("s", v, Counter(count=v))
    store.save_snapshot("other", 4, Counter(count=4))
    assert [(s.stream_id, s.version, s.kind, s.data["count"]) for s in store.list_snapshots("s")] == [
        ("s", 3, "Counter", 3), ("s", 5, "Counter", 5), ("s", 10, "Counter", 10),
    ]
    assert [s.version for s in store.list_snapshots("s", 3, 10)] == [5, 10]  # (after, up to]
    assert [s.version for s in store.list_snapshots("s", 0, 9)] == [3, 5]
    assert [s.version for s in store.list_snapshots("s", 10)] == []
    assert store.list_snapshots("nobody") == []


def test_snapshot_saved_twice_at_one_version_keeps_the_first(store):
    store.save_snapshot("s", 5, Counter(count=5))
    store.save_snapshot("s", 5, Counter(count=5))  # e.g. a restarted actor: no error
    assert store.load_snapshot("s").data["count"] == 5


def test_snapshots_do_not_appear_in_the_log(store):
    store.append("s", notes("a"), expected_version=0)
    store.save_snapshot("s", 1, Counter(count=1))
    assert len(list(store.read_all())) == 1
    assert store.stream_version("s") == 1


# -- following the log -------------------------------------------------------------------


def _append_later(store: EventStore, delay: float, stream: str, events, expected: int):
    def run():
        time.sleep(delay)
        writer = other_store(store)
        try:
            writer.append(stream, events, expected_version=expected)
        finally:
            if writer is not store:
                writer.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_follow_yields_existing_then_new_events(store):
    store.append("s", notes("a", "b"), expected_version=0)
    writer = _append_later(store, 0.5, "s", notes("c", "d"), 2)
    got = []
    started = time.monotonic()
    for r in store.follow(timeout=20, poll_interval=0.05):
        got.append(r)
        if len(got) == 4:
            break
    writer.join(5)
    assert [r.event.text for r in got] == ["a", "b", "c", "d"]
    assert [r.position for r in got] == [r.position for r in store.read_all()]
    assert time.monotonic() - started < 10


def test_follow_from_a_position_with_filters(store):
    store.append("s", [Noted(text="old", run_id="r1")], expected_version=0)
    start = store.max_position() + 1
    store.append("s", [Noted(text="mine", run_id="r1"), Flagged(run_id="r1")], expected_version=1)
    writer = _append_later(
        store,
        0.3,
        "t",
        [Noted(text="other", run_id="r2"), Noted(text="mine2", run_id="r1")],
        0,
    )
    got = []
    for r in store.follow(start, run_id="r1", types=["test.store.Noted"], timeout=20, poll_interval=0.05):
        got.append(r.event.text)
        if len(got) == 2:
            break
    writer.join(5)
    assert got == ["mine", "mine2"]


def test_follow_stops_on_timeout(store):
    store.append("s", notes("a", "b"), expected_version=0)
    started = time.monotonic()
    got = [r.event.text for r in store.follow(timeout=0.6, poll_interval=0.05)]
    elapsed = time.monotonic() - started
    assert got == ["a", "b"]
    assert 0.5 <= elapsed < 5


def test_follow_stops_on_stop_event(store):
    store.append("s", notes("a"), expected_version=0)
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    got = [r.event.text for r in store.follow(stop=stop, poll_interval=0.05)]
    assert got == ["a"]
    assert time.monotonic() - started < 5


def test_follow_with_stop_already_set_yields_nothing_more(store):
    store.append("s", notes("a"), expected_version=0)
    stop = threading.Event()
    stop.set()
    assert len(list(store.follow(stop=stop, timeout=5))) <= 1


def test_follow_ending_by_timeout_leaves_the_callers_stop_event_alone(store):
    stop = threading.Event()
    assert list(store.follow(stop=stop, timeout=0.3, poll_interval=0.05)) == []
    assert not stop.is_set()


def test_follow_sees_events_appended_while_blocked(store):
    """No events at all when following starts: the follower wakes on the first append."""
    writer = _append_later(store, 0.4, "s", notes("late"), 0)
    got = []
    for r in store.follow(timeout=20, poll_interval=0.05):
        got.append(r.event.text)
        break
    writer.join(5)
    assert got == ["late"]


def test_two_followers_see_the_same_log(store):
    store.append("s", notes("a"), expected_version=0)
    results: dict[int, list[str]] = {}

    def follower(k: int) -> None:
        got = []
        for r in store.follow(timeout=20, poll_interval=0.05):
            got.append(r.event.text)
            if len(got) == 3:
                break
        results[k] = got

    threads = [threading.Thread(target=follower, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    store.append("s", notes("b", "c"), expected_version=1)
    for t in threads:
        t.join(20)
    assert results == {0: ["a", "b", "c"], 1: ["a", "b", "c"]}


# -- durability (SQLite, PostgreSQL) -----------------------------------------------------


def test_events_and_snapshots_survive_reopening(durable_store_url):
    with EventStore(durable_store_url) as first:
        recorded = first.append("s", notes("a", "b"), expected_version=0)
        first.save_snapshot("s", 2, Counter(count=2))
    with EventStore(durable_store_url) as second:
        assert [e.text for e in second.read_stream("s")] == ["a", "b"]
        assert [r.position for r in second.read_all()] == [r.position for r in recorded]
        assert second.load_snapshot("s").data["count"] == 2
        with pytest.raises(ConcurrencyError):
            second.append("s", notes("c"), expected_version=1)


def test_unique_event_ids(store):
    store.append("s", notes(*"abcdefgh"), expected_version=0)
    ids = [e.event_id for e in store.read_stream("s")]
    assert len(set(ids)) == 8 and all(isinstance(i, uuid.UUID) for i in ids)
