"""The Director (seed 002): one cycle of the world, as a transaction, in pure code.

The normative sequence, event-sourced:

1. the working copy is the canonical world plus this cycle's tentative events
   (`WorkingWorld`: nothing canonical is written until the shell commits);
2. the clock advances on the working copy;
3. due world processes take their statechart transitions;
4. fixed-point microcycles: compose each affected synth's SensoryBundle, run every synth's
   cognitive call concurrently (`cognize`, the one effect, injected: Ray in the shell,
   recorded completions in replay, a script in tests), collect intents, resolve
   communication, resolve the rest in priority order; loop while anything new happened
   and the cycle's budget lasts (Thomas speaks in microcycle 1, Margaret answers in 2).
   Speech the budget leaves unheard (said in the last microcycle, or when the event
   budget ran out) is carried over: the verdict records it, the director's state keeps
   it, and its hearers hear it in the next cycle's first microcycle;
5. the invariants are checked on the working state;
6. they hold: the cycle's world, director and synth events are the commit (the shell
   appends them in one store transaction);
7. they fail: nothing of the world changes; `CycleRolledBack` says why.

LLM calls are facts whatever the verdict: they were recorded by the synths before use,
so `llm_events` come back in both cases and the shell folds them into the synths' minds.

Behaviour that recorded runs must still replay under changes by named behaviour patches
(DESIGN, Temporal's `patched`; nothing to do with admin patches): a live cycle runs with
every patch in `BEHAVIOUR_PATCHES` and its verdict names them; replay runs each recorded
cycle with the ones its verdict names, so a cycle recorded before a patch existed replays
as it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from actors.simulation import communication, invariants, perception, processes, resolver
from actors.simulation.cognition import SynthMind
from actors.simulation.payloads import ActionOutcome, ActuationIntent, CommunicationEvent, SensoryBundle
from actors.simulation.perception_policy import LowLightAmbiguityPolicy, PerceptionPolicy
from actors.simulation.synth import SynthState
from actors.simulation.world import World, apply
from events.base import Event, State
from events.effects import LlmRequested
from actors.simulation.events import (
    ClockAdvanced,
    Communicated,
    CycleCommitted,
    CycleRolledBack,
    StimulusQueued,
    SynthCognized,
)


# Named behaviour patches (see the module's docstring).
# Speech said where no later microcycle of its cycle is left to hear it (the last one, or
# past the event budget) is heard in the next cycle's first microcycle. Before it, it was
# never heard: with one microcycle no synth heard another.
SPEECH_CARRIES_OVER = "speech-carries-over"
BEHAVIOUR_PATCHES: tuple[str, ...] = (SPEECH_CARRIES_OVER,)


class DirectorConfig(BaseModel):
    max_microcycles: int = 2  # the cycle's budget of microcycles (each is an LLM call per affected synth)
    max_events: int = 60  # ... and of world events: past it the loop stops, not quiescent
    perception_policy: Literal["none", "low_light"] = "none"  # the PerceptionPolicy hook

    def policy(self) -> PerceptionPolicy:
        return LowLightAmbiguityPolicy() if self.perception_policy == "low_light" else PerceptionPolicy()


class DirectorState(State):
    """The director stream's fold: how many cycles ran, and what waits for the next one."""

    cycle: int = 0
    tick: int = 0
    pending: list[dict[str, Any]] = []  # StimulusQueued payloads not delivered yet
    # Speech the last committed cycle carried over, unheard: hearer id -> CommunicationEvent
    # dumps, heard in the next cycle's first microcycle (a rolled-back cycle keeps it).
    speech: dict[str, list[dict[str, Any]]] = {}
    outcomes: dict[str, list[dict[str, Any]]] = {}  # synth id -> its last cycle's outcomes
    committed: int = 0
    rolled_back: int = 0


