"""Group commit's pure parts: which appends share a batch, which pass their check, and
the leader/follower queue driven by a writer that touches no database."""

from __future__ import annotations

import threading

import pytest
from eventsourcing.persistence import (
    DataError,
    IntegrityError,
    OperationalError,
    StoredEvent,
)

from events.group_commit import (
    Append,
    Conflict,
    GroupCommitter,
    RecorderWriter,
    plan,
    retrying,
    write_isolating,
)


def ev(stream: str, version: int) -> StoredEvent:
    return StoredEvent(originator_id=stream, originator_version=version, topic="t", state=b"x")


def one(stream: str, expected: int, n: int = 1) -> Append:
    return Append([(stream, expected, [ev(stream, expected + i) for i in range(1, n + 1)])])


def test_plan_keeps_arrival_order_and_defers_a_second_append_to_a_stream():
    a, b, c, d = one("s1", 0), one("s2", 0), one("s1", 1), one("s3", 0)
    batch, later = plan([a, b, c, d], max_batch=10)
    assert batch == [a, b, d]
    assert later == [c]


def test_plan_defers_a_multi_stream_append_that_overlaps_and_respects_max_batch():
    a = one("s1", 0)
    many = Append([("s2", 0, [ev("s2", 1)]), ("s1", 0, [ev("s1", 1)])])
    b, c = one("s3", 0), one("s4", 0)
    batch, later = plan([a, many, b, c], max_batch=2)
    assert batch == [a, b]
    assert later == [many, c]


class FakeRecorder:
    """A recorder's two write methods, over a dict of stream heads."""

    def __init__(self, heads: dict[str, int]) -> None:
        self.heads = heads
        self.position = 0
        self.calls: list[str] = []

    def _put(self, events) -> list[int]:
        out = []
        for e in events:
            self.heads[e.originator_id] = e.originator_version
            self.position += 1
            out.append(self.position)
        return out

    def insert_events(self, stored):
        self.calls.append("insert")
        if any(self.heads.get(e.originator_id, 0) >= e.originator_version for e in stored):
            raise IntegrityError("unique key")
        return self._put(stored)

    def append_checked(self, groups):
        self.calls.append("checked")
        out = []
        for g in groups:
            failed = next(((s, x) for s, x, _ in g if self.heads.get(s, 0) != x), None)
            out.append(failed or self._put([e for _, _, ev_ in g for e in ev_]))
        return out


def test_the_writer_gives_each_append_its_positions_or_its_own_conflict():
    ok, new, gap = one("s1", 2, n=2), one("fresh", 0), one("s2", 5)
    stale = Append([("s1x", 0, [ev("s1x", 1)]), ("s2x", 1, [ev("s2x", 2)])])
    recorder = FakeRecorder({"s1": 2, "s2": 3, "s1x": 0, "s2x": 4})
    RecorderWriter(recorder)([ok, new, gap, stale])
    assert recorder.calls == ["checked"]
    assert (ok.positions, new.positions) == ([1, 2], [3]) and all(a.done for a in (ok, new, gap, stale))
    assert [(a.error.stream_id, a.error.expected_version) for a in (gap, stale)] == [("s2", 5), ("s2x", 1)]


def test_a_lone_known_append_is_a_plain_insert_and_a_moved_stream_its_conflict():
    recorder = FakeRecorder({"s1": 3})
    fresh, moved = Append(one("s2", 0).items, known=True), Append(one("s1", 2).items, known=True)
    RecorderWriter(recorder)([fresh])
    RecorderWriter(recorder)([moved])
    assert recorder.calls == ["insert", "insert"] and fresh.positions == [1]
    assert isinstance(moved.error, Conflict) and moved.error.expected_version == 2 and moved.positions is None


def test_write_isolating_retries_each_append_alone_when_the_batch_fails():
    bad = one("bad", 0)
    good1, good2 = one("g1", 0), one("g2", 0)
    calls: list[list[str]] = []

    def write(batch: list[Append]) -> None:
        calls.append([sorted(a.streams)[0] for a in batch])
        if bad in batch:
            raise DataError("a value the database refuses")
        for a in batch:
            a.positions, a.done = [1], True

    write_isolating(write, [good1, bad, good2])
    assert calls == [["g1", "bad", "g2"], ["g1"], ["bad"], ["g2"]]
    assert good1.positions == [1] and good2.positions == [1]
    assert isinstance(bad.error, DataError) and bad.positions is None


