"""The relay (seed 004): a roadmap worked through in turns, each a builder passing a
BatonPacket to a verifier, whose verdict makes the scheduler store a checkpoint, retry
with the DefectCapsule, or escalate to a person.

    RoadmapPlanned      the orchestrator parsed the task into roadmap items
    RelayTurnStarted    the scheduler gave roadmap[N] to the builder (a retry names its defect)
    BatonPassed         the builder's output: a BatonPacket
    TurnVerified        the verifier's verdict, PASSED / FAILED / RETRY, with a DefectCapsule if not passed
    CheckpointStored    a passed turn's checkpoint (checkpoint_type "verification_success")
    DefectResolved      a later turn fixed a defect
    EscalationRaised    retries ran out: handed to a person, the relay moves to the next item
    EscalationResolved  the person dealt with it
    RoadmapCompleted    every item passed or escalated
    WorkspaceChanged    a builder turn's file changes, each file's full new text, so the
                        workspace at any turn is the fold of these (actors.relay.workspace)
    RelayStopped        the relay's budget (tokens or wall time) ran out: no further turns
    AppResubmitted      the resubmit hook ran after a checkpoint, and how it went

Field names are the seed's (BatonPacket, defect capsule, and the columns of its
agent_turns, checkpoints, defects and escalations tables). Embeddings are not in the
events: a vector view embeds `content` from them.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from events.base import Event
from events.registry import event_type

DefectType = Literal["lint", "test", "coherence", "probe", "config"]  # which verifier check found it
# "config": the builder changed what configures the checks (actors.relay.check_config)
Severity = Literal["critical", "high", "medium", "low"]
VerifierStatus = Literal["PASSED", "FAILED", "RETRY"]


class BatonPacket(BaseModel):
    """What a builder hands on: its response, compressed for the next turn."""

    model_config = ConfigDict(frozen=True)

    response_text: str
    builder_summary: str  # compressed: what the next turn sees instead of the full text
    files_changed: list[str] = []
    verification_hints: list[str] = []  # what the verifier should check
    metadata: dict[str, Any] = {}


class DefectCapsule(BaseModel):
    """What a failed verification hands back to the builder's next attempt."""

    model_config = ConfigDict(frozen=True)

    defect_id: str
    defect_type: DefectType
    severity: Severity
    description: str
    suggested_fix: str | None = None
    metadata: dict[str, Any] = {}


class VerifierCheck(BaseModel):
    """One check of a verification: static analysis, test suite, LLM coherence, a probe."""

    model_config = ConfigDict(frozen=True)

    name: str  # e.g. "pylint", "pytest", "coherence"
    kind: DefectType
    passed: bool
    details: str = ""


