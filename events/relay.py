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

Field names are the seed's (BatonPacket, defect capsule, and the columns of its
agent_turns, checkpoints, defects and escalations tables). Embeddings are not in the
events: a vector view embeds `content` from them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from events.base import Event
from events.registry import event_type

DefectType = Literal["lint", "test", "coherence", "probe"]  # which verifier check found it
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


@event_type("RoadmapPlanned")
class RoadmapPlanned(Event):
    task_id: str
    task: str  # the person's request
    roadmap: list[str]  # the items, in order
    max_retries: int = 3


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
    task_id: str
    escalation_id: str
    resolution: str = ""


@event_type("RoadmapCompleted")
class RoadmapCompleted(Event):
    task_id: str
    passed: int  # roadmap items that passed
    escalated: int  # roadmap items handed to a person
