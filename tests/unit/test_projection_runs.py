"""The runs view: one row per run from its lifecycle events, equal to the scan of the log
that `Client.runs()` made on every call; catching up in pieces equals a rebuild; the
query API (newest first, limit, status and kind filters, one run by id); on memory,
SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.agent.events import StepDecided
from events.base import Event
from events.effects import LlmCompleted, LlmRequested
from events.errors import ErrorInfo
from events.runs import RunCompleted, RunFailed, RunStarted, RunSubmitted, RunWaiting
from events.store import EventStore, Recorded
from projections import ProjectionRunner, RunsProjection, RunsView

T0 = datetime(2026, 2, 1, 9, 0, 0, tzinfo=timezone.utc)
TABLES = RunsProjection.tables
KEYS = ["run_id", "status", "goal", "kind", "forked_from", "submitted_at", "ended_at", "waiting_for", "wake_at"]
ERROR = ErrorInfo(type="actor_died", reason="RuntimeError", message="boom")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class Log:
    """Appends events to streams, keeping each stream's version."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.versions: dict[str, int] = {}

    def add(self, stream: str, *events: Event) -> list[Recorded]:
        recorded = self.store.append(stream, list(events), self.versions.get(stream, 0))
        self.versions[stream] = self.versions.get(stream, 0) + len(events)
        return recorded

    def run(self, run: str, *events: Event) -> None:
        self.add(f"run:{run}", *events)

    def agent_step(self, run: str, i: int, t: float) -> None:
        """Other events of the run, which the view does not read."""
        self.add(
            f"agent:{run}",
            LlmRequested(model="m", messages=[], request_hash=f"h{i}", call_index=i, run_id=run, timestamp=at(t)),
            LlmCompleted(request_hash=f"h{i}", call_index=i, content="{}", run_id=run, timestamp=at(t)),
            StepDecided(iteration=i, thought="t", action="search", args={}, run_id=run, timestamp=at(t)),
        )


def old_scan(store: EventStore, limit: int | None = None, *, started: bool = False) -> list[dict[str, Any]]:
    """`Client.runs()` as it was: every lifecycle event of the log, on every call
    (`started`: RunStarted and RunWaiting read too, making a submitted run "running", a
    started one "waiting")."""
    types = ("RunSubmitted", "RunCompleted", "RunFailed") + (("RunStarted", "RunWaiting") if started else ())
    rows: dict[str, dict[str, Any]] = {}
    for rec in store.read_all(types=types):
        e: Any = rec.event
        if e.type_name == "RunSubmitted":
            rows[e.run_id] = {
                "run_id": e.run_id, "status": "submitted", "goal": e.goal, "kind": e.kind,
                "forked_from": e.forked_from, "submitted_at": e.timestamp, "ended_at": None,
                "waiting_for": None, "wake_at": None,
            }  # fmt: skip
        elif e.type_name == "RunStarted":
            if e.run_id in rows and rows[e.run_id]["status"] in ("submitted", "waiting"):
                rows[e.run_id].update(status="running", waiting_for=None, wake_at=None)
        elif e.type_name == "RunWaiting":
            if e.run_id in rows and rows[e.run_id]["status"] not in ("completed", "failed"):
                rows[e.run_id].update(status="waiting", waiting_for=e.waiting_for, wake_at=e.until)
        elif e.run_id in rows:
            rows[e.run_id]["status"] = "completed" if e.type_name == "RunCompleted" else "failed"
            rows[e.run_id].update(ended_at=e.timestamp, waiting_for=None, wake_at=None)
    out = sorted(rows.values(), key=lambda r: r["submitted_at"], reverse=True)
    return out[:limit] if limit else out


def several_runs(log: Log, offset: float = 0, prefix: str = "") -> None:
    """Completed, failed, running, only submitted, a fork, two submitted at one instant,
    and the end of a run never submitted (run ids `prefix` + name)."""
    o, p = offset, prefix

    def run(name: str, t: float, event: Event) -> None:
        log.run(p + name, event.model_copy(update={"run_id": p + name, "timestamp": at(o + t)}))

    run("done", 0, RunSubmitted(goal="find Registry"))
    run("done", 1, RunStarted(lead_stream=f"agent:{p}done"))
    log.agent_step(p + "done", 1, o + 2)
    run("broke", 3, RunSubmitted(goal="divide by zero", kind="react"))
    run("done", 4, RunCompleted(result="registry.py"))
    run("broke", 5, RunStarted(lead_stream=f"agent:{p}broke"))
    run("broke", 6, RunFailed(error=ERROR))
    run("busy", 7, RunSubmitted(goal="still going", kind="task"))
    run("busy", 8, RunStarted(lead_stream=f"workflow:{p}busy"))
    log.agent_step(p + "busy", 1, o + 9)
    run("fork", 10, RunSubmitted(goal="find Registry", forked_from=f"{p}done@3"))
    run("fork", 11, RunStarted(lead_stream=f"agent:{p}fork"))
    run("fork", 12, RunCompleted(result="shell.py"))
    run("queued", 13, RunSubmitted(goal="waits"))
    run("twin-a", 14, RunSubmitted(goal="same instant"))
    run("twin-b", 14, RunSubmitted(goal="same instant"))
    run("ghost", 15, RunCompleted(result="?"))


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def view_of(store: EventStore, batch_size: int = 500) -> tuple[ProjectionRunner, RunsView]:
    runner = ProjectionRunner(store, [RunsProjection()], batch_size=batch_size)
    runner.run_once()
    return runner, RunsView(runner.views)