def evolve_director(state: DirectorState, event: Event) -> DirectorState:
    if isinstance(event, StimulusQueued):
        return state.model_copy(update={"pending": [*state.pending, event.payload()]})
    if isinstance(event, CycleCommitted):
        delivered = set(event.stimuli)
        outcomes: dict[str, list[dict[str, Any]]] = {}
        for o in event.outcomes:
            outcomes.setdefault(o["synth_id"], []).append(o)
        return state.model_copy(
            update={
                "cycle": event.cycle,
                "tick": event.tick,
                "pending": [p for p in state.pending if p["stimulus_id"] not in delivered],
                "speech": event.carried_speech,
                "outcomes": outcomes,
                "committed": state.committed + 1,
            }
        )
    if isinstance(event, CycleRolledBack):
        return state.model_copy(update={"cycle": event.cycle, "rolled_back": state.rolled_back + 1})
    return state


@dataclass(frozen=True)
class CognitionTask:
    """One synth's cognitive call in one microcycle: its mind now, and what it perceives."""

    synth_id: str
    state: SynthState
    bundle: SensoryBundle


# Runs every task (concurrently, where it can) and returns, per task in order, the events
# its synth recorded: the gateway's LLM events, then one SynthCognized.
Cognize = Callable[[list[CognitionTask]], list[list[Event]]]
Check = Callable[[Any], list[invariants.Violation]]


@dataclass
class CycleResult:
    cycle: int
    committed: bool
    world_events: list[Event] = field(default_factory=list)  # empty when rolled back
    director_events: list[Event] = field(default_factory=list)  # CycleCommitted or CycleRolledBack
    synth_events: dict[str, list[Event]] = field(default_factory=dict)  # SynthCognized, per synth
    llm_events: dict[str, list[Event]] = field(default_factory=dict)  # recorded calls, per synth
    outcomes: list[ActionOutcome] = field(default_factory=list)
    intents: list[ActuationIntent] = field(default_factory=list)
    microcycles: int = 0
    quiescent: bool = True
    carried_speech: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # unheard: to the next cycle

    @property
    def verdict(self) -> Event:
        return self.director_events[-1]


