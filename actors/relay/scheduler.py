"""The Scheduler (seed 004): the relay's single source of truth, as a pure decide/evolve.

The shell (actors.relay.run's `drive_relay`, served in one process or on the RelayActor)
asks `next_action(state)` what to do, runs the Builder or the Verifier, and hands their
recorded results back as commands; `decide` turns each into the relay's events:

    PlanRoadmap       RoadmapPlanned, WorkspaceChanged (the files the workspace held
                      already, as turn `start_turn_id`), RelayTurnStarted for roadmap[0]
    BuilderFinished   WorkspaceChanged (if any file changed), BatonPassed
    VerifierFinished  TurnVerified, then
                        PASSED: CheckpointStored, DefectResolved for each defect the
                                item's earlier turns found,
                                the next item with the retry count reset
                        FAILED / RETRY: retry_count + 1; while <= max_retries a new
                                RelayTurnStarted for the same item carrying the defect,
                                else the rollback and EscalationRaised, and the next item
                      the next item is RelayTurnStarted, or RoadmapCompleted after the last
    Tick              nothing, or RelayStopped once the wall-time budget has run out
    ResolveEscalation EscalationResolved: a person dealt with an escalation (its note,
                      who); nothing for one resolved already; ValueError for an id the
                      relay never raised. Any time, the relay running or ended.

An escalated item's failed attempt does not stay: before EscalationRaised a
WorkspaceChanged (turn id: the escalation's id) returns the workspace to the files the item
started from, the last checkpoint's (or the previous rollback's), so the next item is built
and linted on code that passed, and the git mirror follows. This is a named behaviour
change: RoadmapPlanned records `escalation_rollback` (True for every relay planned since),
and a log written before it, without the flag, replays without the rollback.

The budget (tokens and wall time) covers the whole relay: when it runs out the relay
ends with RelayStopped(reason "budget_exhausted") instead of starting another turn.

Wall time runs from the first event's recorded timestamp. A Tick (the shell's clock
reading, in POSIX seconds) stops the relay as soon as it is over; without Ticks it stops at
the next builder or verifier result, measured to the last event's recorded timestamp.

Idempotency is by state as well as by command key: a BuilderFinished or VerifierFinished
for a turn that is not the one awaited (a retry after a crash, a late duplicate)
appends nothing. This module never reads a clock; ids are derived from the task and the
turn number, so a replay decides the same ids.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from actors.relay.roadmap import RoadmapItem
from actors.relay.workspace import apply_changes, changes_between, digest
from actors.runtime.behaviour import Behaviour, Command
from events.base import Event, State
from actors.relay.events import (
    BatonPacket,
    EscalationResolved,
    BatonPassed,
    CheckpointStored,
    DefectCapsule,
    DefectResolved,
    EscalationRaised,
    RelayBudget,
    RelayStopped,
    RelayTurnStarted,
    RoadmapCompleted,
    RoadmapPlanned,
    TurnVerified,
    VerifierCheck,
    VerifierStatus,
    WorkspaceChanged,
)

RelayStatus = Literal["new", "building", "verifying", "done", "stopped"]
ItemStatus = Literal["pending", "passed", "escalated"]
MAX_BATONS = 5  # the batons a builder prompt sees: the seed's bounded memory


def builder_turn_id(task_id: str, turn_number: int) -> str:
    return f"{task_id}:turn:{turn_number}"


def start_turn_id(task_id: str) -> str:
    """The turn that recorded the files the workspace held before the relay began."""
    return f"{task_id}:start"


def verifier_turn_id(task_id: str, turn_number: int) -> str:
    """The id the shell gives the verifier's turn on builder turn `turn_number`."""
    return f"{task_id}:verify:{turn_number}"


class RelayState(State):
    """The relay stream's fold: where the roadmap stands, what the next builder prompt
    needs (item, current defect, batons, files), and what the budget has spent."""

    task_id: str = ""
    task: str = ""
    items: list[RoadmapItem] = []
    item_status: list[ItemStatus] = []
    index: int = 0  # N: the roadmap item being worked on
    turn_number: int = 0  # of the current builder turn (1-based; 0 before the first)
    last_turn_id: str | None = None  # the current builder turn
    retry_count: int = 0
    max_retries: int = 3
    current_defect: DefectCapsule | None = None  # what the current (retry) turn must fix
    open_defects: list[str] = []  # ids of the current item's defects: a pass resolves them all
    batons: list[BatonPacket] = []  # the last MAX_BATONS, oldest first
    status: RelayStatus = "new"
    passed: int = 0
    escalated: int = 0
    tokens_used: int = 0
    started_at: datetime | None = None  # the first event's recorded timestamp
    last_at: datetime | None = None  # the latest event's: recorded time, for the wall-time budget
    budget: RelayBudget = RelayBudget()
    stop_reason: str | None = None
    files: dict[str, str] = {}  # the workspace: the fold of WorkspaceChanged
    item_files: dict[str, str] = {}  # the workspace when the current item's first turn began
    escalation_rollback: bool = False  # as RoadmapPlanned recorded it (see the module's doc)
    escalations: list[str] = []  # ids raised, in order
    resolved: dict[str, str] = {}  # escalation id -> the person's note

    @property
    def item(self) -> RoadmapItem | None:
        """The roadmap item the current turn works on."""
        return self.items[self.index] if self.status in ("building", "verifying") else None


