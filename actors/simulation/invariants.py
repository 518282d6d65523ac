"""Invariants (seed 002, step 5 of the director cycle): what must hold before a cycle's
working world may become canonical. A violation rolls the whole cycle back.

Containment is checked from both ends: every entity names one parent (its location, or
the entity holding it) and that parent lists it exactly once; every list names children
that point back. Checking each node against its neighbours is enough to catch an entity
listed twice or nowhere, so on a `WorkingWorld` only what the cycle touched (and the
nodes those name) is checked: the cost follows the change, not the world. The component
checks are the ruleset's, scenario-agnostic.
"""

from __future__ import annotations

from typing import NamedTuple

from actors.simulation.world import EntityNode, LocationNode, World, WorkingWorld, WorldView


class Violation(NamedTuple):
    name: str  # which invariant, e.g. "containment.parent"
    message: str


def check(world: WorldView) -> list[Violation]:
    """The invariants over what changed: a working copy's touched nodes, or all of a World."""
    if isinstance(world, WorkingWorld):
        return _check(world, sorted(world.touched_entities), sorted(world.touched_locations))
    if isinstance(world, World):
        return check_all(world)
    raise TypeError(f"cannot check {type(world).__name__}")


def check_all(world: World) -> list[Violation]:
    """Every invariant over every node, plus a census: each entity listed exactly once."""
    found = _check(world, list(world.entities), list(world.locations))
    listed: dict[str, int] = {}
    holders: list[LocationNode | EntityNode] = [*world.locations.values(), *world.entities.values()]
    for holder in holders:
        for child in holder.contained_entity_ids:
            listed[child] = listed.get(child, 0) + 1
    for entity_id in world.entities:
        if listed.get(entity_id, 0) != 1:
            times = listed.get(entity_id, 0)
            found.append(Violation("containment.listed_once", f"{entity_id} is listed {times} times"))
    return found


def _check(world: WorldView, entity_ids: list[str], location_ids: list[str]) -> list[Violation]:
    found: list[Violation] = []
    for entity_id in entity_ids:
        if world.has_entity(entity_id):
            entity = world.entity(entity_id)
            found += _entity(world, entity)
            found += _components(entity)
    for location_id in location_ids:
        place = _location(world, location_id)
        if place is not None:
            found += _place(world, place)
    return found


def _location(world: WorldView, location_id: str) -> LocationNode | None:
    try:
        return world.location(location_id)
    except KeyError:
        return None


def _entity(world: WorldView, e: EntityNode) -> list[Violation]:
    bad: list[Violation] = []
    if _location(world, e.location_id) is None:
        return [Violation("containment.location", f"{e.id} is in unknown location {e.location_id}")]
    if e.synth_id is not None and e.container_id is not None:
        bad.append(Violation("containment.body", f"body {e.id} is inside {e.container_id}, not in a location"))
    if e.container_id is None:
        parent_list = world.location(e.location_id).contained_entity_ids
        expected_carrier = None
    elif not world.has_entity(e.container_id):
        return bad + [Violation("containment.container", f"{e.id} is inside unknown {e.container_id}")]
    else:
        holder = world.entity(e.container_id)
        parent_list = holder.contained_entity_ids
        expected_carrier = holder.synth_id or holder.carried_by_synth_id
        if holder.location_id != e.location_id:
            where = f"{e.id} is in {e.location_id} but its container {holder.id} is in {holder.location_id}"
            bad.append(Violation("containment.location", where))
    if parent_list.count(e.id) != 1:
        bad.append(Violation("containment.parent", f"{e.id}'s parent lists it {parent_list.count(e.id)} times"))
    if e.carried_by_synth_id != expected_carrier:
        who = f"{e.id} carried_by {e.carried_by_synth_id}, but is under {expected_carrier}"
        bad.append(Violation("containment.carried", who))
    if _in_cycle(world, e):
        bad.append(Violation("containment.cycle", f"{e.id} is inside itself"))
    for child_id in e.contained_entity_ids:
        if not world.has_entity(child_id) or world.entity(child_id).container_id != e.id:
            bad.append(Violation("containment.child", f"{e.id} lists {child_id}, which is not inside it"))
    if len(set(e.contained_entity_ids)) != len(e.contained_entity_ids):
        bad.append(Violation("containment.duplicate", f"{e.id} lists an entity twice"))
    return bad


def _in_cycle(world: WorldView, e: EntityNode) -> bool:
    seen = {e.id}
    current = e.container_id
    while current is not None and world.has_entity(current):
        if current in seen:
            return True
        seen.add(current)
        current = world.entity(current).container_id
    return False


def _place(world: WorldView, place: LocationNode) -> list[Violation]:
    bad: list[Violation] = []
    for child_id in place.contained_entity_ids:
        child = world.entity(child_id) if world.has_entity(child_id) else None
        if child is None or child.container_id is not None or child.location_id != place.id:
            bad.append(Violation("containment.child", f"{place.id} lists {child_id}, which is not directly in it"))
    if len(set(place.contained_entity_ids)) != len(place.contained_entity_ids):
        bad.append(Violation("containment.duplicate", f"{place.id} lists an entity twice"))
    for near_id in place.adjacent_ids:
        near = _location(world, near_id)
        if near is None:
            bad.append(Violation("adjacency.exists", f"{place.id} is adjacent to unknown {near_id}"))
        elif place.id not in near.adjacent_ids:
            bad.append(Violation("adjacency.symmetric", f"{place.id} leads to {near_id} but not back"))
    return bad


def _components(e: EntityNode) -> list[Violation]:
    bad: list[Violation] = []
    use = e.component("Consumable")
    if use is not None and int(use.get("uses", 0)) < 0:
        bad.append(Violation("component.consumable", f"{e.id} has {use.get('uses')} uses"))
    lamp, fix = e.component("LightSource"), e.component("Repairable")
    if lamp is not None and lamp.get("lit") and fix is not None and fix.get("condition", "ok") != "ok":
        bad.append(Violation("component.light", f"{e.id} is lit but {fix.get('condition')}"))
    return bad
