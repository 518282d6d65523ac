"""The relay checkpoints view (seed 004's agent_turns, checkpoints, defects and escalations)
over relay event sequences built here (tests/integration/test_relay_run.py fills it from a real run); its queries;
and rebuild-from-zero equal to incremental processing, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from events import Event
from events.store import EventStore, Recorded
from actors.relay.events import (
    BatonPacket,
    BatonPassed,
    CheckpointStored,
    DefectCapsule,
    DefectResolved,
    EscalationRaised,
    EscalationResolved,
    RelayTurnStarted,
    RoadmapCompleted,
    RoadmapPlanned,
    TurnVerified,
    VerifierCheck,
)
from actors.relay.checkpoints import RelayCheckpoints, RelayCheckpointsProjection
from projections import ProjectionRunner

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
TABLES = RelayCheckpointsProjection.tables
ROADMAP = ["Set up project structure", "Create database models", "Implement API endpoints"]


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


class Relay:
    """Writes one task's relay events as the scheduler, builder and verifier would."""

    def __init__(self, store: EventStore, task: str = "T") -> None:
        self.store = store
        self.task = task
        self.stream = f"relay:{task}"
        self.clock = 0.0

    def add(self, *events: Event) -> list[Recorded]:
        stamped = []
        for e in events:
            self.clock += 1
            stamped.append(e.stamp(run_id=self.task, timestamp=at(self.clock)))
        return self.store.append(self.stream, stamped, self.store.stream_version(self.stream))

    def plan(self) -> None:
        self.add(RoadmapPlanned(task_id=self.task, task="Build me a REST API", roadmap=ROADMAP, max_retries=1))

    def start(self, n: int, index: int, retry: int = 0, defect: str | None = None) -> None:
        self.add(
            RelayTurnStarted(
                task_id=self.task, turn_id=f"{self.task}-t{n}-b", turn_number=n, roadmap_index=index,
                roadmap_chunk=ROADMAP[index], retry_count=retry, defect_id=defect,
            )
        )

    def build(self, n: int, files: list[str], **metadata) -> None:
        baton = BatonPacket(
            response_text=f"code for turn {n}", builder_summary=f"turn {n} in brief", files_changed=files,
            verification_hints=[f"run tests {n}"], metadata=metadata,
        )
        self.add(BatonPassed(task_id=self.task, turn_id=f"{self.task}-t{n}-b", turn_number=n, baton=baton))

    def verify(self, n: int, status: str, capsule: DefectCapsule | None = None) -> None:
        checks = [
            VerifierCheck(name="pylint", kind="lint", passed=True),
            VerifierCheck(name="pytest", kind="test", passed=status == "PASSED", details="3 passed"),
        ]
        self.add(
            TurnVerified(
                task_id=self.task, turn_id=f"{self.task}-t{n}-v", verified_turn_id=f"{self.task}-t{n}-b",
                turn_number=n, status=status, report=f"verdict {status}", checks=checks, defect_capsule=capsule,
            )
        )


def capsule(defect_id: str, severity: str = "high", defect_type: str = "test", **metadata) -> DefectCapsule:
    return DefectCapsule(
        defect_id=defect_id, defect_type=defect_type, severity=severity, description=f"{defect_id} broken",
        suggested_fix=f"fix {defect_id}", metadata=metadata,
    )


def relay_task(store: EventStore, task: str = "T") -> Relay:
    """Item 0 passes; item 1 fails, is retried, fails again (RETRY) and is escalated;
    item 2 fails once and passes on its retry, which resolves its defect."""
    r = Relay(store, task)
    r.plan()
    r.start(1, 0)
    r.build(1, ["app/__init__.py"], model="m")
    r.verify(1, "PASSED")
    r.add(CheckpointStored(task_id=task, checkpoint_id=f"{task}-c1", turn_id=f"{task}-t1-b", files=["app/__init__.py"], metadata={"roadmap_index": 0}))
    r.start(2, 1)
    r.build(2, ["app/models.py"])
    r.verify(2, "FAILED", capsule(f"{task}-d1", trace="AssertionError"))
    r.start(3, 1, retry=1, defect=f"{task}-d1")
    r.build(3, ["app/models.py", "tests/test_models.py"])
    r.verify(3, "RETRY", capsule(f"{task}-d1", severity="medium"))
    r.add(EscalationRaised(task_id=task, escalation_id=f"{task}-e1", turn=3, defect_id=f"{task}-d1", reason="retries exhausted", metadata={"retry_count": 2}))
    r.start(4, 2)
    r.build(4, ["app/api.py"])
    r.verify(4, "FAILED", capsule(f"{task}-d2", severity="low", defect_type="lint"))
    r.start(5, 2, retry=1, defect=f"{task}-d2")
    r.build(5, ["app/api.py"])
    r.verify(5, "PASSED")
    r.add(DefectResolved(task_id=task, defect_id=f"{task}-d2", turn_id=f"{task}-t5-b"))
    r.add(CheckpointStored(task_id=task, checkpoint_id=f"{task}-c2", turn_id=f"{task}-t5-b", files=["app/api.py"]))
    r.add(EscalationResolved(task_id=task, escalation_id=f"{task}-e1", resolution="fixed by hand"))
    r.add(RoadmapCompleted(task_id=task, passed=2, escalated=1))
    return r


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def relay_of(store: EventStore, batch_size: int = 500) -> tuple[ProjectionRunner, RelayCheckpoints]:
    runner = ProjectionRunner(store, [RelayCheckpointsProjection()], batch_size=batch_size)
    runner.run_once()
    return runner, RelayCheckpoints(runner.views)