# -- commands --------------------------------------------------------------------------------


class PlanRoadmap(Command):
    task_id: str
    task: str
    items: list[RoadmapItem]
    max_retries: int = 3
    budget: RelayBudget = RelayBudget()
    files: dict[str, str] = {}  # what the workspace held already (read and recorded by the shell)
    escalation_rollback: bool = True  # False only to replay a log planned before it existed


class BuilderFinished(Command):
    turn_id: str  # the builder turn, as RelayTurnStarted named it
    baton: BatonPacket
    changes: list[dict[str, Any]] = []  # {path, kind, content}: see actors.relay.events.WorkspaceChanged
    tokens: int = 0


class VerifierFinished(Command):
    turn_id: str  # the verifier's own turn (verifier_turn_id)
    verified_turn_id: str
    status: VerifierStatus
    report: str
    checks: list[VerifierCheck] = []
    defect_capsule: DefectCapsule | None = None
    tokens: int = 0


class ResolveEscalation(Command):
    """A person's answer to an escalation: `note` what they did or decided, `resolved_by`
    who (a name, or which API token)."""

    escalation_id: str
    note: str = ""
    resolved_by: str = ""


class Tick(Command):
    """A clock reading (POSIX seconds) from the shell, for the wall-time budget."""

    now_s: float


# -- the behaviour ---------------------------------------------------------------------------


def next_action(state: RelayState) -> Literal["build", "verify"] | None:
    """What the shell runs next: the Builder on `state.item` (with `state.current_defect`
    and `state.batons` for its prompt), the Verifier on the turn `state.last_turn_id`, or
    nothing (not planned yet, done, or stopped)."""
    return {"building": "build", "verifying": "verify"}.get(state.status)  # type: ignore[return-value]


class SchedulerBehaviour(Behaviour[RelayState]):
    name = "relay"
    state_type = RelayState

    def decide(self, state: RelayState, command: Command) -> list[Event]:
        if isinstance(command, PlanRoadmap):
            return _plan(state, command)
        if isinstance(command, BuilderFinished):
            return _built(state, command)
        if isinstance(command, VerifierFinished):
            return _verified(state, command)
        if isinstance(command, Tick):
            return _tick(state, command)
        if isinstance(command, ResolveEscalation):
            return _resolve(state, command)
        raise TypeError(f"the relay scheduler cannot handle {type(command).__name__}")

    def evolve(self, state: RelayState, event: Event) -> RelayState:
        state = state.model_copy(update={"started_at": state.started_at or event.timestamp, "last_at": event.timestamp})
        if isinstance(event, RoadmapPlanned):
            if event.items:
                items = [RoadmapItem.model_validate(i) for i in event.items]
            else:
                items = [RoadmapItem(title=text) for text in event.roadmap]
            return state.model_copy(
                update={
                    "task_id": event.task_id,
                    "task": event.task,
                    "items": items,
                    "item_status": ["pending"] * len(items),
                    "max_retries": event.max_retries,
                    "budget": event.budget,
                    "escalation_rollback": event.escalation_rollback,
                }
            )
        if isinstance(event, RelayTurnStarted):
            return state.model_copy(
                update={
                    "status": "building",
                    "index": event.roadmap_index,
                    "turn_number": event.turn_number,
                    "last_turn_id": event.turn_id,
                    "retry_count": event.retry_count,
                    "current_defect": state.current_defect if event.defect_id else None,
                    # the files as the item found them: a retry starts over from these
                    "item_files": state.item_files if event.retry_count else state.files,
                }
            )
        if isinstance(event, WorkspaceChanged):
            return state.model_copy(update={"files": apply_changes(state.files, event.changes)})
        if isinstance(event, BatonPassed):
            return state.model_copy(
                update={
                    "status": "verifying",
                    "batons": [*state.batons, event.baton][-MAX_BATONS:],
                    "tokens_used": state.tokens_used + event.tokens,
                }
            )
        if isinstance(event, TurnVerified):
            update: dict[str, Any] = {"tokens_used": state.tokens_used + event.tokens}
            capsule = event.defect_capsule
            if capsule is not None:
                update["current_defect"] = capsule
                if capsule.defect_id not in state.open_defects:
                    update["open_defects"] = [*state.open_defects, capsule.defect_id]
            return state.model_copy(update=update)
        if isinstance(event, CheckpointStored):
            return _close_item(state, "passed")
        if isinstance(event, EscalationRaised):
            closed = _close_item(state, "escalated")
            return closed.model_copy(update={"escalations": [*state.escalations, event.escalation_id]})
        if isinstance(event, EscalationResolved):
            return state.model_copy(update={"resolved": {**state.resolved, event.escalation_id: event.resolution}})
        if isinstance(event, DefectResolved):
            current = state.current_defect
            return state.model_copy(
                update={
                    "open_defects": [d for d in state.open_defects if d != event.defect_id],
                    "current_defect": None if current and current.defect_id == event.defect_id else current,
                }
            )
        if isinstance(event, RoadmapCompleted):
            return state.model_copy(update={"status": "done"})
        if isinstance(event, RelayStopped):
            return state.model_copy(update={"status": "stopped", "stop_reason": event.message})
        return state


