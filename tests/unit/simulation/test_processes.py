"""World processes: due statechart transitions become events, applied as they go."""

from __future__ import annotations

from pathlib import Path

from actors.simulation.events import ComponentChanged, EnvironmentChanged, ProcessTransitioned
from actors.simulation.clock import advance, simulated_time, time_of_day
from actors.simulation.loader import load_pack
from actors.simulation.processes import due_transitions
from actors.simulation.world import Clock, EntityNode, LocationNode, ProcessState, World, apply

PACKS = Path(__file__).resolve().parents[3] / "actors" / "simulation" / "packs"

NIGHT = {
    "initial": "dusk",
    "states": {
        "dusk": {"transitions": [{"target": "night", "after": 2}]},
        "night": {
            "on_enter": [
                {"set_environment": {"ambient_light": 0.05}},
                {"set_component": {"entity": "e-lamp", "component": "LightSource", "changes": {"lit": False}}},
            ]
        },
    },
}
# Opens only when the environment says night: sees what NIGHT set in the same tick.
OWLS = {
    "initial": "quiet",
    "states": {
        "quiet": {"transitions": [{"target": "hooting", "when": {"ambient_light": 0.05}}]},
        "hooting": {"on_enter": [{"set_environment": {"owls": "hooting"}}]},
    },
}


def world(tick: int = 0) -> World:
    return World(
        name="t",
        clock=Clock(tick=tick),
        environment={"ambient_light": 0.4},
        locations={"l": LocationNode(id="l", name="Room", contained_entity_ids=["e-lamp"])},
        entities={
            "e-lamp": EntityNode(id="e-lamp", name="Lamp", location_id="l", components={"LightSource": {"lit": True}})
        },
        processes={
            "p1": ProcessState(id="p1", name="night", chart=NIGHT, state="dusk"),
            "p2": ProcessState(id="p2", name="owls", chart=OWLS, state="quiet"),
        },
    )


def test_nothing_is_due_before_its_time():
    w = world(tick=1).working_copy()
    assert due_transitions(w) == []
    assert w.process("p1").state == "dusk"


def test_due_transition_emits_and_applies_its_events_in_order():
    canonical = world(tick=2)
    w = canonical.working_copy()
    events = due_transitions(w)
    assert [type(e) for e in events] == [
        ProcessTransitioned, EnvironmentChanged, ComponentChanged,  # night, by id order first
        ProcessTransitioned, EnvironmentChanged,  # owls: its guard saw what night just set
    ]  # fmt: skip
    assert (events[0].process_id, events[0].source, events[0].target) == ("p1", "dusk", "night")
    assert events[1].changes == {"ambient_light": 0.05}
    assert events[2].entity_id == "e-lamp" and events[2].changes == {"lit": False}
    assert events[3].target == "hooting"
    # applied to the working copy...
    assert w.process("p1").state == "night" and w.process("p1").entered_tick == 2
    assert w.environment == {"ambient_light": 0.05, "owls": "hooting"}
    assert w.entity("e-lamp").components["LightSource"] == {"lit": False}
    # ...and not to the canonical world, which folds the same events to the same state
    assert canonical.process("p1").state == "dusk"
    assert canonical.entity("e-lamp").components["LightSource"] == {"lit": True}
    for e in events:
        apply(canonical, e)
    assert canonical.environment == w.environment
    assert canonical.processes["p1"].state == "night"


def test_after_counts_from_the_last_transition():
    w = world(tick=2).working_copy()
    due_transitions(w)
    assert due_transitions(w) == []  # same tick again: nothing more is due


def test_lighthouse_night_and_weather_run_by_the_clock():
    pack = load_pack(PACKS / "lighthouse.yaml")
    w = pack.world.working_copy()
    seen: list[tuple[str, str]] = []
    for _ in range(8):
        w.clock = advance(w.clock)
        for e in due_transitions(w):
            if isinstance(e, ProcessTransitioned):
                seen.append((w.process(e.process_id).name, e.target))
    assert seen == [("Night", "night"), ("Weather", "unsettled.gusting"), ("Weather", "unsettled.storm")]
    assert w.environment["time_of_day"] == "night"
    assert w.environment["ambient_light"] < 0.3
    assert w.environment["weather"] == "storm"
    surf = w.entity(pack.ids["entity"]["Surf"])
    assert surf.components["SoundSource"]["loudness"] == 1.0
    assert pack.world.environment["weather"] == "calm"  # the loaded world is untouched


def test_clock_advances_by_its_chronon():
    clock = Clock(tick=0, chronon_seconds=600, start="2026-10-14T18:30:00")
    later = advance(clock)
    assert later.tick == 1 and clock.tick == 0  # a new clock: the given one is unchanged
    assert simulated_time(later) == "18:40"
    assert simulated_time(advance(clock, 6), iso=True) == "2026-10-14T19:30:00"
    assert simulated_time(Clock(tick=2, chronon_seconds=3600, start="2026-01-01T23:00:00"), iso=True) == (
        "2026-01-02T01:00:00"
    )
    assert time_of_day(clock) == "dusk"
    assert time_of_day(advance(clock, 12)) == "night"  # 20:30
    assert time_of_day(Clock(start="2026-01-01T05:30:00")) == "dawn"
    assert time_of_day(Clock(start="2026-01-01T12:00:00")) == "day"
    assert time_of_day(Clock(start="2026-01-01T02:00:00")) == "night"
