"""World processes (seed 002, step 3 of the director cycle): statecharts that move on their
own as the clock ticks (night falls, a storm rises) and change the world as they do.

An effect is a one-key mapping in a state's `on_enter` list:

    {set_environment: {ambient_light: 0.1}}                       -> EnvironmentChanged
    {set_component: {entity: <id>, component: LightSource,
                     changes: {lit: false}}}                      -> ComponentChanged

The loader has already turned entity names into ids. Processes are evaluated in id order
and each event is applied to the working copy before the next process looks, so a later
process's `when` guard sees what an earlier one set, the same way on every replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from events.base import Event
from actors.simulation.events import ComponentChanged, EnvironmentChanged, ProcessTransitioned
from actors.simulation import statechart
from actors.simulation.world import WorldView, apply


def effect_events(effects: list[Mapping[str, Any]]) -> list[Event]:
    """The world events a list of `on_enter` effects stands for (unknown kinds are skipped:
    the loader reports them)."""
    found: list[Event] = []
    for effect in effects:
        if "set_environment" in effect:
            found.append(EnvironmentChanged(changes=dict(effect["set_environment"])))
        if "set_component" in effect:
            spec = effect["set_component"]
            found.append(
                ComponentChanged(
                    entity_id=spec["entity"], component=spec["component"], changes=dict(spec.get("changes") or {})
                )
            )
    return found


def due_transitions(world: WorldView) -> list[Event]:
    """Fire every process transition due at `world.clock.tick`, applying each event to
    `world` (a working copy) as it goes. Returns the events applied, in order."""
    applied: list[Event] = []
    for process_id in sorted(world.processes):
        process = world.process(process_id)
        ticks = world.clock.tick - process.entered_tick
        target = statechart.step(process.chart, process.state, ticks, world.environment)
        if target is None:
            continue
        events: list[Event] = [ProcessTransitioned(process_id=process_id, source=process.state, target=target)]
        for entered in statechart.entered_states(process.state, target):
            events.extend(effect_events(statechart.on_enter(process.chart, entered)))
        for e in events:
            apply(world, e)
            applied.append(e)
    return applied
