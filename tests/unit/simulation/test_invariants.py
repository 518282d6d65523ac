"""Invariants: containment consistency from both ends, adjacency, component sanity, on a
whole World or on what a WorkingWorld touched; and a property test that resolving any
sequence of surface actions in any generated world keeps them all."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.simulation.invariants import Violation, check, check_all
from actors.simulation.payloads import ActuationIntent
from actors.simulation.perception import action_surface
from actors.simulation.resolver import resolve
from actors.simulation.world import CHANNELS, World, apply

from .worlds import WorldBuilder, keeper_world


def names_of(violations: list[Violation]) -> set[str]:
    return {v.name for v in violations}


def test_a_consistent_world_has_no_violations():
    assert check_all(keeper_world()) == []
    assert check(keeper_world()) == []


def test_an_entity_listed_twice_is_caught():
    world = keeper_world()
    world.locations["stairs"].contained_entity_ids.append("torch")
    assert {"containment.child", "containment.listed_once"} <= names_of(check_all(world))


def test_an_entity_listed_nowhere_is_caught():
    world = keeper_world()
    world.locations["lamp_room"].contained_entity_ids.remove("torch")
    assert {"containment.parent", "containment.listed_once"} <= names_of(check_all(world))


def test_contents_must_be_where_their_container_is():
    world = keeper_world()
    world.entities["wrench"].location_id = "stairs"
    assert "containment.location" in names_of(check_all(world))


def test_carried_by_must_match_the_body_above():
    world = keeper_world()
    world.entities["wrench"].carried_by_synth_id = "ann"
    assert "containment.carried" in names_of(check_all(world))


def test_bodies_stand_in_locations():
    world = (
        WorldBuilder().place("a").thing("crate", "a").synth("ann", "a").build()
    )
    world.locations["a"].contained_entity_ids.remove("ann")
    world.entities["crate"].contained_entity_ids.append("ann")
    world.entities["ann"].container_id = "crate"
    assert "containment.body" in names_of(check_all(world))


def test_containment_cycles_are_caught():
    world = WorldBuilder().place("a").thing("x", "a").thing("y", "x").build()
    world.locations["a"].contained_entity_ids.remove("x")
    world.entities["x"].container_id = "y"
    world.entities["y"].contained_entity_ids.append("x")
    assert "containment.cycle" in names_of(check_all(world))


def test_adjacency_is_symmetric_and_real():
    world = WorldBuilder().place("a").place("b").build()
    world.locations["a"].adjacent_ids.append("b")
    world.locations["b"].adjacent_ids.append("nowhere")
    assert names_of(check_all(world)) == {"adjacency.symmetric", "adjacency.exists"}


def test_component_sanity():
    world = (
        WorldBuilder().place("a")
        .thing("tea", "a", Consumable={"uses": -1})
        .thing("lamp", "a", Repairable={"condition": "broken"}, LightSource={"lit": True})
        .thing("chest", "a", Container={"open": False}).thing("coin", "chest")  # closed with contents: fine
        .build()
    )  # fmt: skip
    assert sorted(names_of(check_all(world))) == ["component.consumable", "component.light"]


def test_a_working_world_is_checked_where_it_changed():
    base = keeper_world()
    base.locations["stairs"].adjacent_ids.append("nowhere")  # an old flaw, not this cycle's
    working = base.working_copy()
    assert check(working) == []  # nothing touched yet
    working.edit_entity("torch").location_id = "stairs"  # a bad edit, not through apply
    assert "containment.parent" in names_of(check(working))  # it claims the stairs, which do not list it
    assert "adjacency.exists" not in names_of(check(working))


def test_checking_a_working_copy_costs_what_changed():
    builder = WorldBuilder().place("hub")
    for i in range(300):
        builder.place(f"room{i}", near=("hub",)).thing(f"thing{i}", f"room{i}", Portable={})
    base = builder.synth("ann", "hub").build()
    working = base.working_copy()
    resolve(working, [ActuationIntent(synth_id="ann", action_id="move_to_room7"),
                      ActuationIntent(synth_id="ann", action_id="take_thing7")], cycle=1, microcycle=0)  # fmt: skip
    assert working.touched_entities == {"ann", "thing7"}
    assert working.touched_locations == {"hub", "room7"}
    assert check(working) == []


# -- property: any surface action keeps the world consistent ------------------------------------

KINDS = ["Portable", "Container", "Repairable", "Switchable", "LightSource", "Consumable", "Tool", "SoundSource"]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    n_places = draw(st.integers(1, 3))
    places = [f"p{i}" for i in range(n_places)]
    builder = WorldBuilder(ambient_light=draw(st.sampled_from([0.0, 0.2, 0.5, 1.0])))
    for i, place in enumerate(places):
        near = tuple(p for p in places[:i] if draw(st.booleans()))
        builder.place(place, near=near, indoor=draw(st.booleans()))
    holders = list(places)
    entity_ids: list[str] = []
    for s in range(draw(st.integers(1, 3))):
        channels = tuple(c for c in CHANNELS if c == "proprioceptive" or draw(st.booleans()))
        builder.synth(f"s{s}", draw(st.sampled_from(places)), name=f"S{s}", channels=channels)
        holders.append(f"s{s}")
    for n in range(draw(st.integers(0, 8))):
        kinds = draw(st.sets(st.sampled_from(KINDS), max_size=4)) | ({"Portable"} if draw(st.booleans()) else set())
        components: dict[str, Any] = {}
        condition = draw(st.sampled_from(["ok", "jammed", "broken"]))
        for kind in kinds:
            components[kind] = {
                "Portable": {},
                "Container": {"open": draw(st.booleans()), "locked": draw(st.booleans())},
                "Repairable": {"condition": condition, "links": draw(st.lists(st.sampled_from(entity_ids or ["e0"]), max_size=2)),
                               "repair_requirements": {"tools": draw(st.sampled_from([[], ["wrench"]]))}},  # fmt: skip
                "Switchable": {"on": draw(st.booleans()), "links": draw(st.lists(st.sampled_from(entity_ids or ["e0"]), max_size=2))},
                "LightSource": {"lit": draw(st.booleans()) and ("Repairable" not in kinds or condition == "ok")},
                "Consumable": {"uses": draw(st.integers(0, 2))},
                "Tool": {"kind": "wrench"},
                "SoundSource": {"sound": "a hum", "loudness": draw(st.floats(0, 1))},
            }[kind]
        entity_id = f"e{n}"
        builder.thing(entity_id, draw(st.sampled_from(holders)), **components)
        entity_ids.append(entity_id)
        holders.append(entity_id)
    return builder.build()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), data=st.data())
def test_any_surface_actions_keep_every_invariant(world: World, data: st.DataObject):
    assert check_all(world) == []
    synths = sorted(e.id for e in world.entities.values() if e.synth_id is not None)
    for _ in range(data.draw(st.integers(1, 6))):
        working = world.working_copy()
        intents = []
        for sid in synths:
            options = [o.action_id for o in action_surface(working, sid, {}).options]
            intents.append(ActuationIntent(synth_id=sid, action_id=data.draw(st.sampled_from(options)),
                                           priority=data.draw(st.integers(0, 2))))  # fmt: skip
        before = world.model_dump()
        results = resolve(working, intents, cycle=1, microcycle=0)
        assert world.model_dump() == before  # the base is never written
        assert all(o.status != "failed" for o, _ in results), results  # a surface offers nothing absurd
        assert check(working) == []
        for _, events in results:  # commit: fold the cycle's events into the canonical world
            for e in events:
                apply(world, e)
        assert check_all(world) == []
        for entity_id in world.entities:
            assert working.entity(entity_id) == world.entity(entity_id)
