"""The bodies of the simulation-session routes (seed 002's three lanes), as pydantic models:
what the OpenAPI document says each route takes and gives."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from actors.simulation.patches import Change, Operation

# -- requests --------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSession(_Body):
    pack: str | None = Field(default=None, description="a bundled content pack by name, e.g. 'lighthouse'")
    pack_yaml: str | None = Field(default=None, max_length=1_000_000, description="a content pack's YAML text (instead of pack)")
    max_microcycles: int = Field(default=2, ge=1, le=10, description="microcycles a director cycle may run")
    perception_policy: Literal["none", "low_light"] = "none"
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="the synths' sampling temperature")


class Resume(_Body):
    cycles: int = Field(default=100, ge=1, le=10_000, description="cycles to run in the background before pausing again")


class Steps(_Body):
    cycles: int = Field(default=1, ge=1, le=50)


class Turn(_Body):
    text: str = Field(min_length=1, max_length=4000, description="what the synths will perceive (speech from `source`)")
    source: str = Field(default="a voice", min_length=1, max_length=100, description="who it comes from, as synths perceive it")


class Stimulus(Turn):
    pass


class PatchRequest(_Body):
    operations: list[Operation] = Field(min_length=1, max_length=100)
    mode: Literal["dry_run", "commit", "commit_and_step"] = "dry_run"
    note: str = Field(default="", max_length=500)


class Restore(_Body):
    cycle: int = Field(ge=0, le=2**31, description="the cycle whose end state the new lineage starts from (0: the start)")


# -- responses -------------------------------------------------------------------------------


class SessionInfo(BaseModel):
    session_id: str
    pack: str
    status: str = Field(description="the run's status (running until cancelled)")
    state: Literal["paused", "running"] = Field(description="paused: cycles run only on request; running: in the background")
    cycle: int
    tick: int
    committed: int
    rolled_back: int
    pending_stimuli: int
    parent: str | None = Field(default=None, description="the session this lineage was restored from")
    parent_cycle: int | None = None
    error: str | None = Field(default=None, description="why background running stopped, if it failed")


class SessionList(BaseModel):
    sessions: list[SessionInfo]
    total: int


class SynthView(BaseModel):
    name: str
    location: str
    carries: list[str]
    mood: str
    senses: list[str]
    llm_calls: int


class LocationView(BaseModel):
    name: str
    synths: list[str]
    things: list[str]


class Overview(BaseModel):
    session: str
    pack: str
    cycle: int
    tick: int
    environment: dict[str, Any]
    processes: dict[str, str]
    locations: list[LocationView]
    synths: list[SynthView]
    pending_stimuli: list[str]
    committed: int
    rolled_back: int


class Match(BaseModel):
    kind: Literal["entity", "location", "synth", "process"]
    id: str
    name: str


class Resolved(BaseModel):
    name: str
    matches: list[Match]


class ObjectDetail(BaseModel):
    kind: Literal["entity", "location", "synth", "process"]
    id: str
    name: str
    data: dict[str, Any] = Field(description="the node as the canonical world holds it (a synth: its mind)")


class Changes(BaseModel):
    since_position: int
    until_position: int
    changes: list[Change]


class CycleResult(BaseModel):
    cycle: int
    committed: bool
    microcycles: int
    quiescent: bool
    outcomes: list[dict[str, Any]]
    invariant: str | None = Field(default=None, description="the invariant that failed (rolled back)")
    message: str | None = None


class CycleReport(BaseModel):
    position: int
    cycle: int
    committed: bool
    tick: int | None = None
    microcycles: int | None = None
    quiescent: bool | None = None
    outcomes: list[dict[str, Any]] = []
    stimuli: list[str] = []
    invariant: str | None = None
    message: str | None = None


class CycleReports(BaseModel):
    reports: list[CycleReport]


class StepResults(BaseModel):
    cycles: list[CycleResult]


class TurnResult(BaseModel):
    stimulus_id: str
    position: int
    result: CycleResult


class StimulusQueuedResult(BaseModel):
    stimulus_id: str
    position: int


class ViolationOut(BaseModel):
    invariant: str
    message: str


class PatchResult(BaseModel):
    mode: Literal["dry_run", "commit", "commit_and_step"]
    valid: bool
    committed: bool
    patch_id: str | None = None
    position: int | None = Field(default=None, description="the PatchCommitted event's global position")
    principal: str
    violations: list[ViolationOut]
    diff: list[Change]
    operations: list[dict[str, Any]] = Field(description="the operations with every ref resolved to its id")
    result: CycleResult | None = Field(default=None, description="the cycle commit_and_step ran")


class PatchRecord(BaseModel):
    position: int
    patch_id: str
    principal: str
    note: str
    operations: list[dict[str, Any]]
    timestamp: str


class PatchList(BaseModel):
    patches: list[PatchRecord]


class Monologue(BaseModel):
    position: int
    cycle: int
    microcycle: int
    inner_monologue: dict[str, Any] | None
    intents: list[dict[str, Any]]
    error: str | None = None


class Monologues(BaseModel):
    synth_id: str
    name: str
    monologues: list[Monologue]
