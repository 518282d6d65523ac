"""Intent resolution (seed 002): symbolic, component-based, sequential.

Each intent's action id names its verb and its ref (`take_<uuid>`); the resolver looks the
ref up directly and dispatches on the components the entity has, never on what it is.
Intents resolve one at a time, highest priority first (ties keep their order), and each
one's events are applied to the working world at once: when two synths take one wrench,
the second sees it already carried and is blocked. Nothing raises: an impossible intent
is a `blocked` outcome (the world said no) or a `failed` one (the intent made no sense).

`communicate` intents are not resolved here: `communication.resolve_communication` turns
them into speech. Reach is perception's (`within_reach`): a menu item and its resolution
agree on what the synth can lay hands on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.simulation.payloads import ActionOutcome, ActuationIntent, OutcomeStatus
from actors.simulation.perception import describe, enclosing_closed, within_reach
from actors.simulation.world import EntityNode, WorldError, WorldView, apply
from events.base import Event
from actors.simulation.events import ComponentChanged, EntityContained, EntityMoved

Result = tuple[OutcomeStatus, str, list[Event]]  # status, reason, events


def resolve(
    world: WorldView, intents: list[ActuationIntent], *, cycle: int, microcycle: int
) -> list[tuple[ActionOutcome, list[Event]]]:
    """Resolve every non-`communicate` intent against `world` (a working copy, changed in
    place), in priority order; each outcome with the events it applied."""
    ordered = sorted((i for i in intents if i.action_id != "communicate"), key=lambda i: -i.priority)
    results = []
    for intent in ordered:
        try:
            status, reason, events = _resolve_one(world, intent)
        except (WorldError, KeyError) as e:  # the world refused an event: report, never raise
            status, reason, events = "failed", f"cannot {intent.action_id}: {e}", []
        outcome = ActionOutcome(
            synth_id=intent.synth_id, action_id=intent.action_id, status=status,
            reason=reason, cycle=cycle, microcycle=microcycle,
        )  # fmt: skip
        results.append((outcome, events))
    return results


def _resolve_one(world: WorldView, intent: ActuationIntent) -> Result:
    if not world.has_entity(intent.synth_id) or world.entity(intent.synth_id).synth_id != intent.synth_id:
        return "failed", f"no synth {intent.synth_id}", []
    if intent.action_id == "wait":
        return "ok", "You wait.", []
    if intent.action_id.startswith("move_to_"):
        return _move(world, intent.synth_id, intent.action_id.removeprefix("move_to_"))
    verb, _, ref = intent.action_id.partition("_")
    handler = _VERBS.get(verb)
    if handler is None or not ref:
        return "failed", f"unknown action {intent.action_id!r}", []
    if not world.has_entity(ref):
        return "failed", f"no such thing: {ref}", []
    entity = world.entity(ref)
    if not within_reach(world, intent.synth_id, entity):
        return "blocked", _out_of_reach(world, intent.synth_id, entity), []
    return handler(world, intent.synth_id, entity)


def _commit(world: WorldView, events: list[Event]) -> list[Event]:
    for e in events:
        apply(world, e)
    return events


def _change(entity: EntityNode, component: str, **changes: Any) -> ComponentChanged:
    return ComponentChanged(entity_id=entity.id, component=component, changes=changes)


def _out_of_reach(world: WorldView, synth_id: str, entity: EntityNode) -> str:
    if entity.synth_id is not None:
        return f"{entity.name} is not something to handle"
    if entity.carried_by_synth_id not in (None, synth_id):
        return f"{entity.name} is already carried by {world.body_of(entity.carried_by_synth_id).name}"
    if entity.location_id != world.body_of(synth_id).location_id:
        return f"{entity.name} is not here"
    shut = enclosing_closed(world, entity)
    if shut is not None:
        return f"{entity.name} is inside the closed {shut.name}"
    return f"{entity.name} is out of reach"


# -- verbs ---------------------------------------------------------------------------------------


def _move(world: WorldView, synth_id: str, target_id: str) -> Result:
    try:
        target = world.location(target_id)
    except KeyError:
        return "failed", f"no such place: {target_id}", []
    body = world.body_of(synth_id)
    here = world.location(body.location_id)
    if target.id == here.id:
        return "blocked", f"You are already in {here.name}", []
    if target.id not in here.adjacent_ids:
        return "blocked", f"{target.name} cannot be reached from {here.name}", []
    events = _commit(world, [EntityMoved(entity_id=synth_id, location_id=target.id)])
    return "ok", f"You went to {target.name}.", events


def _inspect(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    return "ok", describe(world, entity), []


def _take(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    if entity.component("Portable") is None:
        return "blocked", f"{entity.name} cannot be carried", []
    if entity.carried_by_synth_id == synth_id:
        return "blocked", f"You already carry {entity.name}", []
    events = _commit(world, [EntityContained(entity_id=entity.id, container_id=synth_id)])
    return "ok", f"You picked up {entity.name}.", events


def _open(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    box = entity.component("Container")
    if box is None:
        return "blocked", f"{entity.name} does not open", []
    if box.get("open"):
        return "blocked", f"{entity.name} is already open", []
    if box.get("locked"):
        return "blocked", f"{entity.name} is locked", []
    events = _commit(world, [_change(entity, "Container", open=True)])
    inside = [world.entity(i).name for i in world.entity(entity.id).contained_entity_ids]
    return "ok", f"You opened {entity.name}; inside: {', '.join(inside) or 'nothing'}.", events


def _consume(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    use = entity.component("Consumable")
    if use is None:
        return "blocked", f"{entity.name} cannot be used up", []
    uses = int(use.get("uses", 0))
    if uses <= 0:
        return "blocked", f"{entity.name} is used up", []
    events = _commit(world, [_change(entity, "Consumable", uses=uses - 1)])
    effect = f" ({use['effect']})" if use.get("effect") else ""
    return "ok", f"You used {entity.name}{effect}; {uses - 1} use(s) left.", events


def _repair(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    fix = entity.component("Repairable")
    if fix is None:
        return "blocked", f"{entity.name} cannot be repaired", []
    if fix.get("condition", "ok") == "ok":
        return "blocked", f"{entity.name} does not need repair", []
    needed = list((fix.get("repair_requirements") or {}).get("tools") or [])
    have = _tool_kinds(world, synth_id)
    missing = [k for k in needed if k not in have]
    if missing:
        return "blocked", f"Repairing {entity.name} needs a tool you do not carry: {', '.join(missing)}", []
    events = _commit(world, [_change(entity, "Repairable", condition="ok")])
    for target_id in [entity.id, *_links(fix)]:
        if not world.has_entity(target_id):
            continue
        target = world.entity(target_id)
        toggle = target.component("Switchable")
        if toggle is None or toggle.get("on"):
            events += _set_lit(world, target, True)
    return "ok", f"You repaired {entity.name}.", events


def _switch(world: WorldView, synth_id: str, entity: EntityNode) -> Result:
    toggle = entity.component("Switchable")
    if toggle is None:
        return "blocked", f"{entity.name} has no switch", []
    on = not toggle.get("on", False)
    events = _commit(world, [_change(entity, "Switchable", on=on)])
    for target_id in [entity.id, *_links(toggle)]:
        if world.has_entity(target_id):
            events += _set_lit(world, world.entity(target_id), on)
    return "ok", f"You switched {entity.name} {'on' if on else 'off'}.", events


_VERBS: dict[str, Callable[[WorldView, str, EntityNode], Result]] = {
    "inspect": _inspect,
    "take": _take,
    "open": _open,
    "consume": _consume,
    "repair": _repair,
    "switch": _switch,
}


# -- cascades ------------------------------------------------------------------------------------


def _links(component: dict[str, Any]) -> list[str]:
    return [str(i) for i in component.get("links") or []]


def _set_lit(world: WorldView, target: EntityNode, lit: bool) -> list[Event]:
    """Light or darken a LightSource; a light on something not in working order stays
    dark whatever its switch says."""
    lamp = target.component("LightSource")
    if lamp is None:
        return []
    fix = target.component("Repairable")
    lit = lit and (fix is None or fix.get("condition", "ok") == "ok")
    if bool(lamp.get("lit")) == lit:
        return []
    return _commit(world, [_change(target, "LightSource", lit=lit)])


def _tool_kinds(world: WorldView, synth_id: str) -> set[str]:
    """The kinds of every Tool the synth's body holds, however deep."""
    kinds: set[str] = set()
    stack = list(world.body_of(synth_id).contained_entity_ids)
    while stack:
        item = world.entity(stack.pop())
        tool = item.component("Tool")
        if tool is not None and "kind" in tool:
            kinds.add(str(tool["kind"]))
        stack.extend(item.contained_entity_ids)
    return kinds
