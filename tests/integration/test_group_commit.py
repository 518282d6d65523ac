"""Group commit on a real SQLite file and a real PostgreSQL schema.

Threads share one store, as the actors of one process do. To make "these appends went
in one transaction" a fact rather than a hope, some tests hold the first batch's write
until the others have queued behind it (`held_first_batch`); the queued appends then go
in the next batch together. No timing thresholds.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest
from eventsourcing.persistence import StoredEvent

from events import Event, event_type
from events.group_commit import Append, GroupCommitter
from events.store import ConcurrencyError, EventStore
from tests.support.group_commit_writers import Noted, Writer


@event_type("test.group.Odd")
class Odd(Event):
    value: Any = None


@pytest.fixture
def store(durable_store_url):
    s = EventStore(durable_store_url)
    assert s.group is not None, "group commit is on by default on SQLite and PostgreSQL"
    yield s
    s.close()


class held_first_batch:
    """Hold the committer's first write until `n` more appends have queued behind it."""

    def __init__(self, committer: GroupCommitter, n: int) -> None:
        self.committer, self.n = committer, n
        self.inner = committer.write
        self.sizes: list[int] = []
        self.failed = threading.Event()

    def __enter__(self) -> held_first_batch:
        def write(batch: list[Append]) -> None:
            self.sizes.append(len(batch))
            if len(self.sizes) == 1:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    with self.committer._cv:
                        if len(self.committer._queue) >= self.n:
                            break
                    time.sleep(0.005)
                else:
                    self.failed.set()
            self.inner(batch)

        self.committer.write = write
        return self

    def __exit__(self, *exc: object) -> None:
        self.committer.write = self.inner


def run_threads(targets: list[Any]) -> list[Any]:
    """Run each callable in a thread of its own; return what each returned or raised."""
    out: list[Any] = [None] * len(targets)

    def call(i: int) -> None:
        try:
            out[i] = targets[i]()
        except BaseException as e:  # noqa: BLE001
            out[i] = e

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a writer hung"
    return out


def test_racing_writers_one_winner_per_stream_and_version(store):
    """16 threads, 6 rounds, 3 streams: in each round every writer reads a stream's
    version and appends 1-3 events at it. Exactly one writer wins each (stream, round);
    the losers write nothing; versions stay contiguous."""
    writers, rounds, streams = 16, 6, ["a", "b", "c"]
    barrier = threading.Barrier(writers, timeout=60)  # a writer that died breaks it: fail, not hang
    outcomes: list[tuple[int, str, int, str]] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for rnd in range(rounds):
            stream = streams[(w + rnd) % len(streams)]
            barrier.wait()
            expected = store.stream_version(stream)
            barrier.wait()
            events = [Noted(writer=w, index=i) for i in range(1 + (w + rnd) % 3)]
            try:
                store.append(stream, events, expected_version=expected)
                outcome = "won"
            except ConcurrencyError:
                outcome = "lost"
            with lock:
                outcomes.append((rnd, stream, expected, outcome))

    errors = [r for r in run_threads([lambda w=w: writer(w) for w in range(writers)]) if r is not None]
    assert not errors, errors
    wins = Counter((rnd, stream) for rnd, stream, _, o in outcomes if o == "won")
    contested = {(rnd, stream) for rnd, stream, _, _ in outcomes}
    assert set(wins) == contested and set(wins.values()) == {1}
    for stream in streams:
        events = store.read_stream(stream)
        assert [e.version for e in events] == list(range(1, len(events) + 1))
        # Each winner's events sit together, in order: nobody else's landed in between.
        runs: list[tuple[int, list[int]]] = []
        for e in events:
            if runs and runs[-1][0] == e.writer and e.index == len(runs[-1][1]):
                runs[-1][1].append(e.index)
            else:
                runs.append((e.writer, [e.index]))
        assert all(ix == list(range(len(ix))) for _, ix in runs)
    assert store.group.appends > 0


