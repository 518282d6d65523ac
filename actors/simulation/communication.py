"""Speech (seed 002): a `communicate` intent becomes a Communicated event heard by the
synths in the speaker's place that have ears; an outside stimulus reaches synths through
the same auditory channel. Speech changes minds, not the world: `apply` ignores it, and
perception delivers it to hearers as `heard` (see `heard_by`)."""

from __future__ import annotations

from typing import Any

from actors.simulation.payloads import ActuationIntent, CommunicationEvent
from actors.simulation.perception import hearers_in, senses_of
from actors.simulation.world import WorldView
from actors.simulation.events import Communicated


def resolve_communication(
    world: WorldView, intents: list[ActuationIntent], *, cycle: int, microcycle: int, names: dict[str, str]
) -> list[Communicated]:
    """One Communicated per `communicate` intent that says something, in intent order."""
    events = []
    for intent in intents:
        if intent.action_id != "communicate" or not intent.text.strip() or not world.has_entity(intent.synth_id):
            continue
        body = world.body_of(intent.synth_id)
        events.append(
            Communicated(
                speaker_id=intent.synth_id,
                speaker=names.get(intent.synth_id, body.name),
                text=intent.text,
                location_id=body.location_id,
                hearer_ids=hearers_in(world, body.location_id, besides=intent.synth_id),
                cycle=cycle,
                microcycle=microcycle,
            )
        )
    return events


def stimulus_event(
    world: WorldView, text: str, source: str, cycle: int, microcycle: int, location_id: str | None = None
) -> Communicated:
    """An outside voice (`source`): heard by the synths with ears in `location_id`, or by
    every synth with ears when no place is given (then `location_id` is "")."""
    if location_id is not None:
        hearers = hearers_in(world, location_id)
    else:
        hearers = [i for i in _synth_ids(world) if "auditory" in senses_of(world.body_of(i))]
    return Communicated(
        speaker_id="",
        speaker=source,
        text=text,
        location_id=location_id or "",
        hearer_ids=hearers,
        cycle=cycle,
        microcycle=microcycle,
    )


def heard_by(events: list[Communicated], synth_id: str) -> list[CommunicationEvent]:
    """What `synth_id` heard of `events`: the `heard` of its next bundle."""
    return [
        CommunicationEvent(
            speaker_id=e.speaker_id, speaker=e.speaker, text=e.text, location_id=e.location_id,
            hearer_ids=list(e.hearer_ids), cycle=e.cycle, microcycle=e.microcycle,
        )  # fmt: skip
        for e in events
        if synth_id in e.hearer_ids
    ]


def _synth_ids(world: WorldView) -> list[str]:
    """Every synth, in the world's order. Bodies are never created or destroyed in a
    cycle, so a working copy's base world names them all."""
    canonical: Any = getattr(world, "base", world)  # a World: WorldView has no `entities`
    return [e.synth_id for e in canonical.entities.values() if e.synth_id is not None]
