"""The actor shell and the run lifecycle, on the in-memory and SQLite stores (no Ray)."""

from __future__ import annotations

import pytest

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Submit, run_stream
from actors.runtime.shell import ActorShell, rebuild
from events.base import Event, State
from events.errors import ErrorInfo
from events.registry import event_type
from events.store import ConcurrencyError, EventStore


@event_type("test.Added")
class Added(Event):
    amount: int


class Counter(State):
    total: int = 0
    count: int = 0


class Add(Command):
    amount: int


class CounterBehaviour(Behaviour[Counter]):
    state_type = Counter

    def decide(self, state: Counter, command: Command) -> list[Event]:
        assert isinstance(command, Add)
        return [Added(amount=command.amount)]

    def evolve(self, state: Counter, event: Event) -> Counter:
        assert isinstance(event, Added)
        return Counter(total=state.total + event.amount, count=state.count + 1)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'c.db'}"
    with EventStore(url) as s:
        yield s


def test_commands_append_and_fold(store):
    shell = ActorShell(CounterBehaviour(), "counter-1", store, run_id="r1").load()
    shell.handle(Add(key="a", amount=2))
    shell.handle(Add(key="b", amount=5))
    assert shell.state == Counter(total=7, count=2)
    events = store.read_stream("counter-1")
    assert [e.version for e in events] == [1, 2]
    assert all(e.run_id == "r1" for e in events)
    assert [e.command_id for e in events] == ["a", "b"]


def test_same_key_applies_once_even_after_reload(store):
    shell = ActorShell(CounterBehaviour(), "c", store).load()
    first = shell.handle(Add(key="k", amount=3))
    again = shell.handle(Add(key="k", amount=3))
    assert [e.event_id for e in again] == [e.event_id for e in first]
    restarted = ActorShell(CounterBehaviour(), "c", store).load()  # as after a crash
    restarted.handle(Add(key="k", amount=3))
    assert restarted.state.total == 3
    assert store.stream_version("c") == 1


def test_snapshots_bound_rehydration(store):
    shell = ActorShell(CounterBehaviour(), "c", store, snapshot_every=10).load()
    for i in range(25):
        shell.handle(Add(key=f"k{i}", amount=1))
    fresh = ActorShell(CounterBehaviour(), "c", store, snapshot_every=10).load()
    assert fresh.state == shell.state == Counter(total=25, count=25)
    assert fresh.replayed_on_load == 5  # snapshot at 20, then the 5-event tail
    fresh.handle(Add(key="k3", amount=1))  # a key applied before the snapshot is still known
    assert fresh.state.total == 25
    assert fresh.state == rebuild(CounterBehaviour(), store.read_stream("c"))


def test_a_snapshot_of_another_schema_version_is_not_used(store, monkeypatch):
    shell = ActorShell(CounterBehaviour(), "c", store, snapshot_every=10).load()
    for i in range(12):
        shell.handle(Add(key=f"k{i}", amount=2))
    monkeypatch.setattr(Counter, "schema_version", Counter.schema_version + 1)  # the model moved on
    fresh = ActorShell(CounterBehaviour(), "c", store).load()
    assert fresh.replayed_on_load == 12  # the whole stream, not the snapshot at 10 and its tail
    assert fresh.state == Counter(total=24, count=12)
    assert fresh.applied("k0") is not None  # keys rebuilt from the events, too


def test_a_snapshot_carries_the_most_recent_keys_and_the_tail_adds_its_own(store):
    from actors.runtime.shell import SNAPSHOT_KEYS

    n = SNAPSHOT_KEYS + 30
    shell = ActorShell(CounterBehaviour(), "c", store, snapshot_every=n).load()
    for i in range(n + 5):  # a snapshot at n, five events after it
        shell.handle(Add(key=f"k{i}", amount=1))
    fresh = ActorShell(CounterBehaviour(), "c", store).load()
    assert fresh.replayed_on_load == 5
    remembered = list(fresh.keys)
    assert remembered == [f"k{i}" for i in range(n - SNAPSHOT_KEYS, n + 5)]  # oldest first
    fresh.handle(Add(key=f"k{n - 1}", amount=1))  # the command in flight at the snapshot: known
    fresh.handle(Add(key=f"k{n + 4}", amount=1))  # the last one: known
    assert store.stream_version("c") == n + 5 and fresh.state.total == n + 5


def test_the_oldest_key_is_forgotten_first_and_a_key_used_again_is_the_newest(store, monkeypatch):
    monkeypatch.setattr("actors.runtime.shell.MAX_REMEMBERED_KEYS", 3)
    shell = ActorShell(CounterBehaviour(), "c", store, snapshot_every=0).load()
    for key in ("a", "b", "c"):
        shell.handle(Add(key=key, amount=1))
    shell.record([Added(amount=1)], "a")  # "a" appended to again: now the most recent
    shell.handle(Add(key="d", amount=1))  # one too many: "b" goes, not "a"
    assert list(shell.keys) == ["c", "a", "d"]
    assert shell.keys["a"] == (1, 4)  # its span runs from its first event to its last
    assert ActorShell(CounterBehaviour(), "c", store).load().keys == shell.keys  # the same from the log


def test_stale_shell_loses_race_and_retries_by_rereading(store):
    a = ActorShell(CounterBehaviour(), "c", store).load()
    b = ActorShell(CounterBehaviour(), "c", store).load()
    a.handle(Add(key="x", amount=1))
    b.handle(Add(key="y", amount=10))  # b was at version 0: conflict, reload, decide again
    assert [e.command_id for e in store.read_stream("c")] == ["x", "y"]
    assert b.state.total == 11
    with pytest.raises(ConcurrencyError):
        store.append("c", [Added(amount=1)], expected_version=1)


def test_run_lifecycle_is_idempotent_by_state(store):
    run = ActorShell(RunLifecycle(), run_stream("r"), store, run_id="r").load()
    run.handle(Submit(key="submit", goal="g"))
    run.handle(Start(key="start", lead_stream="agent:r"))
    run.handle(Start(key="start-again", lead_stream="agent:r"))
    run.handle(Complete(key="finish", result="<answer>42</answer>"))
    err = ErrorInfo(type="x", reason="y", message="z")
    run.handle(Fail(key="late-failure", error=err))
    types = [e.type_name for e in store.read_stream(run_stream("r"))]
    assert types == ["RunSubmitted", "RunStarted", "RunCompleted"]
    assert run.state.status == "completed"
    assert run.state.result == "<answer>42</answer>"