def test_a_conflicting_append_in_a_batch_fails_alone(store):
    store.append("taken", [Noted(writer=0, index=0)], expected_version=0)
    store.append("taken2", [Noted(writer=0, index=0)], expected_version=0)
    store.append("long", [Noted(writer=0, index=i) for i in range(3)], expected_version=0)
    plans = {
        "first": ("first", 0, 1),  # leads the held batch
        "ok1": ("ok1", 0, 2),
        "stale": ("taken", 0, 2),  # the stream is at 1: conflict
        "gap": ("fresh", 4, 1),  # the stream is empty: a gap is refused too
        "reaching": ("long", 1, 4),  # at 3, expected 1: would overlap 2..3 and add 4..5
        "ok2": ("ok2", 0, 3),
        "many": None,  # append_many over two streams, one of them stale: all or nothing
    }

    def call(name: str):
        if name == "many":
            return store.append_many(
                [("m-ok", [Noted(writer=9, index=0)], 0), ("taken2", [Noted(writer=9, index=1)], 0)]
            )
        stream, expected, n = plans[name]
        return store.append(stream, [Noted(writer=len(name), index=i) for i in range(n)], expected)

    names = list(plans)
    results: dict[str, Any] = {}
    with held_first_batch(store.group, len(names) - 1) as held:
        first = threading.Thread(target=lambda: results.__setitem__("first", call("first")))
        first.start()
        while not held.sizes:
            time.sleep(0.005)
        rest = run_threads([lambda n=n: call(n) for n in names[1:]])
        first.join(60)
    assert not held.failed.is_set()
    results.update(zip(names[1:], rest, strict=True))
    assert held.sizes[:2] == [1, len(names) - 1], "the others went in one batch"
    for name in ("stale", "gap", "reaching", "many"):
        assert isinstance(results[name], ConcurrencyError), (name, results[name])
        assert "\n" not in str(results[name])
    for name in ("first", "ok1", "ok2"):
        assert not isinstance(results[name], BaseException), (name, results[name])
    assert [e.version for e in store.read_stream("ok1")] == [1, 2]
    assert [e.version for e in store.read_stream("ok2")] == [1, 2, 3]
    assert [e.writer for e in store.read_stream("taken")] == [0]
    assert [e.writer for e in store.read_stream("taken2")] == [0]
    assert [e.version for e in store.read_stream("long")] == [1, 2, 3]
    assert store.read_stream("fresh") == [] and store.read_stream("m-ok") == []
    # The conflict says where the stream is.
    assert "at version 1, expected 0" in str(results["stale"])


def test_positions_strictly_increase_and_versions_are_contiguous(store):
    writers, appends = 12, 8

    def writer(w: int) -> list[tuple[int, int]]:
        got = []
        for k in range(appends):
            recorded = store.append(
                f"w{w}", [Noted(writer=w, index=i) for i in range(1 + k % 2)], expected_version=len(got)
            )
            got.extend((r.position, r.event.version) for r in recorded)
        return got

    results = run_threads([lambda w=w: writer(w) for w in range(writers)])
    assert not [r for r in results if isinstance(r, BaseException)], results
    log = list(store.read_all())
    positions = [r.position for r in log]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert len(log) == sum(len(r) for r in results)
    by_stream: dict[str, list[int]] = defaultdict(list)
    for r in log:
        by_stream[r.event.stream_id].append(r.event.version)
    for w in range(writers):
        assert by_stream[f"w{w}"] == list(range(1, len(results[w]) + 1))
        # What each append returned is where the event sits in the log.
        assert [p for p, _ in results[w]] == [r.position for r in log if r.event.stream_id == f"w{w}"]


def test_an_event_that_cannot_be_encoded_fails_its_append_alone(store):
    """The bad event is the second of its append: nothing of that append is written, and
    appends made at the same time land."""
    def bad():
        return store.append("bad", [Odd(value=1), Odd(value=object())], expected_version=0)

    def good(w: int):
        return store.append(f"good{w}", [Noted(writer=w, index=0)], expected_version=0)

    results = run_threads([bad, *[lambda w=w: good(w) for w in range(6)]])
    assert isinstance(results[0], TypeError) and "cannot encode" in str(results[0])
    assert store.read_stream("bad") == []
    assert all(len(store.read_stream(f"good{w}")) == 1 for w in range(6))