def test_turns_show_each_builder_and_verifier_turn_with_its_verdict(store):
    relay_task(store)
    _, relay = relay_of(store)
    turns = relay.turns("T")
    assert [(t.turn_id, t.agent_role, t.turn_number, t.status) for t in turns] == [
        ("T-t1-b", "builder", 1, "passed"), ("T-t1-v", "verifier", 1, "passed"),
        ("T-t2-b", "builder", 2, "failed"), ("T-t2-v", "verifier", 2, "failed"),
        ("T-t3-b", "builder", 3, "failed"), ("T-t3-v", "verifier", 3, "failed"),  # RETRY is failed
        ("T-t4-b", "builder", 4, "failed"), ("T-t4-v", "verifier", 4, "failed"),
        ("T-t5-b", "builder", 5, "passed"), ("T-t5-v", "verifier", 5, "passed"),
    ]
    b3, v3 = turns[4], turns[5]
    assert (b3.content, b3.roadmap_chunk, b3.files_changed) == (
        "code for turn 3", "Create database models", ["app/models.py", "tests/test_models.py"],
    )
    assert b3.timestamp == at(9)  # when the turn started
    assert b3.metadata == {
        "roadmap_index": 1, "retry_count": 1, "defect_id": "T-d1", "builder_summary": "turn 3 in brief",
        "verification_hints": ["run tests 3"], "verdict": "RETRY", "verified_by": "T-t3-v",
    }
    assert (v3.content, v3.roadmap_chunk, v3.files_changed, v3.timestamp) == (
        "verdict RETRY", "Create database models", ["app/models.py", "tests/test_models.py"], at(11),
    )
    assert v3.metadata == {
        "verdict": "RETRY", "verified_turn_id": "T-t3-b", "defect_id": "T-d1",
        "checks": [
            {"name": "pylint", "kind": "lint", "passed": True, "details": ""},
            {"name": "pytest", "kind": "test", "passed": False, "details": "3 passed"},
        ],
    }
    assert turns[0].metadata["model"] == "m"  # the baton's own metadata
    assert [t.turn_id for t in relay.turns(role="verifier", status="passed")] == ["T-t1-v", "T-t5-v"]
    assert relay.turns("nobody") == []


def test_a_turn_in_progress_is_pending(store):
    r = Relay(store, "P")
    r.start(1, 0)
    _, relay = relay_of(store)
    [turn] = relay.turns("P")
    assert (turn.agent_role, turn.status, turn.content, turn.files_changed) == ("builder", "pending", "", [])
    r.build(1, ["a.py"])
    relay_of(store)
    [turn] = relay.turns("P")
    assert (turn.status, turn.content, turn.files_changed, turn.roadmap_chunk) == (
        "pending", "code for turn 1", ["a.py"], ROADMAP[0],
    )


def test_checkpoints_and_where_a_relay_resumes(store):
    relay_task(store)
    _, relay = relay_of(store)
    c1, c2 = relay.checkpoints("T")
    assert (c1.checkpoint_id, c1.turn_id, c1.checkpoint_type, c1.files, c1.metadata, c1.task_id) == (
        "T-c1", "T-t1-b", "verification_success", ["app/__init__.py"], {"roadmap_index": 0}, "T",
    )
    assert c1.timestamp == at(5)
    assert relay.latest_checkpoint("T") == c2
    assert (c2.turn_id, c2.files) == ("T-t5-b", ["app/api.py"])
    assert relay.latest_checkpoint("nobody") is None


