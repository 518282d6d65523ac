"""The simulation (seed 002, "Singing Bird"): a world, a director and synths, each a stream.

    sim:<run>:world            the canonical world: created from a content pack, then changed
                               only by the changes of committed director cycles
    sim:<run>:director         stimuli queued from outside, and each cycle's verdict
    sim:<run>:synth:<synth id> a synth's mind: created, its LLM calls, what each call changed

World events (what `actors.simulation.world.apply` folds):
    WorldCreated          the compiled content pack: the whole initial world, as data
    ClockAdvanced         the simulation clock moved to `tick`
    ProcessTransitioned   a world process's statechart moved from one state to another
    EntityMoved           an entity (a synth's body, say) went to a location; what it
                          carries goes with it
    EntityContained       an entity went into another (a taken item into its taker's body)
    EntityCreated         an entity was added (an admin patch): placed in a location or
                          inside another entity
    ComponentChanged      properties of one component of one entity were set
    EnvironmentChanged    ambient values (light, weather, ...) were set
    Communicated          a CommunicationEvent: who said what, where, and who heard it

Director events:
    StimulusQueued        external input, delivered through perception on the next cycle
    PatchCommitted        an admin patch (typed operations) whose invariants held: its world
                          and synth events were appended with it, in one transaction; it
                          names the principal who applied it
    CycleCommitted        a cycle's invariants held: its events were appended with it, in
                          one transaction across the world, director and synth streams; it
                          carries over speech said too late in the cycle to be heard in it
    CycleRolledBack       an invariant failed: nothing of the cycle reached the world

Synth events (besides the gateway's LlmRequested / LlmCompleted / LlmFailed):
    SynthCreated          identity, body, senses, inner state, beliefs, projects, memories
    SynthCognized         what one cognitive call changed in the synth's mind, and the
                          intents it chose (committed with its cycle)
    SynthPatched          fields of the mind an admin patch replaced (beliefs, memories)

Payloads are plain data (dicts of the kernel's models), so this module imports nothing of
the simulation's code and a log stays readable without it.
"""

from __future__ import annotations

from typing import Any, Literal

from events.base import Event
from events.registry import event_type

OutcomeStatus = Literal["ok", "blocked", "failed"]

# -- the world -------------------------------------------------------------------------------


@event_type("WorldCreated")
class WorldCreated(Event):
    world: dict[str, Any]  # actors.simulation.world.World, dumped
    pack: str  # the pack's name
    pack_digest: str  # SHA-256 of the pack file's text: which content this world came from
    warnings: list[str] = []


@event_type("ClockAdvanced")
class ClockAdvanced(Event):
    tick: int


@event_type("ProcessTransitioned")
class ProcessTransitioned(Event):
    process_id: str
    source: str
    target: str


@event_type("EntityMoved")
class EntityMoved(Event):
    entity_id: str
    location_id: str


@event_type("EntityContained")
class EntityContained(Event):
    entity_id: str
    container_id: str


@event_type("EntityCreated")
class EntityCreated(Event):
    entity: dict[str, Any]  # actors.simulation.world.EntityNode, dumped (its contents empty)


@event_type("ComponentChanged")
class ComponentChanged(Event):
    entity_id: str
    component: str
    changes: dict[str, Any]


@event_type("EnvironmentChanged")
class EnvironmentChanged(Event):
    changes: dict[str, Any]


@event_type("Communicated")
class Communicated(Event):
    """A CommunicationEvent. `speaker_id` is a synth id, or "" for an outside stimulus."""

    speaker_id: str
    speaker: str  # the speaker's name, as hearers perceive it
    text: str
    location_id: str
    hearer_ids: list[str]
    cycle: int
    microcycle: int


WORLD_EVENTS = (
    WorldCreated, ClockAdvanced, ProcessTransitioned, EntityMoved, EntityContained, EntityCreated,
    ComponentChanged, EnvironmentChanged, Communicated,
)  # fmt: skip

# -- the director --------------------------------------------------------------------------------


@event_type("StimulusQueued")
class StimulusQueued(Event):
    stimulus_id: str
    text: str
    source: str = "operator"  # who sent it, as synths perceive it
    principal: str = ""  # who queued it over the control plane (its auth principal), if anyone


@event_type("CycleCommitted")
class CycleCommitted(Event):
    cycle: int
    tick: int
    microcycles: int
    quiescent: bool  # False: the cycle's budget ran out before the world settled
    outcomes: list[dict[str, Any]]  # ActionOutcome, dumped, in resolution order
    stimuli: list[str] = []  # stimulus ids delivered in this cycle
    llm_calls: dict[str, list[int]] = {}  # synth id -> the call indexes this cycle used
    world_events: int = 0
    # Speech no later microcycle of this cycle was left to hear (hearer id ->
    # CommunicationEvent, dumped): its hearers hear it in the next cycle's first microcycle.
    carried_speech: dict[str, list[dict[str, Any]]] = {}
    # The named behaviour patches the cycle ran with (actors.simulation.director's
    # BEHAVIOUR_PATCHES; not admin patches): replay runs the cycle with these. [] for cycles
    # recorded before any existed.
    behaviour_patches: list[str] = []


@event_type("CycleRolledBack")
class CycleRolledBack(Event):
    cycle: int
    invariant: str  # which check failed
    message: str
    discarded_intents: list[dict[str, Any]]  # ActuationIntent, dumped
    llm_calls: dict[str, list[int]] = {}
    behaviour_patches: list[str] = []  # as CycleCommitted.behaviour_patches


@event_type("PatchCommitted")
class PatchCommitted(Event):
    """An admin patch, committed: `operations` as applied (refs resolved to ids), so
    replay re-applies exactly them; the world and synth events it made precede it."""

    patch_id: str
    principal: str  # who applied it
    operations: list[dict[str, Any]]
    note: str = ""
    world_events: int = 0
    synths: list[str] = []  # synth ids whose minds it changed


# -- synths ------------------------------------------------------------------------------------


@event_type("SynthCreated")
class SynthCreated(Event):
    synth: dict[str, Any]  # actors.simulation.synth.SynthState, dumped


@event_type("SynthCognized")
class SynthCognized(Event):
    cycle: int
    microcycle: int
    call_index: int  # the last LLM call this cognition used (0: none)
    response: dict[str, Any] | None  # SynthCognitiveResponse, dumped; None when invalid twice
    intents: list[dict[str, Any]]  # ActuationIntent, dumped (a lone `wait` when invalid)
    attempts: int = 1
    error: str | None = None  # why the response was not used, when it was not


@event_type("SynthPatched")
class SynthPatched(Event):
    """Fields of a synth's mind an admin patch replaced, each with its whole new value."""

    changes: dict[str, Any]