def test_a_batch_with_a_value_the_database_refuses_does_not_write_half_of_itself(store):
    """An append that the database itself refuses (a state that is not bytes) in a held
    batch with others: its batch is rolled back whole, each append is retried alone, and
    only the bad one fails, with nothing of it written."""
    committer = store.group

    def stored(stream: str, states: list[Any]) -> Append:
        return Append([(stream, 0, [StoredEvent(stream, i, "test.group.Noted", s) for i, s in enumerate(states, 1)])])

    ok = Noted(writer=1, index=0)
    from events.codec import encode_event

    state = encode_event(ok.stamp(stream_id="x", version=1))
    appends = [
        stored("lead", [state]),
        stored("g1", [state, state]),
        stored("broken", [state, {"not": "bytes"}]),
        stored("g2", [state]),
    ]
    with held_first_batch(committer, len(appends) - 1) as held:
        results = {}
        first = threading.Thread(target=lambda: results.__setitem__(0, committer.commit(appends[0])))
        first.start()
        while not held.sizes:
            time.sleep(0.005)
        rest = run_threads([lambda a=a: committer.commit(a) for a in appends[1:]])
        first.join(60)
    assert not held.failed.is_set()
    assert held.sizes[:2] == [1, 3], held.sizes
    assert held.sizes[2:] == [1, 1, 1], "after the batch failed, each append went alone"
    assert isinstance(rest[1], Exception) and not isinstance(rest[1], ConcurrencyError)
    assert store.read_stream("broken") == []
    assert [e.version for e in store.read_stream("g1")] == [1, 2]
    assert [e.version for e in store.read_stream("g2")] == [1]
    assert len(rest[0]) == 2 and len(rest[2]) == 1


def test_group_commit_can_be_turned_off(durable_store_url, monkeypatch):
    sep = "&" if "?" in durable_store_url else "?"
    with EventStore(durable_store_url + f"{sep}group_commit=off") as off:
        assert off.group is None
        off.append("s", [Noted(writer=0, index=0)], expected_version=0)
        with pytest.raises(ConcurrencyError):
            off.append("s", [Noted(writer=0, index=1)], expected_version=0)
    monkeypatch.setenv("CHORUS_GROUP_COMMIT", "off")
    with EventStore(durable_store_url) as off:
        assert off.group is None
    with pytest.raises(ValueError, match="group_commit must be on or off"):
        EventStore(durable_store_url + f"{sep}group_commit=maybe")


# -- across processes: a store writer hosted as a Ray actor ----------------------------------


def test_writers_in_other_processes_share_a_store_writers_transactions(durable_store_url, ray_local):
    """Six Ray actors (processes) append through one store-writer actor: the store's
    group commit serves them all. Each contested version has exactly one winner; every
    stream's versions are contiguous."""
    ray = ray_local
    writer = ray.remote(EventStore).options(max_concurrency=32, num_cpus=0).remote(durable_store_url)
    writers = [ray.remote(Writer).options(num_cpus=0).remote(writer, w) for w in range(6)]
    try:
        rounds = 5
        # The contested stream: writer 0 goes first so every round's winner leaves it at
        # 2 * (round + 1); the others then lose the rounds already taken.
        outcomes = ray.get([w.run.remote(rounds, 15) for w in writers], timeout=300)
        stats = ray.get(writer.group_stats.remote())
        with EventStore(durable_store_url) as reader:
            for w in range(6):
                assert [e.version for e in reader.read_stream(f"own{w}")] == list(range(1, 16))
            contested = reader.read_stream("contested")
        assert [e.version for e in contested] == list(range(1, len(contested) + 1))
        # Each version pair was won by one writer; both events of a win are its own.
        winners = [(a.writer, b.writer) for a, b in zip(contested[::2], contested[1::2], strict=True)]
        assert all(a == b for a, b in winners)
        assert sum(o.count("won") for o in outcomes) == len(contested) // 2 == rounds
        assert stats["appends"] == 6 * 15 + 6 * rounds
        # How many appends shared a transaction depends on timing: on a loaded machine all 120
        # can arrive one after another (seen: 120 batches). Sharing itself is asserted
        # deterministically in process (a held batch, test_a_conflicting_append_in_a_batch_fails_alone);
        # here every append went through the group.
        assert 0 < stats["batches"] <= stats["appends"], stats
    finally:
        for w in writers:
            ray.kill(w)
        ray.get(writer.close.remote())
        ray.kill(writer)
