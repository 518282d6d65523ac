"""The Scheduler's pure core: retries with the defect capsule, checkpoints, escalation,
completion, the token and wall-time budgets, and idempotency by state. A scripted
builder and verifier drive it the way the shell will: ask `next_action`, run the step,
hand the result back as a command, stamp and fold what `decide` returned."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from actors.relay.roadmap import RoadmapItem
from actors.relay.scheduler import (
    BuilderFinished,
    PlanRoadmap,
    RelayState,
    ResolveEscalation,
    SchedulerBehaviour,
    Tick,
    VerifierFinished,
    builder_turn_id,
    next_action,
    verifier_turn_id,
)
from events.base import Event
from actors.relay.events import (
    BatonPacket,
    BatonPassed,
    CheckpointStored,
    DefectCapsule,
    DefectResolved,
    EscalationRaised,
    EscalationResolved,
    RelayBudget,
    RelayStopped,
    RelayTurnStarted,
    RoadmapCompleted,
    RoadmapPlanned,
    TurnVerified,
    VerifierCheck,
    WorkspaceChanged,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
ITEMS = [
    RoadmapItem(title="Add a parser", acceptance_criteria=["parse('1+2') returns 3"], details="in calc.py"),
    RoadmapItem(title="Add a CLI"),
    RoadmapItem(title="Write docs"),
]


class Harness:
    """The shell's part, minus Ray and the store: decide, stamp (a recorded clock a
    minute per event), fold, keep the log."""

    def __init__(self, behaviour: SchedulerBehaviour | None = None) -> None:
        self.behaviour = behaviour or SchedulerBehaviour()
        self.state: RelayState = self.behaviour.initial()
        self.log: list[Event] = []

    def send(self, command) -> list[Event]:
        events = self.behaviour.decide(self.state, command)
        stamped = [
            e.stamp(stream_id="relay:T", version=len(self.log) + i, timestamp=T0 + timedelta(minutes=len(self.log) + i))
            for i, e in enumerate(events, start=1)
        ]
        self.log.extend(stamped)
        self.state = self.behaviour.fold(self.state, stamped)
        return stamped

    def plan(self, items=ITEMS, max_retries=3, budget=RelayBudget(), **more) -> list[Event]:
        return self.send(PlanRoadmap(key="plan", task_id="T", task="a calculator", items=items,
                                     max_retries=max_retries, budget=budget, **more))

    def build(self, path="calc.py", text=None, tokens=10) -> list[Event]:
        turn = self.state.last_turn_id
        text = text if text is not None else f"# turn {self.state.turn_number}\n"
        return self.send(BuilderFinished(
            key=f"built:{turn}", turn_id=turn, tokens=tokens,
            baton=BatonPacket(response_text=text, builder_summary=f"wrote {path} on turn {self.state.turn_number}",
                              files_changed=[path]),
            changes=[{"path": path, "kind": "write", "content": text}],
        ))

    def verify(self, status="PASSED", tokens=5, capsule=True) -> list[Event]:
        n = self.state.turn_number
        defect = None
        if status != "PASSED" and capsule:
            defect = DefectCapsule(defect_id=f"D{n}", defect_type="test", severity="high",
                                   description=f"test_add fails on turn {n}", suggested_fix="carry the one")
        return self.send(VerifierFinished(
            key=f"verified:{self.state.last_turn_id}", turn_id=verifier_turn_id("T", n),
            verified_turn_id=self.state.last_turn_id, status=status, report=f"verdict {status}",
            checks=[VerifierCheck(name="pytest", kind="test", passed=status == "PASSED")],
            defect_capsule=defect, tokens=tokens,
        ))


def types(events: list[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_plan_selects_the_first_item_and_asks_for_a_build():
    h = Harness()
    events = h.plan()
    assert types(events) == ["RoadmapPlanned", "RelayTurnStarted"]
    planned, started = events
    assert planned.roadmap == [i.chunk() for i in ITEMS]
    assert [i["title"] for i in planned.items] == ["Add a parser", "Add a CLI", "Write docs"]
    assert SchedulerBehaviour().fold(RelayState(), [planned]).items == ITEMS  # whole items come back
    assert started.roadmap_index == 0 and started.retry_count == 0 and started.defect_id is None
    assert "parse('1+2') returns 3" in started.roadmap_chunk
    assert started.turn_id == builder_turn_id("T", 1)
    assert next_action(h.state) == "build"
    assert h.state.item == ITEMS[0]
    assert h.state.started_at == T0 + timedelta(minutes=1)
    assert h.plan() == []  # planned once


def test_fails_twice_then_passes_stores_a_checkpoint_resets_retries_and_moves_on():
    h = Harness()
    h.plan(max_retries=3)
    h.build()
    assert next_action(h.state) == "verify"
    first = h.verify("FAILED")
    assert types(first) == ["TurnVerified", "RelayTurnStarted"]
    assert first[1].retry_count == 1 and first[1].roadmap_index == 0 and first[1].defect_id == "D1"
    h.build()
    second = h.verify("RETRY")
    assert second[1].retry_count == 2 and second[1].defect_id == "D2"
    assert h.state.retry_count == 2
    h.build(text="def add(a, b):\n    return a + b\n")
    third = h.verify("PASSED")
    assert types(third) == [
        "TurnVerified", "CheckpointStored", "DefectResolved", "DefectResolved", "RelayTurnStarted"
    ]
    checkpoint, resolved, following = third[1], third[2:4], third[4]
    assert checkpoint.turn_id == builder_turn_id("T", 3)
    assert checkpoint.checkpoint_type == "verification_success"
    assert checkpoint.files == ["calc.py"]
    assert checkpoint.metadata["builder_summary"] == "wrote calc.py on turn 3"
    assert [r.defect_id for r in resolved] == ["D1", "D2"]  # the pass fixed both
    assert {r.turn_id for r in resolved} == {builder_turn_id("T", 3)}
    assert (following.roadmap_index, following.retry_count, following.defect_id) == (1, 0, None)
    assert following.turn_number == 4
    assert h.state.retry_count == 0 and h.state.current_defect is None and h.state.open_defects == []
    assert h.state.item == ITEMS[1] and h.state.passed == 1
    assert h.state.item_status == ["passed", "pending", "pending"]


def test_the_retry_carries_the_defect_capsule_to_the_builder():
    h = Harness()
    h.plan()
    h.build()
    started = h.verify("FAILED")[-1]
    assert isinstance(started, RelayTurnStarted) and started.defect_id == "D1"
    # what the builder prompt is built from: the item, the capsule, the batons
    assert h.state.current_defect is not None
    assert h.state.current_defect.defect_id == "D1"
    assert h.state.current_defect.suggested_fix == "carry the one"
    assert h.state.batons[-1].builder_summary == "wrote calc.py on turn 1"


def test_a_failure_without_a_capsule_still_gets_one_from_the_report():
    h = Harness()
    h.plan()
    h.build()
    verified, started = h.verify("FAILED", capsule=False)
    assert verified.defect_capsule is not None
    assert verified.defect_capsule.defect_type == "test"  # the failed check's kind
    assert verified.defect_capsule.description == "verdict FAILED"
    assert started.defect_id == verified.defect_capsule.defect_id
    assert h.state.current_defect == verified.defect_capsule


def test_escalation_after_max_retries_moves_on_to_the_next_item():
    h = Harness()
    h.plan(max_retries=2)
    for _ in range(2):  # the first try and retry 1 fail: retried
        h.build()
        assert types(h.verify("FAILED"))[-1] == "RelayTurnStarted"
    h.build()
    last = h.verify("FAILED")  # retry 2 fails: retry_count 3 > max_retries 2
    assert types(last) == ["TurnVerified", "WorkspaceChanged", "EscalationRaised", "RelayTurnStarted"]
    escalation, following = last[2], last[3]
    assert escalation.defect_id == "D3" and escalation.turn == 3
    assert "after 2 retries" in escalation.reason
    assert following.roadmap_index == 1 and following.retry_count == 0 and following.defect_id is None
    assert h.state.escalated == 1 and h.state.passed == 0
    assert h.state.current_defect is None
    assert h.state.item_status[0] == "escalated"
    assert not any(isinstance(e, DefectResolved) for e in h.log)
    h.build()
    # item 1's defects stay open: item 2's pass resolves none of them
    assert types(h.verify("PASSED")) == ["TurnVerified", "CheckpointStored", "RelayTurnStarted"]


def test_max_retries_zero_escalates_on_the_first_failure():
    h = Harness()
    h.plan(max_retries=0)
    h.build()
    assert types(h.verify("RETRY")) == ["TurnVerified", "WorkspaceChanged", "EscalationRaised", "RelayTurnStarted"]


def test_roadmap_completed_counts_passed_and_escalated():
    h = Harness()
    h.plan(max_retries=1)
    h.build()
    h.verify("PASSED")  # item 1 passes
    h.build()
    h.verify("FAILED")
    h.build()
    h.verify("FAILED")  # item 2 escalates
    h.build()
    h.verify("FAILED")
    h.build()
    last = h.verify("PASSED")  # item 3 passes on its retry
    assert types(last) == ["TurnVerified", "CheckpointStored", "DefectResolved", "RoadmapCompleted"]
    done = last[-1]
    assert (done.passed, done.escalated) == (2, 1)
    assert h.state.status == "done" and next_action(h.state) is None
    assert h.state.retry_count == 0 and h.state.current_defect is None
    assert h.build() == [] and h.verify() == []  # nothing after the end
    assert sum(isinstance(e, CheckpointStored) for e in h.log) == 2
    assert sum(isinstance(e, EscalationRaised) for e in h.log) == 1


def test_token_budget_stops_the_relay_and_no_turn_starts_after():
    h = Harness()
    h.plan(budget=RelayBudget(max_tokens=40))
    h.build(tokens=10)
    h.verify("FAILED", tokens=10)  # 20 used: retried
    assert h.state.status == "building"
    built = h.build(tokens=25)  # 45 used: over the budget before the verifier runs
    assert types(built) == ["WorkspaceChanged", "BatonPassed", "RelayStopped"]
    stopped = built[-1]
    assert stopped.reason == "budget_exhausted" and stopped.limit == "tokens"
    assert "45 tokens" in stopped.message and "40" in stopped.message
    assert h.state.status == "stopped" and next_action(h.state) is None
    assert h.verify("PASSED") == [] and h.send(Tick(key="t", now_s=1e12)) == []
    started = [e for e in h.log if isinstance(e, RelayTurnStarted)]
    assert len(started) == 2 and h.log[-1] is stopped


def test_token_budget_checked_after_a_verdict_instead_of_the_next_turn():
    h = Harness()
    h.plan(budget=RelayBudget(max_tokens=30))
    h.build(tokens=20)
    last = h.verify("PASSED", tokens=10)  # 30: the checkpoint is stored, no next turn
    assert types(last) == ["TurnVerified", "CheckpointStored", "RelayStopped"]
    assert h.state.passed == 1 and h.state.tokens_used == 30


def test_token_budget_spent_by_a_failed_verdict_stops_instead_of_retrying():
    h = Harness()
    h.plan(budget=RelayBudget(max_tokens=30))
    h.build(tokens=20)
    last = h.verify("FAILED", tokens=15)
    assert types(last) == ["TurnVerified", "RelayStopped"]
    assert h.state.status == "stopped" and h.state.current_defect.defect_id == "D1"


def test_wall_time_budget_via_tick():
    h = Harness()
    h.plan(budget=RelayBudget(max_seconds=600))
    start = h.state.started_at.timestamp()
    assert h.send(Tick(key="t1", now_s=start + 599)) == []
    assert h.state.status == "building"
    stopped = h.send(Tick(key="t2", now_s=start + 601))
    assert types(stopped) == ["RelayStopped"]
    assert stopped[0].limit == "wall_time" and "600s" in stopped[0].message
    assert h.build() == []
    assert not any(isinstance(e, RelayTurnStarted) for e in h.log[2:])


def test_wall_time_without_ticks_stops_at_the_next_result_by_recorded_time():
    h = Harness()  # the harness's clock: a minute per event; the plan is events 1 and 2
    h.plan(budget=RelayBudget(max_seconds=150))
    assert types(h.build()) == ["WorkspaceChanged", "BatonPassed"]  # 1 min on the clock: go on
    last = h.verify("FAILED")  # BatonPassed at minute 4, 3 min after the start: stop, no retry
    assert types(last) == ["TurnVerified", "RelayStopped"]
    assert last[-1].limit == "wall_time" and h.state.status == "stopped"


def test_tick_without_a_wall_time_budget_does_nothing():
    h = Harness()
    h.plan(budget=RelayBudget(max_tokens=100))
    assert h.send(Tick(key="t", now_s=1e12)) == []


def test_a_duplicate_command_for_a_finished_turn_appends_nothing():
    h = Harness()
    h.plan()
    turn = h.state.last_turn_id
    baton = BatonPacket(response_text="x", builder_summary="x")
    built = BuilderFinished(key="b1", turn_id=turn, baton=baton, tokens=3)
    assert types(h.send(built)) == ["BatonPassed"]
    assert h.send(built) == []  # the shell retried after a crash
    assert h.send(built.model_copy(update={"key": "b1-again"})) == []  # even under a new key
    verdict = VerifierFinished(key="v1", turn_id=verifier_turn_id("T", 1), verified_turn_id=turn,
                               status="FAILED", report="no", tokens=1)
    assert types(h.send(verdict)) == ["TurnVerified", "RelayTurnStarted"]
    assert h.send(verdict) == []
    assert h.send(built) == []  # a stale builder result for the old turn
    assert h.state.tokens_used == 4 and h.state.turn_number == 2


def test_a_result_for_the_wrong_turn_is_ignored():
    h = Harness()
    h.plan()
    nothing = BatonPacket(response_text="", builder_summary="")
    stray = BuilderFinished(key="b", turn_id=builder_turn_id("T", 7), baton=nothing)
    assert h.send(stray) == []
    assert h.send(VerifierFinished(key="v", turn_id="v", verified_turn_id=h.state.last_turn_id,
                                   status="PASSED", report="")) == []  # nothing built yet


def test_workspace_state_is_the_fold_of_the_changes():
    h = Harness()
    h.plan()
    h.build(path="a.py", text="one\n")
    h.verify("PASSED")
    h.send(BuilderFinished(key="b2", turn_id=h.state.last_turn_id,
                           baton=BatonPacket(response_text="", builder_summary="rm a"),
                           changes=[{"path": "a.py", "kind": "delete", "content": None},
                                    {"path": "pkg/b.py", "kind": "write", "content": "two\n"}]))
    assert h.state.files == {"pkg/b.py": "two\n"}
    cp = h.verify("PASSED")[1]
    assert cp.files == ["pkg/b.py"]


def test_bad_plans_raise_one_line_value_errors():
    b = SchedulerBehaviour()
    with pytest.raises(ValueError, match="no items"):
        b.decide(b.initial(), PlanRoadmap(key="p", task_id="T", task="x", items=[]))
    with pytest.raises(ValueError, match="max_retries"):
        b.decide(b.initial(), PlanRoadmap(key="p", task_id="T", task="x", items=ITEMS, max_retries=-1))


def test_evolve_is_pure_and_the_log_rebuilds_the_state():
    h = Harness()
    h.plan(max_retries=1, budget=RelayBudget(max_tokens=10_000))
    h.build()
    h.verify("FAILED")
    h.build()
    h.verify("PASSED")
    h.build(path="cli.py")
    b = SchedulerBehaviour()
    once = b.fold(b.initial(), h.log)
    twice = b.fold(b.initial(), h.log)
    assert once == twice == h.state
    # folding does not change the state it started from
    start = b.initial()
    b.fold(start, h.log)
    assert start == RelayState()
    # the state survives a snapshot round trip (what the shell stores)
    assert RelayState.model_validate(once.model_dump(mode="json")) == once
    # and events survive their own round trip
    for e in h.log:
        assert type(e).model_validate(e.model_dump(mode="json")) == e


def test_batons_are_bounded():
    h = Harness()
    h.plan(items=[RoadmapItem(title=f"item {i}") for i in range(8)])
    for _ in range(8):
        h.build()
        h.verify("PASSED")
    assert len(h.state.batons) == 5
    assert h.state.batons[-1].builder_summary == "wrote calc.py on turn 8"
    assert isinstance(h.log[-1], RoadmapCompleted) and h.log[-1].passed == 8


def test_events_carry_tokens_and_the_scheduler_counts_them():
    h = Harness()
    h.plan()
    h.build(tokens=7)
    h.verify("FAILED", tokens=3)
    assert [e.tokens for e in h.log if isinstance(e, (BatonPassed, TurnVerified))] == [7, 3]
    assert h.state.tokens_used == 10
    assert isinstance(h.log[0], RoadmapPlanned)
    assert [isinstance(e, WorkspaceChanged) for e in h.log].count(True) == 1
    assert not any(isinstance(e, RelayStopped) for e in h.log)


def test_the_defect_capsule_reaches_the_next_builder_prompt():
    from actors.relay.baton import baton_context
    from actors.relay.prompts import builder_request

    h = Harness()
    h.plan()
    h.build()
    h.verify("FAILED")
    request = builder_request(h.state.item, context=[], baton=baton_context(h.state.batons),
                              defect=h.state.current_defect, files=h.state.files, model="m", params={})
    prompt = request.messages[-1]["content"]
    assert "test_add fails on turn 1" in prompt and "carry the one" in prompt
    assert "parse('1+2') returns 3" in prompt


def test_a_defect_found_again_is_resolved_once():
    h = Harness()
    h.plan()
    same = DefectCapsule(defect_id="D", defect_type="lint", severity="low", description="unused import")
    for n in (1, 2):
        h.build()
        h.send(VerifierFinished(key=f"v{n}", turn_id=verifier_turn_id("T", n), verified_turn_id=h.state.last_turn_id,
                                status="FAILED", report="ruff", defect_capsule=same))
    assert h.state.open_defects == ["D"]
    h.build()
    assert [e.defect_id for e in h.verify("PASSED") if isinstance(e, DefectResolved)] == ["D"]


def test_a_roadmap_planned_without_whole_items_still_folds():
    planned = RoadmapPlanned(task_id="T", task="x", roadmap=["one", "two"], max_retries=1)
    state = SchedulerBehaviour().evolve(RelayState(), planned)
    assert [i.title for i in state.items] == ["one", "two"] and state.max_retries == 1
    assert state.budget == RelayBudget()


def test_through_the_actor_shell_a_restarted_scheduler_does_not_repeat_a_finished_turn():
    """The shell's part for real (in-memory store): a scheduler that crashed after the
    builder's result was appended is rebuilt from the log, and the result sent again, under
    the same key or a new one, appends nothing."""
    from actors.runtime.shell import ActorShell
    from events.store import EventStore

    with EventStore("memory://") as store:
        shell = ActorShell(SchedulerBehaviour(), "relay:T", store).load()
        shell.handle(PlanRoadmap(key="plan", task_id="T", task="x", items=ITEMS))
        turn = shell.state.last_turn_id
        baton = BatonPacket(response_text="r", builder_summary="s")
        built = BuilderFinished(key=f"built:{turn}", turn_id=turn, baton=baton, tokens=2,
                                changes=[{"path": "a.py", "kind": "write", "content": "1\n"}])
        shell.handle(built)
        version = shell.version
        again = ActorShell(SchedulerBehaviour(), "relay:T", store).load()  # the restarted actor
        assert again.state == shell.state and next_action(again.state) == "verify"
        assert again.state.files == {"a.py": "1\n"}
        again.handle(built)
        again.handle(built.model_copy(update={"key": "built-after-crash"}))
        assert again.version == version and again.state.tokens_used == 2


def test_an_escalated_item_leaves_the_workspace_at_the_last_checkpoint():
    """Seed 004 with issue 34: the failed attempt rolls back, so the next item is built (and
    linted) on the files that passed; a file the attempt added is deleted again."""
    h = Harness()
    h.send(PlanRoadmap(key="plan", task_id="T", task="t", items=ITEMS, max_retries=0, files={"README.md": "hi\n"}))
    h.build(path="calc.py", text="def parse(s):\n    return 3\n")
    h.verify("PASSED")
    checkpoint = dict(h.state.files)
    assert checkpoint == {"README.md": "hi\n", "calc.py": "def parse(s):\n    return 3\n"}
    h.build(path="cli.py", text="import sys  # broken\n")
    h.send(BuilderFinished(
        key="built:more", turn_id=h.state.last_turn_id,
        baton=BatonPacket(response_text="", builder_summary="also broke calc.py"),
        changes=[{"path": "calc.py", "kind": "write", "content": "syntax error("}],
    ))  # a duplicate for the same turn appends nothing: the attempt is cli.py alone
    events = h.verify("FAILED")
    assert types(events) == ["TurnVerified", "WorkspaceChanged", "EscalationRaised", "RelayTurnStarted"]
    rollback, escalation = events[1], events[2]
    assert rollback.turn_id == escalation.escalation_id == "T:escalation:2"
    assert rollback.changes == [{"path": "cli.py", "kind": "delete", "content": None}]
    assert escalation.metadata["rolled_back"] == ["cli.py"]
    assert h.state.files == checkpoint  # the next item starts from the checkpoint
    assert h.state.item_files == checkpoint
    from actors.relay.workspace import fold_workspace

    assert fold_workspace(h.log) == checkpoint  # and so does the log's fold (the git mirror follows it)


def test_a_log_planned_before_the_rollback_existed_escalates_as_it_did():
    h = Harness()
    planned = h.plan(max_retries=0, escalation_rollback=False)[0]
    assert planned.escalation_rollback is False
    h.build()
    assert types(h.verify("FAILED")) == ["TurnVerified", "EscalationRaised", "RelayTurnStarted"]
    assert "calc.py" in h.state.files
    legacy = RoadmapPlanned.model_validate({k: v for k, v in planned.model_dump().items() if k != "escalation_rollback"})
    assert legacy.escalation_rollback is False  # what an old log's event loads as


def test_an_escalation_is_resolved_once_by_a_person():
    h = Harness()
    h.plan(max_retries=0)
    h.build()
    h.verify("FAILED")
    eid = "T:escalation:1"
    assert h.state.escalations == [eid] and h.state.resolved == {}
    with pytest.raises(ValueError, match="no escalation 'T:escalation:9'"):
        h.send(ResolveEscalation(key="resolve:x", escalation_id="T:escalation:9"))
    done = h.send(ResolveEscalation(key="resolve:1", escalation_id=eid, note="wrote it by hand", resolved_by="ada"))
    assert types(done) == ["EscalationResolved"]
    assert done[0].resolution == "wrote it by hand" and done[0].resolved_by == "ada"
    assert h.state.resolved == {eid: "wrote it by hand"}
    assert h.send(ResolveEscalation(key="resolve:2", escalation_id=eid, note="again")) == []  # once
    assert next_action(h.state) == "build"  # the relay goes on as it was
    assert isinstance(done[0], EscalationResolved)