def test_the_view_lists_what_the_scan_of_the_log_did(store):
    several_runs(Log(store))
    _, view = view_of(store)
    runs = view.list()
    assert runs == old_scan(store, started=True)
    assert [(r["run_id"], r["status"]) for r in runs] == [
        ("twin-a", "submitted"), ("twin-b", "submitted"), ("queued", "submitted"), ("fork", "completed"),
        ("busy", "running"), ("broke", "failed"), ("done", "completed"),
    ]
    assert all(list(r) == KEYS for r in runs)
    # Without RunStarted it is exactly the old scan: running runs were "submitted" there.
    assert [{**r, "status": "submitted" if r["status"] == "running" else r["status"]} for r in runs] == old_scan(store)
    done = view.get("done")
    assert done == {
        "run_id": "done", "status": "completed", "goal": "find Registry", "kind": "react", "forked_from": None,
        "submitted_at": at(0), "ended_at": at(4), "waiting_for": None, "wake_at": None,
    }
    assert done["submitted_at"].tzinfo is not None
    assert view.get("fork")["forked_from"] == "done@3"  # type: ignore[index]
    assert view.get("busy")["ended_at"] is None  # type: ignore[index]


def test_limit_ordering_and_filters(store):
    several_runs(Log(store))
    _, view = view_of(store)
    for limit in (1, 2, 3, 7, 100):
        assert view.list(limit) == old_scan(store, limit, started=True)
    assert view.list(0) == [] and view.list(-1) == []
    assert [r["run_id"] for r in view.list(status="completed")] == ["fork", "done"]
    assert [r["run_id"] for r in view.list(2, status=["failed", "running"])] == ["busy", "broke"]
    assert [r["run_id"] for r in view.list(status="RUNNING")] == ["busy"]
    assert view.list(status=[]) == []
    assert [r["run_id"] for r in view.list(kind="task")] == ["busy"]
    assert [r["run_id"] for r in view.list(1, status="submitted", kind="react")] == ["twin-a"]
    assert view.list(kind="nobody") == []
    with pytest.raises(ValueError, match="unknown run status 'lost'"):
        view.list(status="lost")


def test_an_unknown_run_and_an_empty_log(store):
    runs = RunsView.open(store)
    assert runs.list() == [] and runs.get("nope") is None
    several_runs(Log(store))
    assert RunsView.open(store).get("ghost") is None  # ended, but never submitted
    assert RunsView.open(store).get("nope") is None


def test_open_catches_up_unless_told_not_to(store):
    log = Log(store)
    log.run("a", RunSubmitted(goal="g", run_id="a", timestamp=at(0)))
    assert RunsView.open(store, catch_up=False).list() == []
    assert [r["run_id"] for r in RunsView.open(store).list()] == ["a"]
    log.run("a", RunCompleted(result="r", run_id="a", timestamp=at(1)))
    assert RunsView.open(store).get("a")["status"] == "completed"  # type: ignore[index]


def test_open_rebuilds_a_view_built_at_another_schema_version(store):
    several_runs(Log(store))
    runner, view = view_of(store)
    expected = view.list()
    with runner.views.transaction() as c:
        c.execute("UPDATE projection_schemas SET schema_version = 0 WHERE name = 'runs'")
        c.execute("DELETE FROM runs")
    assert RunsView.open(store).list() == expected
    assert runner.views.schema_version("runs") == RunsProjection.schema_version


def test_an_ended_run_stays_ended_and_a_resubmitted_run_starts_over_in_its_place(store):
    log = Log(store)
    log.run("a", RunSubmitted(goal="first", run_id="a", timestamp=at(0)))
    log.run("b", RunSubmitted(goal="b", run_id="b", timestamp=at(5)))
    log.run("a", RunFailed(error=ERROR, run_id="a", timestamp=at(1)), RunStarted(lead_stream="x", run_id="a", timestamp=at(2)))
    log.run("b", RunCompleted(result="r", run_id="b", timestamp=at(6)), RunFailed(error=ERROR, run_id="b", timestamp=at(7)))
    _, view = view_of(store)
    assert [(r["run_id"], r["status"], r["ended_at"]) for r in view.list()] == [("b", "failed", at(7)), ("a", "failed", at(1))]
    log.add("other:a", RunSubmitted(goal="again", run_id="a", timestamp=at(5)))  # b's instant: a keeps its place
    _, view = view_of(store)
    assert view.list() == old_scan(store, started=True)
    assert [(r["run_id"], r["goal"], r["status"], r["ended_at"]) for r in view.list()] == [
        ("a", "again", "submitted", None), ("b", "b", "failed", at(7)),
    ]


