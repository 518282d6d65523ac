"""What a session looks like at a cycle, read from the log (`chorus sim show`): who is
where, what they carry, what is in each place, the process states and the clock."""

from __future__ import annotations

from typing import Any

from actors.simulation.cognition import SynthMind
from actors.simulation.director import DirectorState, evolve_director
from actors.simulation.session import UnknownSession
from actors.simulation.streams import director_stream, is_synth_stream, synth_of, world_stream
from actors.simulation.synth import SynthState
from actors.simulation.world import World, apply
from actors.simulation.events import CycleCommitted, CycleRolledBack, WorldCreated
from events.store import EventStore


def overview(store: EventStore, run_id: str, at: int | None = None) -> dict[str, Any]:
    """The session after cycle `at` (None: now). UnknownSession, or ValueError for a cycle
    the session has not reached."""
    records = list(store.read_all(run_id=run_id))
    ws, ds = world_stream(run_id), director_stream(run_id)
    created = next((r.event for r in records if r.event.stream_id == ws and isinstance(r.event, WorldCreated)), None)
    if created is None:
        raise UnknownSession(f"no simulation session {run_id!r}")
    limit = None
    if at is not None:
        verdicts = [r for r in records if r.event.stream_id == ds and isinstance(r.event, CycleCommitted | CycleRolledBack)]
        if at < 0 or at > len(verdicts):
            raise ValueError(f"session {run_id} has run {len(verdicts)} cycle(s); there is no cycle {at}")
        limit = verdicts[at - 1].position if at > 0 else next(r.position for r in records if r.event.stream_id == ws)
    world = World.model_validate(created.world)
    director = DirectorState()
    synths: dict[str, SynthState] = {}
    mind = SynthMind()
    for r in records:
        if limit is not None and r.position > limit:
            break
        e = r.event
        if e.stream_id == ws:
            apply(world, e)
        elif e.stream_id == ds:
            director = evolve_director(director, e)
        elif is_synth_stream(e.stream_id):
            sid = synth_of(e.stream_id)
            synths[sid] = mind.evolve(synths.get(sid, SynthState()), e)
    return describe_world(run_id, created.pack, world, director, synths)


def describe_world(
    run_id: str, pack: str, world: World, director: DirectorState, synths: dict[str, SynthState]
) -> dict[str, Any]:
    def name(entity_id: str) -> str:
        return world.entities[entity_id].name if entity_id in world.entities else entity_id

    def contents(ids: list[str]) -> list[str]:
        out = []
        for i in ids:
            e = world.entities[i]
            if e.synth_id:
                continue
            inner = contents(e.contained_entity_ids)
            out.append(f"{e.name} [{', '.join(inner)}]" if inner else e.name)
        return out

    return {
        "session": run_id,
        "pack": pack,
        "cycle": director.cycle,
        "tick": world.clock.tick,
        "environment": dict(world.environment),
        "processes": {p.name: p.state for p in sorted(world.processes.values(), key=lambda p: p.name)},
        "locations": [
            {
                "name": loc.name,
                "synths": sorted(name(i) for i in loc.contained_entity_ids if world.entities[i].synth_id),
                "things": contents(loc.contained_entity_ids),
            }
            for loc in sorted(world.locations.values(), key=lambda loc: loc.name)
        ],
        "synths": [
            {
                "name": s.identity.name,
                "location": world.locations[world.entities[sid].location_id].name,
                "carries": contents(world.entities[sid].contained_entity_ids),
                "mood": s.affect.mood,
                "senses": list(s.senses),
                "llm_calls": s.llm_calls,
            }
            for sid, s in sorted(synths.items(), key=lambda kv: kv[1].identity.name)
        ],
        "pending_stimuli": [p["text"] for p in director.pending],
        "pending_speech": sorted({f"{c['speaker']}: {c['text']}" for cs in director.speech.values() for c in cs}),
        "committed": director.committed,
        "rolled_back": director.rolled_back,
    }
