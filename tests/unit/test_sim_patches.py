"""Typed admin patches (actors/simulation/patches.py), pure: planned on a working copy, checked
against the invariants and the ruleset, the canonical world and minds left as they were."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from actors.simulation import patches
from actors.simulation.patches import (
    AddBelief,
    AddMemory,
    CreateEntity,
    MoveEntity,
    PatchError,
    PutEntity,
    SetComponentProperty,
    SetEnvironment,
    parse_operations,
    plan,
)
from actors.simulation.synth import Belief, Identity, SynthState
from actors.simulation.world import apply
from tests.unit.simulation.worlds import keeper_world


def minds(world) -> dict[str, SynthState]:
    names = {"ann": "Ann", "ben": "Ben", "cal": "Cal"}
    return {
        sid: SynthState(synth_id=sid, identity=Identity(name=name), beliefs=[Belief(subject="Lamp", content="It is jammed.")])
        for sid, name in names.items()
    }


def commit(world, synths, planned):
    """What folding a committed patch does (the shell appends the same events)."""
    for e in planned.world_events:
        apply(world, e)
    for sid, changes in planned.synth_changes.items():
        synths[sid] = SynthState.model_validate({**synths[sid].model_dump(), **changes})


def test_a_move_by_name_is_planned_with_ids_and_leaves_the_world_alone():
    world, synths = keeper_world(), None
    synths = minds(world)
    before = world.model_dump()
    planned = plan(world, synths, [MoveEntity(entity="beacon lamp", to="Stairs")])
    assert planned.valid, planned.violations
    assert planned.operations == [MoveEntity(entity="lamp", to="stairs")]
    assert world.model_dump() == before  # planned on a working copy
    fields = {(c.kind, c.id, c.field): (c.before, c.after) for c in planned.diff}
    assert fields[("entity", "lamp", "location_id")] == ("lamp_room", "stairs")
    assert "lamp" not in fields[("location", "stairs", "contained_entity_ids")][0]
    assert "lamp" in fields[("location", "stairs", "contained_entity_ids")][1]


def test_putting_a_thing_into_a_synth_makes_the_synth_carry_it():
    world = keeper_world()
    synths = minds(world)
    planned = plan(world, synths, [PutEntity(entity="Torch", into="Cal")])
    assert planned.valid, planned.violations
    commit(world, synths, planned)
    torch = world.entities["torch"]
    assert (torch.container_id, torch.carried_by_synth_id, torch.location_id) == ("cal", "cal", "stairs")


def test_an_invariant_violation_makes_the_patch_invalid():
    world = keeper_world()
    planned = plan(world, minds(world), [SetComponentProperty(entity="lamp", component="LightSource", property="lit", value=True)])
    assert not planned.valid
    assert [v.name for v in planned.violations] == ["component.light"]  # lit while jammed


def test_repairing_then_lighting_in_one_patch_is_valid():
    world = keeper_world()
    ops = [
        SetComponentProperty(entity="lamp", component="Repairable", property="condition", value="ok"),
        SetComponentProperty(entity="lamp", component="LightSource", property="lit", value=True),
    ]
    planned = plan(world, minds(world), ops)
    assert planned.valid, planned.violations
    assert [e.type_name for e in planned.world_events] == ["ComponentChanged", "ComponentChanged"]


def test_an_unknown_ref_stops_the_plan_at_its_operation():
    world = keeper_world()
    planned = plan(world, minds(world), [SetEnvironment(key="weather", value="storm"), MoveEntity(entity="Anchor", to="stairs")])
    assert not planned.valid
    (v,) = planned.violations
    assert v.name == "patch.operation" and "operation 2 (move_entity)" in v.message and "'Anchor'" in v.message


def test_a_missing_component_and_a_wrong_property_type_are_violations():
    world = keeper_world()
    missing = plan(world, minds(world), [SetComponentProperty(entity="bell", component="LightSource", property="lit", value=True)])
    assert not missing.valid and "has no LightSource component" in missing.violations[0].message
    wrong = plan(world, minds(world), [SetComponentProperty(entity="lamp", component="LightSource", property="lit", value="yes")])
    assert not wrong.valid and wrong.violations[0].name == "ruleset.component"


def test_creating_an_entity_inside_a_chest_then_moving_it_by_name():
    world = keeper_world()
    synths = minds(world)
    ops = [
        CreateEntity(name="Oil Can", into="Tool Chest", components={"Portable": {"weight": 0.5}}),
        MoveEntity(entity="Oil Can", to="stairs"),
    ]
    planned = plan(world, synths, ops)
    assert planned.valid, planned.violations
    new_id = planned.operations[0].id
    assert new_id and planned.operations[1].entity == new_id
    again = plan(world, synths, ops)  # the same world and operations: the same id (replay)
    assert again.operations[0].id == new_id
    commit(world, synths, planned)
    assert world.entities[new_id].location_id == "stairs" and new_id in world.locations["stairs"].contained_entity_ids
    assert new_id not in world.entities["chest"].contained_entity_ids


def test_create_entity_needs_exactly_one_place():
    world = keeper_world()
    planned = plan(world, minds(world), [CreateEntity(name="Ghost")])
    assert not planned.valid and "exactly one of location or into" in planned.violations[0].message


def test_beliefs_and_memories_change_only_the_named_mind():
    world = keeper_world()
    synths = minds(world)
    ops = [
        AddBelief(synth="Ann", subject="lamp", content="Someone fixed it.", confidence=0.6),
        AddMemory(synth="ann", content="A stranger walked by."),
    ]
    planned = plan(world, synths, ops)
    assert planned.valid and planned.world_events == []
    assert set(planned.synth_changes) == {"ann"} and set(planned.synth_changes["ann"]) == {"beliefs", "memories"}
    assert synths["ann"].beliefs[0].content == "It is jammed."  # untouched until committed
    commit(world, synths, planned)
    assert [(b.subject, b.content) for b in synths["ann"].beliefs] == [("lamp", "Someone fixed it.")]  # one per subject
    assert synths["ann"].memories[-1].content == "A stranger walked by."
    assert {c.field for c in planned.diff if c.kind == "synth"} == {"beliefs", "memories"}


def test_an_ambiguous_name_is_refused():
    world = keeper_world()
    world.entities["torch"].name = "Bell"
    planned = plan(world, minds(world), [MoveEntity(entity="BELL", to="stairs")])  # two names match; no id does
    assert not planned.valid and "ambiguous" in planned.violations[0].message


def test_operations_round_trip_through_json_and_bad_ones_are_refused():
    ops = [MoveEntity(entity="lamp", to="stairs"), AddBelief(synth="ann", subject="s", content="c")]
    assert parse_operations([op.model_dump(mode="json") for op in ops]) == ops
    with pytest.raises(ValidationError):
        parse_operations([{"op": "delete_world"}])
    with pytest.raises(PatchError):
        plan(keeper_world(), {}, [])


def test_diff_worlds_names_environment_and_clock_changes():
    a, b = keeper_world(weather="calm"), keeper_world(weather="storm")
    b.clock = b.clock.model_copy(update={"tick": 3})
    changes = patches.diff_worlds(a, b)
    assert {(c.kind, c.field, c.before, c.after) for c in changes} == {
        ("environment", "value", "calm", "storm"),
        ("clock", "tick", 0, 3),
    }
