"""The resolver: component-based verbs, sequential priority order, cascades, no raising."""

from __future__ import annotations

from actors.simulation.invariants import check, check_all
from actors.simulation.payloads import ActionOutcome, ActuationIntent
from actors.simulation.resolver import resolve
from actors.simulation.world import World, WorldView, apply
from actors.simulation.events import ComponentChanged, EntityContained, EntityMoved

from .worlds import WorldBuilder, keeper_world


def intent(synth_id: str, action_id: str, priority: int = 0, text: str = "") -> ActuationIntent:
    return ActuationIntent(synth_id=synth_id, action_id=action_id, priority=priority, text=text)


def do(world: WorldView, synth_id: str, action_id: str) -> ActionOutcome:
    [(outcome, _)] = resolve(world, [intent(synth_id, action_id)], cycle=1, microcycle=0)
    return outcome


def test_two_synths_take_one_item_first_wins_second_is_blocked():
    world = keeper_world()
    results = resolve(world, [intent("ann", "take_torch"), intent("ben", "take_torch")], cycle=2, microcycle=1)
    (first, events), (second, none) = results
    assert (first.synth_id, first.status) == ("ann", "ok")
    assert events == [EntityContained(entity_id="torch", container_id="ann", event_id=events[0].event_id,
                                      timestamp=events[0].timestamp)]  # fmt: skip
    assert (second.synth_id, second.status, none) == ("ben", "blocked", [])
    assert second.reason == "Torch is already carried by Ann"
    assert (first.cycle, first.microcycle) == (2, 1)
    assert world.entity("torch").carried_by_synth_id == "ann"


def test_higher_priority_resolves_first_and_ties_keep_order():
    world = keeper_world()
    results = resolve(world, [intent("ann", "take_torch"), intent("ben", "take_torch", priority=5)], cycle=1, microcycle=0)
    assert [(o.synth_id, o.status) for o, _ in results] == [("ben", "ok"), ("ann", "blocked")]
    assert "already carried by Ben" in results[1][0].reason


def test_repair_needs_the_wrench_from_the_chest_and_lights_the_lamp():
    world = keeper_world()
    blocked = do(world, "ann", "repair_lamp")
    assert blocked.status == "blocked" and "wrench" in blocked.reason
    assert do(world, "ann", "take_wrench").status == "blocked"  # still in the closed chest
    assert do(world, "ann", "open_chest").status == "ok"
    assert do(world, "ann", "take_wrench").status == "ok"
    [(outcome, events)] = resolve(world, [intent("ann", "repair_lamp")], cycle=1, microcycle=0)
    assert outcome.status == "ok"
    assert [(e.component, e.changes) for e in events if isinstance(e, ComponentChanged)] == [
        ("Repairable", {"condition": "ok"}), ("LightSource", {"lit": True}),
    ]  # fmt: skip
    assert world.entity("lamp").components["Repairable"]["condition"] == "ok"
    assert world.entity("lamp").components["LightSource"]["lit"] is True
    assert do(world, "ann", "repair_lamp").status == "blocked"  # nothing left to repair
    assert check_all(world) == []


def test_repair_cascades_to_linked_lights_whose_switch_is_on():
    world = (
        WorldBuilder()
        .place("hall")
        .thing("fuse", "hall", name="Fuse", Repairable={"condition": "broken", "links": ["on_lamp", "off_lamp", "ghost"]})
        .thing("on_lamp", "hall", Switchable={"on": True}, LightSource={"lit": False})
        .thing("off_lamp", "hall", Switchable={"on": False}, LightSource={"lit": False})
        .synth("ann", "hall", name="Ann")
        .build()
    )
    assert do(world, "ann", "repair_fuse").status == "ok"  # no tools required; unknown link skipped
    assert world.entity("on_lamp").components["LightSource"]["lit"] is True
    assert world.entity("off_lamp").components["LightSource"]["lit"] is False


def test_switch_toggles_and_a_broken_light_stays_dark():
    world = (
        WorldBuilder()
        .place("hall")
        .thing("torch", "hall", Switchable={"on": False}, LightSource={"lit": False})
        .thing("panel", "hall", Switchable={"on": False, "links": ["bulb"]})
        .thing("bulb", "hall", Repairable={"condition": "broken"}, LightSource={"lit": False})
        .synth("ann", "hall", name="Ann")
        .build()
    )
    assert do(world, "ann", "switch_torch").status == "ok"
    assert world.entity("torch").components == {"Switchable": {"on": True}, "LightSource": {"lit": True}}
    assert do(world, "ann", "switch_torch").status == "ok"
    assert world.entity("torch").components == {"Switchable": {"on": False}, "LightSource": {"lit": False}}
    assert do(world, "ann", "switch_panel").status == "ok"
    assert world.entity("panel").components["Switchable"]["on"] is True
    assert world.entity("bulb").components["LightSource"]["lit"] is False
    assert check_all(world) == []


