"""Real concurrency: writers racing to append to one stream at the same expected version.

Each round, every writer reads the stream's version, waits at a barrier until all have
read it, then appends a batch at that version. Exactly one may win; the others must get
ConcurrencyError and leave nothing behind. Batches differ in length, so a losing batch
usually reaches past the winner's: a half-written loser would show as extra versions.

Writers are threads (sharing one store object, or one each) and, on SQLite and
PostgreSQL, separate processes.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter, defaultdict

import pytest

from events import Event, event_type
from events.store import ConcurrencyError, EventStore

STREAM = "contested"


@event_type("test.race.Claimed")
class Claimed(Event):
    writer: int
    round: int
    index: int


def batch_size(writer: int, rnd: int) -> int:
    return 1 + (writer + rnd) % 3


def race(url: str | None, store: EventStore | None, writer: int, rounds: int, barrier, report):
    """One writer's side of the race; `report` receives (round, writer, expected, outcome)."""
    own = store is None
    try:
        store = store or EventStore(url)
    except Exception as e:
        barrier.abort()  # the others fail at once instead of waiting out the barrier
        report((-1, writer, -1, f"error:{type(e).__name__}: {e}"))
        raise
    try:
        for rnd in range(rounds):
            barrier.wait()
            expected = store.stream_version(STREAM)
            barrier.wait()  # everyone has read the same version: now race
            events = [
                Claimed(writer=writer, round=rnd, index=i) for i in range(batch_size(writer, rnd))
            ]
            try:
                store.append(STREAM, events, expected_version=expected)
                outcome = "won"
            except ConcurrencyError as e:
                outcome = "lost:db" if "while appending" in str(e) else "lost:check"
            except Exception as e:  # noqa: BLE001  (report it; the parent fails the test)
                outcome = f"error:{type(e).__name__}: {e}"
            report((rnd, writer, expected, outcome))
    finally:
        if own:
            store.close()


def _process_main(url: str, writer: int, rounds: int, barrier, queue) -> None:
    race(url, None, writer, rounds, barrier, queue.put)


def check_race(store: EventStore, reports: list[tuple], writers: int, rounds: int) -> Counter:
    errors = [r for r in reports if r[3].startswith("error")]
    assert not errors, errors[:3]
    assert len(reports) == writers * rounds
    outcomes = Counter(o for *_, o in reports)

    by_round: dict[int, list[tuple]] = defaultdict(list)
    for r in reports:
        by_round[r[0]].append(r)
    winners = {}
    expected_version = 0
    for rnd in range(rounds):
        rs = by_round[rnd]
        assert {r[2] for r in rs} == {expected_version}, f"round {rnd} read different versions"
        won = [r[1] for r in rs if r[3] == "won"]
        assert len(won) == 1, f"round {rnd}: winners {won}"
        winners[rnd] = won[0]
        expected_version += batch_size(won[0], rnd)

    events = store.read_stream(STREAM)
    assert [e.version for e in events] == list(range(1, expected_version + 1))
    # each round's block is exactly the winner's batch, whole and in order
    want = [
        (rnd, winners[rnd], i) for rnd in range(rounds) for i in range(batch_size(winners[rnd], rnd))
    ]
    assert [(e.round, e.writer, e.index) for e in events] == want
    assert len({e.event_id for e in events}) == len(events)

    log = list(store.read_all())
    positions = [r.position for r in log]
    assert all(p < q for p, q in zip(positions, positions[1:], strict=False))
    assert [(r.event.version, r.event.event_id) for r in log] == [
        (e.version, e.event_id) for e in events
    ]
    print("outcomes", dict(outcomes))
    return outcomes


@pytest.mark.parametrize("writers", [2, 4])
def test_threads_sharing_one_store(store_url, writers):
    rounds = 40
    store = EventStore(store_url)
    try:
        reports: list[tuple] = []
        lock = threading.Lock()

        def report(item):
            with lock:
                reports.append(item)

        barrier = threading.Barrier(writers, timeout=60)
        threads = [
            threading.Thread(target=race, args=(None, store, w, rounds, barrier, report))
            for w in range(writers)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        check_race(store, reports, writers, rounds)
    finally:
        store.close()


def test_threads_with_a_store_each(durable_store_url):
    writers, rounds = 2, 40
    reports: list[tuple] = []
    lock = threading.Lock()

    def report(item):
        with lock:
            reports.append(item)

    barrier = threading.Barrier(writers, timeout=60)
    threads = [
        threading.Thread(target=race, args=(durable_store_url, None, w, rounds, barrier, report))
        for w in range(writers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    with EventStore(durable_store_url) as store:
        check_race(store, reports, writers, rounds)


def test_separate_processes(durable_store_url):
    writers, rounds = 2, 30
    ctx = multiprocessing.get_context("spawn")  # no forking of pool threads and sockets
    barrier = ctx.Barrier(writers, timeout=120)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_process_main, args=(durable_store_url, w, rounds, barrier, queue))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    reports = []
    while len(reports) < writers * rounds:
        reports.append(queue.get(timeout=300))
        if reports[-1][0] == -1:  # a writer could not open the store
            break
    for p in procs:
        p.join(60)
    with EventStore(durable_store_url) as store:
        outcomes = check_race(store, reports, writers, rounds)
    assert outcomes["won"] == rounds
    assert [p.exitcode for p in procs] == [0] * writers


def test_stores_opened_at_once_on_a_fresh_database(durable_store_url):
    """Actors starting together on a new cluster all open the store (and create its
    tables) at the same moment; none may fail."""
    n = 8
    barrier = threading.Barrier(n, timeout=60)
    errors: list[BaseException] = []
    stores: list[EventStore] = []

    def open_store() -> None:
        barrier.wait()
        try:
            stores.append(EventStore(durable_store_url))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=open_store) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, [str(e) for e in errors]
        assert len(stores) == n
        for i, s in enumerate(stores):
            s.append(f"s{i}", [Claimed(writer=i, round=0, index=0)], expected_version=0)
        assert stores[0].max_position() >= n
    finally:
        for s in stores:
            s.close()


def test_conflict_is_caught_by_the_database_not_only_by_the_precheck(store, monkeypatch):
    """The race window: both writers read version 2 and pass the version check, then both
    insert. The store's unique (stream, version) key must stop the second."""
    store.append(STREAM, [Claimed(writer=0, round=0, index=i) for i in range(2)], expected_version=0)
    store.append(STREAM, [Claimed(writer=0, round=1, index=0)], expected_version=2)  # the winner
    before = [(r.position, r.event.version) for r in store.read_all()]
    monkeypatch.setattr(store, "stream_version", lambda stream_id: 2)  # the loser's stale read
    with pytest.raises(ConcurrencyError, match="while appending"):
        store.append(
            STREAM, [Claimed(writer=1, round=1, index=i) for i in range(3)], expected_version=2
        )
    monkeypatch.undo()
    assert [(r.position, r.event.version) for r in store.read_all()] == before
    assert [e.writer for e in store.read_stream(STREAM)] == [0, 0, 0]


@pytest.fixture
def store(store_url):
    s = EventStore(store_url)
    yield s
    s.close()