def _close_item(state: RelayState, outcome: ItemStatus) -> RelayState:
    statuses = list(state.item_status)
    statuses[state.index] = outcome
    return state.model_copy(
        update={
            "item_status": statuses,
            "passed": state.passed + (outcome == "passed"),
            "escalated": state.escalated + (outcome == "escalated"),
            "retry_count": 0,
            "current_defect": None,
            "open_defects": [],
        }
    )


# -- decisions -------------------------------------------------------------------------------


def _plan(state: RelayState, c: PlanRoadmap) -> list[Event]:
    if state.items:
        return []  # planned already
    if not c.items:
        raise ValueError("the roadmap has no items")
    if c.max_retries < 0:
        raise ValueError(f"max_retries must be 0 or more, not {c.max_retries}")
    planned = RoadmapPlanned(
        task_id=c.task_id,
        task=c.task,
        roadmap=[i.chunk() for i in c.items],
        max_retries=c.max_retries,
        items=[i.recorded() for i in c.items],
        budget=c.budget,
        escalation_rollback=c.escalation_rollback,
    )
    events: list[Event] = [planned]
    if c.files:
        start = changes_between({}, c.files)
        events.append(WorkspaceChanged(task_id=c.task_id, turn_id=start_turn_id(c.task_id), changes=start))
    return [*events, _turn(c.task_id, 1, 0, c.items[0])]


def _built(state: RelayState, c: BuilderFinished) -> list[Event]:
    if state.status != "building" or c.turn_id != state.last_turn_id:
        return []  # not the turn awaited: a duplicate after a crash, or a stale one
    events: list[Event] = []
    if c.changes:
        events.append(WorkspaceChanged(task_id=state.task_id, turn_id=c.turn_id, changes=c.changes))
    events.append(
        BatonPassed(
            task_id=state.task_id, turn_id=c.turn_id, turn_number=state.turn_number, baton=c.baton, tokens=c.tokens
        )
    )
    stop = _stop(state, state.tokens_used + c.tokens)
    return events + ([stop] if stop else [])


def _verified(state: RelayState, c: VerifierFinished) -> list[Event]:
    if state.status != "verifying" or c.verified_turn_id != state.last_turn_id:
        return []
    assert state.last_turn_id is not None
    capsule = c.defect_capsule
    if c.status != "PASSED" and capsule is None:
        capsule = _capsule_from(c)
    events: list[Event] = [
        TurnVerified(
            task_id=state.task_id,
            turn_id=c.turn_id,
            verified_turn_id=c.verified_turn_id,
            turn_number=state.turn_number,
            status=c.status,
            report=c.report,
            checks=c.checks,
            defect_capsule=capsule,
            tokens=c.tokens,
        )
    ]
    item = state.items[state.index]
    passed, escalated = state.passed, state.escalated
    if c.status == "PASSED":
        events.append(_checkpoint(state, c))
        events.extend(
            DefectResolved(task_id=state.task_id, defect_id=d, turn_id=state.last_turn_id) for d in state.open_defects
        )
        passed += 1
    else:
        assert capsule is not None
        retry = state.retry_count + 1
        if retry <= state.max_retries:
            again = _turn(state.task_id, state.turn_number + 1, state.index, item, retry, capsule.defect_id)
            return events + [_stop(state, state.tokens_used + c.tokens) or again]
        escalation_id = f"{state.task_id}:escalation:{state.index + 1}"
        metadata: dict[str, Any] = {"roadmap_index": state.index, "roadmap_chunk": item.chunk(), "retry_count": retry}
        if state.escalation_rollback:
            undo = changes_between(state.files, state.item_files)
            if undo:
                events.append(WorkspaceChanged(task_id=state.task_id, turn_id=escalation_id, changes=undo))
            metadata["rolled_back"] = [change["path"] for change in undo]
        events.append(
            EscalationRaised(
                task_id=state.task_id,
                escalation_id=escalation_id,
                turn=state.turn_number,
                defect_id=capsule.defect_id,
                reason=f"roadmap item {state.index + 1} still failed after {state.max_retries} retries",
                metadata=metadata,
            )
        )
        escalated += 1
    following = state.index + 1
    if following >= len(state.items):
        return events + [RoadmapCompleted(task_id=state.task_id, passed=passed, escalated=escalated)]
    stop = _stop(state, state.tokens_used + c.tokens)
    return events + [stop or _turn(state.task_id, state.turn_number + 1, following, state.items[following])]