def test_defects_come_from_capsules_and_resolve(store):
    relay_task(store)
    _, relay = relay_of(store)
    d1, d2 = relay.defects("T")
    # d1 was found at turn 2 and again at turn 3: the row follows the latest capsule
    # (its turn, severity) but keeps when it was first found.
    assert (d1.defect_id, d1.turn_id, d1.defect_type, d1.severity, d1.description, d1.resolved) == (
        "T-d1", "T-t3-b", "test", "medium", "T-d1 broken", False,
    )
    assert d1.timestamp == at(8)
    assert d1.metadata == {"suggested_fix": "fix T-d1", "found_by": "T-t3-v"}
    assert (d2.defect_type, d2.severity, d2.resolved) == ("lint", "low", True)
    assert d2.metadata == {"suggested_fix": "fix T-d2", "found_by": "T-t4-v", "resolved_by": "T-t5-b"}
    assert [d.defect_id for d in relay.defects(resolved=False)] == ["T-d1"]
    assert [d.defect_id for d in relay.defects(resolved=True)] == ["T-d2"]
    assert [d.defect_id for d in relay.defects(turn_id="T-t4-b")] == ["T-d2"]


def test_a_defect_found_again_after_it_was_resolved_is_open_again(store):
    r = Relay(store, "A")
    r.start(1, 0)
    r.verify(1, "FAILED", capsule("d"))
    r.add(DefectResolved(task_id="A", defect_id="d", turn_id="A-t2-b"))
    _, relay = relay_of(store)
    assert [d.resolved for d in relay.defects("A")] == [True]
    r.start(3, 0)
    r.verify(3, "FAILED", capsule("d", found_in="turn 3"))
    relay_of(store)
    [d] = relay.defects("A")
    assert (d.resolved, d.turn_id, d.metadata) == (False, "A-t3-b", {"found_in": "turn 3", "suggested_fix": "fix d", "found_by": "A-t3-v"})


def test_escalations_are_raised_and_resolved(store):
    r = relay_task(store)
    _, relay = relay_of(store)
    [e1] = relay.escalations("T")
    assert (e1.escalation_id, e1.task_id, e1.turn, e1.defect_id, e1.resolved) == ("T-e1", "T", 3, "T-d1", True)
    assert e1.metadata == {"retry_count": 2, "reason": "retries exhausted", "resolution": "fixed by hand"}
    assert e1.timestamp == at(12)
    r.add(EscalationRaised(task_id="T", escalation_id="T-e2", turn=9, reason="stuck"))
    relay_of(store)
    assert [(e.escalation_id, e.defect_id) for e in relay.escalations(resolved=False)] == [("T-e2", None)]


def test_events_out_of_the_usual_order(store):
    """A baton with no turn start (a log cut short) still makes its row; a verdict on an
    unknown builder turn makes only the verifier's row; resolving unknown defects or
    escalations changes nothing; a checkpoint id stored twice keeps the first."""
    r = Relay(store, "X")
    r.build(1, ["x.py"])
    r.verify(2, "FAILED", capsule("dx"))
    r.add(DefectResolved(task_id="X", defect_id="unknown", turn_id="X-t1-b"))
    r.add(EscalationResolved(task_id="X", escalation_id="unknown"))
    r.add(CheckpointStored(task_id="X", checkpoint_id="c", turn_id="X-t1-b", files=["first"]))
    r.add(CheckpointStored(task_id="X", checkpoint_id="c", turn_id="X-t1-b", files=["second"]))
    _, relay = relay_of(store)
    assert [(t.turn_id, t.agent_role, t.status, t.roadmap_chunk) for t in relay.turns()] == [
        ("X-t1-b", "builder", "pending", ""),
        ("X-t2-v", "verifier", "failed", ""),
    ]
    assert [(d.defect_id, d.turn_id, d.resolved) for d in relay.defects()] == [("dx", "X-t2-b", False)]
    assert relay.escalations() == []
    assert [c.files for c in relay.checkpoints()] == [["first"]]


def test_relay_events_keep_the_seed_rules():
    with pytest.raises(ValidationError, match="a PASSED verdict carries no defect capsule"):
        TurnVerified(task_id="T", turn_id="v", verified_turn_id="b", turn_number=1, status="PASSED", report="", defect_capsule=capsule("d"))
    with pytest.raises(ValidationError):
        TurnVerified(task_id="T", turn_id="v", verified_turn_id="b", turn_number=1, status="OK", report="")
    with pytest.raises(ValidationError):
        capsule("d", severity="urgent")
    with pytest.raises(ValidationError):
        capsule("d", defect_type="style")


def test_relay_events_round_trip_through_the_store(store):
    relay_task(store)
    events = store.read_stream("relay:T")
    again = EventStore("memory://")
    try:
        again.append("relay:T", events, 0)
        assert [e.same_fact(f) for e, f in zip(events, again.read_stream("relay:T"), strict=True)] == [True] * len(events)
    finally:
        again.close()
    verdict = next(e for e in events if isinstance(e, TurnVerified) and e.defect_capsule is not None)
    assert verdict.defect_capsule == capsule("T-d1", trace="AssertionError")
    assert isinstance(verdict.checks[0], VerifierCheck)