class RelayBudget(BaseModel):
    """What the whole relay may spend; None is unlimited. Wall time runs from the
    RoadmapPlanned timestamp."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = None
    max_seconds: float | None = None


@event_type("RoadmapPlanned")
class RoadmapPlanned(Event):
    task_id: str
    task: str  # the person's request
    roadmap: list[str]  # the items, in order
    max_retries: int = 3
    # A named behaviour change: True (every relay planned since issue 34) rolls an escalated
    # item's failed attempt back to the last checkpoint; logs written before lack it and
    # replay as they ran.
    escalation_rollback: bool = False
    # Each item whole (title, acceptance_criteria, details: actors.relay.roadmap.RoadmapItem),
    # parallel to `roadmap`, which holds their texts; empty in logs written before it existed.
    items: list[dict[str, Any]] = []
    budget: RelayBudget = RelayBudget()


@event_type("RelayTurnStarted")
class RelayTurnStarted(Event):
    """The scheduler selected roadmap[roadmap_index] for the builder turn `turn_id`."""

    task_id: str
    turn_id: str  # the builder's turn
    turn_number: int
    roadmap_index: int
    roadmap_chunk: str  # the roadmap item's text
    retry_count: int = 0
    defect_id: str | None = None  # the defect capsule this retry must fix


@event_type("BatonPassed")
class BatonPassed(Event):
    task_id: str
    turn_id: str  # the builder's turn
    turn_number: int
    baton: BatonPacket
    tokens: int = 0  # what the builder's LLM calls for this turn used (the relay's token budget)


@event_type("TurnVerified")
class TurnVerified(Event):
    """The verifier's verdict on a builder turn. FAILED and RETRY may carry a defect
    capsule; PASSED never does."""

    task_id: str
    turn_id: str  # the verifier's own turn
    verified_turn_id: str  # the builder turn it checked
    turn_number: int
    status: VerifierStatus
    report: str  # the verifier's findings, as text
    checks: list[VerifierCheck] = []
    defect_capsule: DefectCapsule | None = None
    tokens: int = 0  # what the verifier's LLM calls used

    @model_validator(mode="after")
    def _passed_has_no_defect(self) -> TurnVerified:
        if self.status == "PASSED" and self.defect_capsule is not None:
            raise ValueError("a PASSED verdict carries no defect capsule")
        return self


@event_type("CheckpointStored")
class CheckpointStored(Event):
    task_id: str
    checkpoint_id: str
    turn_id: str  # the builder turn that passed
    checkpoint_type: str = "verification_success"
    files: list[str] = []
    metadata: dict[str, Any] = {}


@event_type("DefectResolved")
class DefectResolved(Event):
    task_id: str
    defect_id: str
    turn_id: str  # the turn whose passing fixed it


@event_type("EscalationRaised")
class EscalationRaised(Event):
    """Retries for a roadmap item ran out (retry_count > max_retries): a person takes over."""

    task_id: str
    escalation_id: str
    turn: int  # the turn number
    defect_id: str | None = None  # the defect that would not go away
    reason: str = ""
    metadata: dict[str, Any] = {}


@event_type("EscalationResolved")
class EscalationResolved(Event):
    """A person dealt with an escalation (`chorus relay resolve`, or the API's recovery
    route): `resolution` is their note, `resolved_by` who (a name, or the API token's)."""

    task_id: str
    escalation_id: str
    resolution: str = ""
    resolved_by: str = ""


@event_type("RoadmapCompleted")
class RoadmapCompleted(Event):
    task_id: str
    passed: int  # roadmap items that passed
    escalated: int  # roadmap items handed to a person


@event_type("WorkspaceChanged")
class WorkspaceChanged(Event):
    """A builder turn's edits to the relay's workspace. Each change is `{path, kind,
    content}`: kind "write" with the file's full new text, or "delete" (content None).
    Whole texts, not diffs, so the workspace at any turn is a plain fold of these events
    and a fork or replay never needs the git repository."""

    task_id: str
    turn_id: str  # the builder turn that made the changes
    changes: list[dict[str, Any]]

    @field_validator("changes")
    @classmethod
    def _well_formed(cls, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for change in changes:
            path, kind, content = change.get("path"), change.get("kind"), change.get("content")
            if set(change) - {"path", "kind", "content"}:
                raise ValueError(f"a workspace change has unknown keys: {sorted(set(change))}")
            if not isinstance(path, str) or not _relative(path):
                raise ValueError(f"a workspace path must be relative, inside the workspace: {path!r}")
            if kind == "write" and not isinstance(content, str):
                raise ValueError(f"a write of {path} needs its text as content")
            if kind == "delete" and content is not None:
                raise ValueError(f"a delete of {path} carries no content")
            if kind not in ("write", "delete"):
                raise ValueError(f"a workspace change is a write or a delete, not {kind!r}")
        return changes


def _relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith("/")
        and "\\" not in path
        and all(p not in ("..", ".", ".git") for p in parts)
        and str(PurePosixPath(path)) == path
    )


@event_type("RelayStopped")
class RelayStopped(Event):
    """The relay ended before its roadmap did: `reason` "budget_exhausted", with `limit`
    the budget that ran out ("tokens" or "wall_time") and `message` a line for a person."""

    task_id: str
    reason: str
    message: str
    limit: str | None = None


@event_type("AppResubmitted")
class AppResubmitted(Event):
    """The resubmit hook ran after a checkpoint (the seed's `_resubmit_to_app`): a command
    in the workspace or a Python callable. Its outcome is recorded, so a replay or a resumed
    relay never runs it again; a hook that failed (`ok` False, `error` why) is a fact to
    report, never a reason to stop the relay."""

    task_id: str
    checkpoint_id: str
    hook: str  # the command line, or the callable's module:name
    ok: bool
    returncode: int | None = None  # a command's exit status (None for a callable)
    output: str = ""  # what it printed or returned, cut to a few thousand characters
    error: str | None = None  # why it failed, one line