def _resolve(state: RelayState, c: ResolveEscalation) -> list[Event]:
    if c.escalation_id not in state.escalations:
        raised = ", ".join(state.escalations) or "none"
        raise ValueError(f"the relay raised no escalation {c.escalation_id!r} (raised: {raised})")
    if c.escalation_id in state.resolved:
        return []
    return [
        EscalationResolved(
            task_id=state.task_id, escalation_id=c.escalation_id, resolution=c.note, resolved_by=c.resolved_by
        )
    ]


def _tick(state: RelayState, c: Tick) -> list[Event]:
    if state.status not in ("building", "verifying") or state.started_at is None:
        return []
    stop = _over_time(state, c.now_s - state.started_at.timestamp())
    return [stop] if stop else []


def _stop(state: RelayState, tokens_used: int) -> RelayStopped | None:
    """The stop the budget calls for before another step, if any: tokens counted so far,
    and wall time up to the last recorded event (a Tick catches it sooner)."""
    elapsed = None
    if state.started_at is not None and state.last_at is not None:
        elapsed = (state.last_at - state.started_at).total_seconds()
    return _over_tokens(state, tokens_used) or (None if elapsed is None else _over_time(state, elapsed))


def _over_tokens(state: RelayState, used: int) -> RelayStopped | None:
    limit = state.budget.max_tokens
    if limit is None or used < limit:
        return None
    return RelayStopped(
        task_id=state.task_id,
        reason="budget_exhausted",
        limit="tokens",
        message=f"the relay used {used} tokens, its budget is {limit}",
    )


def _over_time(state: RelayState, elapsed: float) -> RelayStopped | None:
    # The message names the limit, not the reading: a replay that decides to stop at the
    # same point records the same fact, whatever its clock's last digits.
    limit = state.budget.max_seconds
    if limit is None or elapsed < limit:
        return None
    return RelayStopped(
        task_id=state.task_id,
        reason="budget_exhausted",
        limit="wall_time",
        message=f"the relay ran past its wall-time budget of {limit:g}s",
    )


def _turn(
    task_id: str, turn_number: int, index: int, item: RoadmapItem, retry: int = 0, defect_id: str | None = None
) -> RelayTurnStarted:
    return RelayTurnStarted(
        task_id=task_id,
        turn_id=builder_turn_id(task_id, turn_number),
        turn_number=turn_number,
        roadmap_index=index,
        roadmap_chunk=item.chunk(),
        retry_count=retry,
        defect_id=defect_id,
    )


def _checkpoint(state: RelayState, c: VerifierFinished) -> CheckpointStored:
    baton = state.batons[-1]
    return CheckpointStored(
        task_id=state.task_id,
        checkpoint_id=f"{state.task_id}:checkpoint:{state.turn_number}",
        turn_id=c.verified_turn_id,
        files=sorted(state.files),
        metadata={
            "builder_summary": baton.builder_summary,
            "files_changed": list(baton.files_changed),
            "roadmap_index": state.index,
            "turn_number": state.turn_number,
            "retry_count": state.retry_count,
            "verified_by": c.turn_id,
            "workspace_digest": digest(state.files),
        },
    )


def _capsule_from(c: VerifierFinished) -> DefectCapsule:
    """A verdict that failed without a capsule still hands the builder its report: the
    kind comes from the first failed check (coherence if none failed)."""
    failed = [check for check in c.checks if not check.passed]
    return DefectCapsule(
        defect_id=f"{c.verified_turn_id}:defect",
        defect_type=failed[0].kind if failed else "coherence",
        severity="medium",
        description=c.report or "the verifier rejected the turn without a report",
        metadata={"checks": [check.name for check in failed]},
    )