@pytest.mark.parametrize("batch_size", [1, 2, 5, 500])
def test_catching_up_in_pieces_equals_a_rebuild(store, batch_size):
    log = Log(store)
    runner = ProjectionRunner(store, [RunsProjection()], batch_size=batch_size)
    several_runs(log)
    runner.run_once()
    log.run("queued", RunStarted(lead_stream="agent:queued", run_id="queued", timestamp=at(20)))
    runner.run_once()
    log.run("queued", RunCompleted(result="ok", run_id="queued", timestamp=at(21)))
    several_runs(log, offset=30, prefix="2-")
    runner.run_once()
    incremental = runner.views.dump(TABLES)
    listed = RunsView(runner.views).list()
    assert listed == old_scan(store, started=True)
    [result] = runner.rebuild("runs")
    assert result.position == store.max_position()
    assert runner.views.dump(TABLES) == incremental
    assert RunsView(runner.views).list() == listed


# -- every backend ----------------------------------------------------------------------------


def test_the_view_on_every_backend(store_url):
    """memory, SQLite and PostgreSQL: catching up between appends, in small batches,
    and on a second store object, equals the scan and a rebuild; NUL in text is cleaned
    (PostgreSQL text holds none)."""
    s = EventStore(store_url)
    other = s
    try:
        log = Log(s)
        runner = ProjectionRunner(s, [RunsProjection()], batch_size=3)
        several_runs(log)
        runner.run_once()
        log.run("nul", RunSubmitted(goal="nul \x00 and ünïcode", run_id="nul", timestamp=at(40)))
        other = s if s.backend == "popo" else EventStore(store_url)
        view = RunsView.open(other)
        assert view.get("nul")["goal"] == "nul \ufffd and ünïcode"  # type: ignore[index]
        log.run("queued", RunStarted(lead_stream="agent:queued", run_id="queued", timestamp=at(41)))
        runner.run_once()
        listed = RunsView(runner.views).list()
        scanned = old_scan(s, started=True)
        scanned[0]["goal"] = "nul \ufffd and ünïcode"
        assert listed == scanned
        assert RunsView.open(other).list(3) == listed[:3]
        incremental = runner.views.dump(TABLES)
        [result] = runner.rebuild("runs")
        assert result.position == s.max_position()
        assert runner.views.dump(TABLES) == incremental
        assert RunsView(runner.views).list() == listed
        assert RunsView(runner.views).get("nope") is None
    finally:
        if other is not s:
            other.close()
        s.close()


# -- property: any lifecycle, any cut into batches -----------------------------------------------

KINDS = ("submit", "start", "wait", "complete", "fail", "step")
plans = st.lists(
    st.tuples(st.sampled_from(KINDS), st.sampled_from(["a", "b", "c"]), st.integers(0, 5)), min_size=1, max_size=30
)
_examples = itertools.count()


def event_for(kind: str, run: str, t: int) -> Event:
    when = at(t)
    if kind == "submit":
        return RunSubmitted(goal=f"goal {t}", kind=run, forked_from=f"{run}@{t}" if t % 2 else None, run_id=run, timestamp=when)
    if kind == "start":
        return RunStarted(lead_stream=f"agent:{run}", run_id=run, timestamp=when)
    if kind == "wait":
        return RunWaiting(waiting_for=f"signal {t}", until=at(t + 60) if t % 2 else None, run_id=run, timestamp=when)
    if kind == "complete":
        return RunCompleted(result="r", run_id=run, timestamp=when)
    if kind == "fail":
        return RunFailed(error=ERROR, run_id=run, timestamp=when)
    return StepDecided(iteration=t, thought="t", action="a", args={}, run_id=run, timestamp=when)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans, cuts=st.lists(st.integers(0, 30), max_size=4), batch=st.integers(1, 4))
def test_property_any_log_gives_the_scan_and_pieces_equal_a_rebuild(plan, cuts, batch):
    s = EventStore("memory://")
    try:
        log = Log(s)
        runner = ProjectionRunner(s, [RunsProjection()], batch_size=batch)
        for i, (kind, run, t) in enumerate(plan):
            log.add(f"{kind}:{run}:{next(_examples) % 3}", event_for(kind, run, t))
            if i in cuts:
                runner.run_once()
        runner.run_once()
        listed = RunsView(runner.views).list()
        assert listed == old_scan(s, started=True)
        incremental = runner.views.dump(TABLES)
        runner.rebuild("runs")
        assert runner.views.dump(TABLES) == incremental
    finally:
        s.close()