def run_cycle(
    world: World,
    director: DirectorState,
    synths: dict[str, SynthState],
    cognize: Cognize,
    *,
    config: DirectorConfig | None = None,
    policy: PerceptionPolicy | None = None,
    check: Check = invariants.check,
    behaviour_patches: Collection[str] = BEHAVIOUR_PATCHES,
) -> CycleResult:
    """One director cycle over the canonical `world`, `director` and `synths`, none of
    which it changes: it returns the events a commit appends (or the rollback).
    `behaviour_patches`: the named behaviour patches it runs with (replay passes the ones
    its verdict names)."""
    config = config or DirectorConfig()
    policy = policy or config.policy()
    mind = SynthMind()
    cycle = director.cycle + 1
    working = world.working_copy()
    minds = dict(synths)
    names = {sid: s.identity.name for sid, s in synths.items()}
    order = sorted(synths)
    result = CycleResult(cycle=cycle, committed=False)
    events: list[Event] = []

    def happen(event: Event) -> None:
        apply(working, event)
        events.append(event)

    happen(ClockAdvanced(tick=working.clock.tick + 1))  # 2
    events.extend(processes.due_transitions(working))  # 3 (applied as they are made)

    # Speech the last cycle carried over, then outside stimuli (queued since), enter
    # through perception: the synths hear them in microcycle 1.
    heard: dict[str, list[CommunicationEvent]] = {
        sid: [CommunicationEvent.model_validate(c) for c in director.speech.get(sid, [])] for sid in order
    }
    for stimulus in director.pending:
        said = communication.stimulus_event(working, stimulus["text"], stimulus["source"], cycle, 1)
        happen(said)
        _deliver(said, heard)
    outcomes_before = {sid: [ActionOutcome.model_validate(o) for o in director.outcomes.get(sid, [])] for sid in order}

    affected = set(order)
    for microcycle in range(1, config.max_microcycles + 1):  # 4
        result.microcycles = microcycle
        tasks = [
            CognitionTask(
                sid,
                minds[sid],
                perception.compose_bundle(
                    working, sid, minds[sid].senses, cycle=cycle, microcycle=microcycle,
                    heard=heard[sid], previous_outcomes=outcomes_before[sid], names=names, policy=policy,
                ),  # fmt: skip
            )
            for sid in order
            if sid in affected
        ]
        intents: list[ActuationIntent] = []
        for task, recorded in zip(tasks, cognize(tasks), strict=True):
            sid = task.synth_id
            for e in recorded:
                minds[sid] = mind.evolve(minds[sid], e)
                if isinstance(e, SynthCognized):
                    result.synth_events.setdefault(sid, []).append(e)
                    intents.extend(ActuationIntent.model_validate(i) for i in e.intents)
                else:
                    result.llm_events.setdefault(sid, []).append(e)
            heard[sid] = []
        result.intents.extend(intents)
        before = len(events)
        actors_of: list[tuple[str, Event]] = []
        for said in communication.resolve_communication(
            working, intents, cycle=cycle, microcycle=microcycle, names=names
        ):
            happen(said)
            _deliver(said, heard)
        for outcome, changes in resolver.resolve(working, intents, cycle=cycle, microcycle=microcycle):
            result.outcomes.append(outcome)
            outcomes_before[outcome.synth_id] = [outcome]
            events.extend(changes)  # the resolver applied them as it went
            actors_of.extend((outcome.synth_id, c) for c in changes)
        new = events[before:]
        affected = _affected(working, actors_of, order, heard)
        if not new or not affected:
            break
        if len(events) >= config.max_events:
            result.quiescent = False
            break
    else:
        result.quiescent = False
    # Whatever is still in `heard` was said where no later microcycle of this cycle hears it.
    carried: dict[str, list[dict[str, Any]]] = {}
    if SPEECH_CARRIES_OVER in behaviour_patches:
        carried = {sid: [c.model_dump() for c in cs] for sid, cs in heard.items() if cs}
    result.carried_speech = carried

    violations = check(working)  # 5
    calls = {sid: [e.call_index for e in es if isinstance(e, LlmRequested)] for sid, es in result.llm_events.items()}
    if violations:  # 7
        first = violations[0]
        result.director_events = [
            CycleRolledBack(
                cycle=cycle,
                invariant=first.name,
                message="; ".join(v.message for v in violations)[:2000],
                discarded_intents=[i.model_dump() for i in result.intents],
                llm_calls=calls,
                behaviour_patches=sorted(behaviour_patches),
            )
        ]
        result.synth_events = {}
        return result
    result.committed = True  # 6
    result.world_events = events
    result.director_events = [
        CycleCommitted(
            cycle=cycle,
            tick=working.clock.tick,
            microcycles=result.microcycles,
            quiescent=result.quiescent,
            outcomes=[o.model_dump() for o in result.outcomes],
            stimuli=[s["stimulus_id"] for s in director.pending],
            llm_calls=calls,
            world_events=len(events),
            carried_speech=carried,
            behaviour_patches=sorted(behaviour_patches),
        )
    ]
    return result


def _deliver(said: Communicated, heard: dict[str, list[CommunicationEvent]]) -> None:
    speech = CommunicationEvent.model_validate(said.payload())
    for hearer in said.hearer_ids:
        if hearer in heard:
            heard[hearer].append(speech)


def _affected(
    working: Any, changes: list[tuple[str, Event]], order: list[str], heard: dict[str, list[CommunicationEvent]]
) -> set[str]:
    """Who re-perceives in the next microcycle: whoever heard something new, and whoever
    is where another synth just changed the world (an actor already knows what it did)."""
    places: dict[str, set[str]] = {}
    for actor, e in changes:
        entity_id = getattr(e, "entity_id", None)
        if entity_id is not None and working.has_entity(entity_id):
            places.setdefault(working.entity(entity_id).location_id, set()).add(actor)
    return {
        sid for sid in order
        if heard[sid] or (places.get(working.body_of(sid).location_id, set()) - {sid})
    }  # fmt: skip