def test_a_lost_connection_is_retried(monkeypatch):
    monkeypatch.setattr("events.group_commit._RETRY_WAIT", 0)
    a = one("s", 0)
    attempts = []

    def write(batch: list[Append]) -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise OperationalError("server closed the connection")
        batch[0].positions, batch[0].done = [5], True

    retrying(write, [a])
    assert len(attempts) == 3 and a.positions == [5]


def test_followers_queued_behind_a_leader_go_in_one_batch():
    """The first writer leads; while its write is held, eight more queue; they all go
    in the next batch, each with its own outcome."""
    release = threading.Event()
    entered = threading.Event()
    batches: list[list[str]] = []

    def write(batch: list[Append]) -> None:
        batches.append([sorted(a.streams)[0] for a in batch])
        if len(batches) == 1:
            entered.set()
            assert release.wait(10)
        for a in batch:
            stream = sorted(a.streams)[0]
            if stream == "loser":
                a.error, a.done = Conflict(stream, 0), True
            else:
                a.positions, a.done = [len(batches)], True

    committer = GroupCommitter(write)
    results: dict[str, object] = {}

    def run(stream: str) -> None:
        try:
            results[stream] = committer.commit(one(stream, 0))
        except Conflict as e:
            results[stream] = e

    first = threading.Thread(target=run, args=("first",))
    first.start()
    assert entered.wait(10)
    names = [f"w{i}" for i in range(7)] + ["loser"]
    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    while True:  # every follower is queued
        with committer._cv:
            if len(committer._queue) == len(names):
                break
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *threads]:
        t.join(10)
    assert batches[0] == ["first"]
    assert sorted(batches[1]) == sorted(names) and len(batches) == 2
    assert results["first"] == [1]
    assert all(results[n] == [2] for n in names[:-1])
    assert isinstance(results["loser"], Conflict)
    assert (committer.batches, committer.appends) == (2, 9)


def test_a_writer_that_raises_unexpectedly_fails_its_batch_not_the_queue():
    calls = []

    def write(batch: list[Append]) -> None:
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("a bug in the writer")
        for a in batch:
            a.positions, a.done = [1], True

    committer = GroupCommitter(write)
    with pytest.raises(RuntimeError, match="a bug"):
        committer.commit(one("s", 0))
    assert committer.commit(one("s", 0)) == [1]  # the next append still goes through


def test_max_batch_must_be_positive():
    with pytest.raises(ValueError, match="max_batch"):
        GroupCommitter(lambda batch: None, max_batch=0)


def test_many_threads_all_get_an_outcome_and_the_lead_passes_on():
    """20 threads, 100 appends each, half of them to a stream shared by pairs of threads
    (so `plan` defers some): everyone finishes, no append is written twice or lost."""
    written: list[tuple[str, int]] = []
    versions: dict[str, int] = {}

    def write(batch: list[Append]) -> None:
        assert len({s for a in batch for s in a.streams}) == sum(len(a.streams) for a in batch)
        for a in batch:
            (stream, expected, events), = a.items
            if versions.get(stream, 0) != expected:
                a.error, a.done = Conflict(stream, expected), True
                continue
            versions[stream] = expected + len(events)
            written.extend((stream, e.originator_version) for e in events)
            a.positions, a.done = [len(written)], True

    committer = GroupCommitter(write, max_batch=7)
    outcomes: list[str] = []

    def run(t: int) -> None:
        mine = 0
        for k in range(100):
            stream = f"pair{t // 2}" if k % 2 else f"own{t}"
            expected = versions.get(stream, 0) if k % 2 else mine
            try:
                committer.commit(one(stream, expected))
                outcomes.append("ok")
                mine += 0 if k % 2 else 1
            except Conflict:
                outcomes.append("conflict")

    threads = [threading.Thread(target=run, args=(t,)) for t in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert len(outcomes) == 2000
    assert len(written) == len(set(written)) == outcomes.count("ok")
    for t in range(20):
        assert versions[f"own{t}"] == 50
    assert committer.appends == 2000 and committer.batches <= 2000