def test_carried_items_move_with_their_carrier():
    world = keeper_world()
    do(world, "ann", "open_chest")
    do(world, "ann", "take_wrench")
    do(world, "ann", "take_chest")  # not Portable: blocked, stays
    assert do(world, "ann", "take_torch").status == "ok"
    moved = do(world, "ann", "move_to_stairs")
    assert moved.status == "ok"
    assert world.entity("ann").location_id == "stairs"
    assert world.entity("torch").location_id == "stairs" and world.entity("wrench").location_id == "stairs"
    assert world.entity("chest").location_id == "lamp_room"
    assert "ann" in world.location("stairs").contained_entity_ids
    assert "torch" not in world.location("lamp_room").contained_entity_ids
    assert check_all(world) == []


def test_open_twice_is_blocked_and_locked_containers_stay_shut():
    world = (
        WorldBuilder()
        .place("hall")
        .thing("box", "hall", Container={"open": False})
        .thing("safe", "hall", Container={"open": False, "locked": True})
        .thing("rock", "hall")
        .synth("ann", "hall", name="Ann")
        .build()
    )
    assert do(world, "ann", "open_box").status == "ok"
    assert world.entity("box").components["Container"]["open"] is True
    again = do(world, "ann", "open_box")
    assert again.status == "blocked" and "already open" in again.reason
    assert do(world, "ann", "open_safe").reason == "Safe is locked"
    assert do(world, "ann", "open_rock").status == "blocked"


def test_consume_counts_down_and_stops_at_zero():
    world = WorldBuilder().place("hall").thing("tea", "hall", Consumable={"uses": 1, "effect": "warmth"}).synth("ann", "hall").build()
    first = do(world, "ann", "consume_tea")
    assert first.status == "ok" and "warmth" in first.reason
    assert world.entity("tea").components["Consumable"]["uses"] == 0
    assert do(world, "ann", "consume_tea").status == "blocked"
    assert world.entity("tea").components["Consumable"]["uses"] == 0


def test_move_checks_adjacency():
    world = WorldBuilder().place("a").place("b", near=("a",)).place("c").synth("ann", "a").build()
    assert do(world, "ann", "move_to_c").status == "blocked"
    assert do(world, "ann", "move_to_nowhere").status == "failed"
    [(ok, events)] = resolve(world, [intent("ann", "move_to_b")], cycle=1, microcycle=0)
    assert ok.status == "ok" and [type(e) for e in events] == [EntityMoved]
    assert do(world, "ann", "move_to_b").status == "blocked"  # already there


def test_inspect_describes_without_changing_the_world():
    world = keeper_world()
    before = world.model_dump()
    [(outcome, events)] = resolve(world, [intent("ben", "inspect_lamp")], cycle=1, microcycle=0)
    assert outcome.status == "ok" and events == []
    assert "jammed" in outcome.reason and "wrench" in outcome.reason
    assert world.model_dump() == before


def test_nonsense_fails_with_a_reason_and_never_raises():
    world = keeper_world()
    results = resolve(
        world,
        [intent("ann", "dance"), intent("ann", "take_unicorn"), intent("ghost", "wait"), intent("ann", "fly_lamp"),
         intent("ann", "take_"), intent("cal", "take_torch"), intent("ann", "take_ben"), intent("ann", "wait")],
        cycle=1, microcycle=0,
    )  # fmt: skip
    assert [o.status for o, _ in results] == ["failed", "failed", "failed", "failed", "failed", "blocked", "blocked", "ok"]
    assert all(o.reason for o, _ in results)
    assert results[5][0].reason == "Torch is not here"


def test_communicate_is_left_to_communication():
    world = keeper_world()
    assert resolve(world, [intent("ann", "communicate", text="hi")], cycle=1, microcycle=0) == []


def test_a_working_world_never_mutates_its_base():
    base = keeper_world()
    before = base.model_dump()
    working = base.working_copy()
    for synth_id, action_id in [("ann", "open_chest"), ("ann", "take_wrench"), ("ann", "repair_lamp"),
                                ("ben", "take_torch"), ("ben", "switch_torch"), ("ann", "move_to_stairs")]:  # fmt: skip
        assert do(working, synth_id, action_id).status == "ok"
    assert base.model_dump() == before
    assert working.entity("wrench").location_id == "stairs"
    assert working.entity("lamp").components["LightSource"]["lit"] is True
    assert check(working) == []
    assert working.touched_entities >= {"ann", "wrench", "chest", "lamp", "ben", "torch"}


def test_working_world_and_base_world_agree():
    base, canonical = keeper_world(), keeper_world()
    working = base.working_copy()
    plan = [intent("ann", "open_chest"), intent("ben", "take_wrench"), intent("ben", "repair_lamp"), intent("ben", "move_to_stairs")]
    events = [e for _, es in resolve(working, plan, cycle=1, microcycle=0) for e in es]
    for e in events:
        apply(canonical, e)
    for entity_id in canonical.entities:
        assert working.entity(entity_id) == canonical.entity(entity_id)
    assert isinstance(canonical, World) and check_all(canonical) == []