def test_open_catches_up(store):
    relay_task(store)
    assert RelayCheckpoints.open(store, catch_up=False).turns() == []
    assert len(RelayCheckpoints.open(store).turns()) == 10


# -- rebuild from zero equals incremental ------------------------------------------------------


def test_rebuilding_gives_the_same_tables_on_every_backend(store_url):
    """memory, SQLite and PostgreSQL: two tasks' relays appended while a runner catches up
    in small batches; a rebuild from position 0 gives the same rows and the same answers."""
    s = EventStore(store_url)
    try:
        runner = ProjectionRunner(s, [RelayCheckpointsProjection()], batch_size=4)
        relay_task(s, "T")
        runner.run_once()
        other = relay_task(s, "U")
        other.start(6, 2)
        baton = BatonPacket(response_text="nul \x00 here", builder_summary="", files_changed=["f\x00"])
        other.add(BatonPassed(task_id="U", turn_id="U-t6-b", turn_number=6, baton=baton))
        runner.run_once()
        incremental = runner.views.dump(TABLES)
        relay = RelayCheckpoints(runner.views)
        answers = (relay.turns(), relay.checkpoints(), relay.defects(), relay.escalations())
        assert [len(a) for a in answers] == [21, 4, 4, 2]
        assert {t.task_id for t in relay.turns()} == {"T", "U"}
        assert relay.latest_checkpoint("U").checkpoint_id == "U-c2"
        last = relay.turns("U")[-1]
        assert (last.content, last.files_changed) == ("nul \ufffd here", ["f\x00"])  # PostgreSQL text holds no NUL; JSON keeps it

        [result] = runner.rebuild("relay")
        assert result.position == s.max_position()
        assert runner.views.dump(TABLES) == incremental
        assert (relay.turns(), relay.checkpoints(), relay.defects(), relay.escalations()) == answers
    finally:
        s.close()


_examples = itertools.count()
KINDS = ("start", "build", "pass", "fail", "retry", "checkpoint", "resolve", "escalate", "settle")
plans = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(1, 4), st.sampled_from(["d1", "d2", "d3"]), st.text(max_size=5)),
    min_size=1,
    max_size=40,
)


def relay_event(task: str, kind: str, n: int, defect: str, text: str) -> Event:
    b, v = f"{task}-t{n}-b", f"{task}-t{n}-v"
    if kind == "start":
        return RelayTurnStarted(task_id=task, turn_id=b, turn_number=n, roadmap_index=n % 3, roadmap_chunk=text, defect_id=defect)
    if kind == "build":
        baton = BatonPacket(response_text=text, builder_summary=text, files_changed=[text], metadata={"k": text})
        return BatonPassed(task_id=task, turn_id=b, turn_number=n, baton=baton)
    if kind in ("pass", "fail", "retry"):
        status = {"pass": "PASSED", "fail": "FAILED", "retry": "RETRY"}[kind]
        found = None if kind == "pass" else capsule(defect, note=text)
        return TurnVerified(task_id=task, turn_id=v, verified_turn_id=b, turn_number=n, status=status, report=text, defect_capsule=found)
    if kind == "checkpoint":
        return CheckpointStored(task_id=task, checkpoint_id=f"c{n}", turn_id=b, files=[text])
    if kind == "resolve":
        return DefectResolved(task_id=task, defect_id=defect, turn_id=b)
    if kind == "escalate":
        return EscalationRaised(task_id=task, escalation_id=f"e{n}", turn=n, defect_id=defect, reason=text)
    return EscalationResolved(task_id=task, escalation_id=f"e{n}", resolution=text)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans, cuts=st.sets(st.integers(0, 39)), batch=st.integers(1, 6))
def test_property_incremental_processing_equals_a_rebuild(plan, cuts, batch):
    """Random relay events (repeats, verdicts before batons, resolutions of unknown ids
    included), caught up at random points in random batch sizes, equal a rebuild."""
    with EventStore("memory://") as s:
        task = f"task{next(_examples)}"
        runner = ProjectionRunner(s, [RelayCheckpointsProjection()], batch_size=batch)
        for i, (kind, n, defect, text) in enumerate(plan):
            s.append(f"relay:{task}", [relay_event(task, kind, n, defect, text)], i)
            if i in cuts:
                runner.run_once()
        runner.run_once()
        incremental = runner.views.dump(TABLES)
        runner.rebuild("relay")
        assert runner.views.dump(TABLES) == incremental
        runner.views.close()
