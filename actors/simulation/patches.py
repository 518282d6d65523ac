"""Typed admin patches (seed 002's admin patch lane), pure: operations applied to a working
copy of the world and the synths' minds, then validated against the invariants.

    plan(world, synths, [MoveEntity(entity="Wrench", to="Lamp Room")]) -> Planned

An operation names things by id or by name (`resolve`: exact id first, then a unique name,
any case); `Planned.operations` are the operations with every ref resolved to its id (and
a created entity's id chosen), which is what a commit records, so replay re-applies exactly
them. A planned patch is valid when every operation applied and the invariants (and the
ruleset's component schemas) hold on the working copy; its `diff` says what would change.
Nothing here touches the store: committing is the session shell's (`DirectorShell.commit_patch`).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from actors.simulation import invariants
from actors.simulation.invariants import Violation
from actors.simulation.ruleset import get_ruleset, validate_component
from actors.simulation.synth import Belief, Memory, SynthState
from actors.simulation.world import EntityNode, WorkingWorld, World, WorldError, apply
from events.base import Event
from actors.simulation.events import (
    ComponentChanged,
    EntityContained,
    EntityCreated,
    EntityMoved,
    EnvironmentChanged,
)

PATCH_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "chorus:simulation:admin-patch")
MAX_OPERATIONS = 100


class PatchError(ValueError):
    """An operation that cannot apply (an unknown or ambiguous ref, a missing component)."""


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MoveEntity(_Op):
    """Put an entity (a thing, or a synth's body with what it carries) directly in a location."""

    op: Literal["move_entity"] = "move_entity"
    entity: str = Field(description="the entity's id or name")
    to: str = Field(description="the location's id or name")


class PutEntity(_Op):
    """Put an entity inside another (a chest, or a synth's body: then the synth carries it)."""

    op: Literal["put_entity"] = "put_entity"
    entity: str = Field(description="the entity's id or name")
    into: str = Field(description="the container's id or name (a synth's name: it carries it)")


class CreateEntity(_Op):
    """A new entity, in a location or inside another entity, with ruleset components."""

    op: Literal["create_entity"] = "create_entity"
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    location: str | None = Field(default=None, description="a location's id or name")
    into: str | None = Field(default=None, description="a container's id or name (instead of location)")
    components: dict[str, dict[str, Any]] = {}
    id: str | None = Field(default=None, min_length=1, max_length=100, description="the new entity's id (chosen when omitted)")


class SetComponentProperty(_Op):
    """Set one property of one component of an entity (the component must exist)."""

    op: Literal["set_component_property"] = "set_component_property"
    entity: str = Field(description="the entity's id or name")
    component: str = Field(min_length=1, description="a component type the entity has, e.g. LightSource")
    property: str = Field(min_length=1)
    value: Any = None


class SetEnvironment(_Op):
    """Set one ambient value of the world (light, weather, ...)."""

    op: Literal["set_environment"] = "set_environment"
    key: str = Field(min_length=1)
    value: Any = None


class AddBelief(_Op):
    """Give a synth a belief (replacing its belief about the same subject)."""

    op: Literal["add_belief"] = "add_belief"
    synth: str = Field(description="the synth's id or name")
    subject: str = Field(min_length=1, max_length=60)
    content: str = Field(min_length=1, max_length=200)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class AddMemory(_Op):
    """Give a synth a memory."""

    op: Literal["add_memory"] = "add_memory"
    synth: str = Field(description="the synth's id or name")
    content: str = Field(min_length=1, max_length=200)
    salience: float = Field(default=0.5, ge=0.0, le=1.0)


Operation = Annotated[
    MoveEntity | PutEntity | CreateEntity | SetComponentProperty | SetEnvironment | AddBelief | AddMemory,
    Field(discriminator="op"),
]
_operations = TypeAdapter(list[Operation])


def parse_operations(data: list[dict[str, Any]]) -> list[Any]:
    """Operations from their JSON form (a recorded PatchCommitted's, say)."""
    return _operations.validate_python(data)


class Change(BaseModel):
    """One field a patch (or the cycles since a cursor) changed."""

    kind: Literal["entity", "location", "environment", "synth", "process", "clock"]
    id: str
    name: str
    field: str
    before: Any = None
    after: Any = None


@dataclass
class Planned:
    operations: list[Any]  # refs resolved: what a commit records
    world_events: list[Event] = field(default_factory=list)
    synth_changes: dict[str, dict[str, Any]] = field(default_factory=dict)  # synth id -> fields replaced
    violations: list[Violation] = field(default_factory=list)
    diff: list[Change] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.violations


# -- refs ------------------------------------------------------------------------------------


Kind = Literal["entity", "location", "synth"]


def matches(
    world: World, synths: dict[str, SynthState], ref: str, kind: Kind, created: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(id, name) of everything of `kind` that `ref` names: its id, else its name (any
    case). `created`: id -> name of entities a patch has made so far."""
    if kind == "location":
        pool = [(loc.id, loc.name) for loc in world.locations.values()]
    elif kind == "synth":
        pool = [(sid, s.identity.name) for sid, s in synths.items()]
    else:
        pool = [(e.id, e.name) for e in world.entities.values()] + list((created or {}).items())
    exact = [(i, n) for i, n in pool if i == ref]
    if exact:
        return exact
    key = " ".join(ref.split()).casefold()
    return sorted((i, n) for i, n in pool if " ".join(n.split()).casefold() == key)


def resolve(
    world: World, synths: dict[str, SynthState], ref: str, kind: Kind, created: dict[str, str] | None = None
) -> str:
    """The one id `ref` names, or PatchError saying why not."""
    found = matches(world, synths, ref, kind, created)
    if not found:
        raise PatchError(f"no {kind} {ref!r}")
    if len(found) > 1:
        raise PatchError(f"{kind} {ref!r} is ambiguous: ids {', '.join(i for i, _ in found)}")
    return found[0][0]


# -- planning --------------------------------------------------------------------------------


def plan(
    world: World,
    synths: dict[str, SynthState],
    operations: list[Any],
    *,
    check: Callable[[Any], list[Violation]] = invariants.check,
) -> Planned:
    """Apply `operations` in order to a working copy of `world` and of the synths' minds;
    the first that cannot apply stops the plan (a violation `patch.operation`). Neither
    `world` nor `synths` is changed."""
    if not operations:
        raise PatchError("a patch needs at least one operation")
    if len(operations) > MAX_OPERATIONS:
        raise PatchError(f"a patch takes at most {MAX_OPERATIONS} operations, not {len(operations)}")
    working = world.working_copy()
    draft = _Draft(world, working, dict(synths))
    minds = draft.minds
    planned = Planned(operations=[])
    ruleset = get_ruleset(world.ruleset_ref)
    for n, op in enumerate(operations, start=1):
        try:
            resolved, events = _plan_one(draft, op, n)
            for e in events:
                apply(working, e)
        except (PatchError, WorldError, KeyError) as e:
            message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
            planned.violations.append(Violation("patch.operation", f"operation {n} ({op.op}): {message}"))
            return planned
        planned.operations.append(resolved)
        planned.world_events.extend(events)
        for ev in events:  # components a patch writes must still fit the ruleset
            if isinstance(ev, ComponentChanged | EntityCreated):
                node = working.entity(ev.entity_id if isinstance(ev, ComponentChanged) else ev.entity["id"])
                for type_name, props in node.components.items():
                    if isinstance(ev, ComponentChanged) and type_name != ev.component:
                        continue
                    errors, _ = validate_component(ruleset, type_name, props)
                    planned.violations += [Violation("ruleset.component", f"{node.id}: {p}: {m}") for p, m in errors]
    planned.violations += check(working)
    for sid, state in minds.items():
        if state is not synths.get(sid):
            before = synths[sid].model_dump(mode="json")
            after = state.model_dump(mode="json")
            changed = {k: v for k, v in after.items() if before.get(k) != v}
            if changed:
                planned.synth_changes[sid] = changed
                name = state.identity.name
                planned.diff += [Change(kind="synth", id=sid, name=name, field=k, before=before.get(k), after=v) for k, v in changed.items()]
    planned.diff = diff_working(working) + planned.diff
    return planned


@dataclass
class _Draft:
    """A plan in progress: the working world, the working minds, the entities made so far."""

    world: World
    working: WorkingWorld
    minds: dict[str, SynthState]
    created: dict[str, str] = field(default_factory=dict)  # id -> name

    def ref(self, ref: str, kind: Kind) -> str:
        return resolve(self.world, self.minds, ref, kind, self.created)

    def container(self, ref: str) -> str:
        """An entity, or a synth's body (a synth named as a container carries the thing)."""
        if not matches(self.world, self.minds, ref, "entity", self.created):
            bodies = matches(self.world, self.minds, ref, "synth")
            if len(bodies) == 1:
                return bodies[0][0]
        return self.ref(ref, "entity")


def _plan_one(d: _Draft, op: Any, n: int) -> tuple[Any, list[Event]]:
    w, minds = d.working, d.minds
    if isinstance(op, MoveEntity):
        entity, to = d.ref(op.entity, "entity"), d.ref(op.to, "location")
        return op.model_copy(update={"entity": entity, "to": to}), [EntityMoved(entity_id=entity, location_id=to)]
    if isinstance(op, PutEntity):
        entity, into = d.ref(op.entity, "entity"), d.container(op.into)
        return op.model_copy(update={"entity": entity, "into": into}), [EntityContained(entity_id=entity, container_id=into)]
    if isinstance(op, CreateEntity):
        if (op.location is None) == (op.into is None):
            raise PatchError("give exactly one of location or into")
        holder = d.container(op.into) if op.into is not None else None
        location = w.entity(holder).location_id if holder is not None else d.ref(op.location or "", "location")
        census = len(d.world.entities) + len(d.created)
        new_id = op.id or str(uuid.uuid5(PATCH_ID_NAMESPACE, f"{w.name}\x1f{op.name}\x1f{census}\x1f{n}"))
        if w.has_entity(new_id):
            raise PatchError(f"entity {new_id} exists already")
        node = EntityNode(
            id=new_id, name=op.name, description=op.description, location_id=location, container_id=holder,
            components={k: dict(v) for k, v in op.components.items()},
        )  # fmt: skip
        d.created[new_id] = op.name
        resolved = op.model_copy(update={"id": new_id, "location": None if holder else location, "into": holder})
        return resolved, [EntityCreated(entity=node.model_dump(mode="json"))]
    if isinstance(op, SetComponentProperty):
        entity = d.ref(op.entity, "entity")
        if w.entity(entity).component(op.component) is None:
            have = ", ".join(sorted(w.entity(entity).components)) or "none"
            raise PatchError(f"{w.entity(entity).name} has no {op.component} component (it has: {have})")
        event = ComponentChanged(entity_id=entity, component=op.component, changes={op.property: op.value})
        return op.model_copy(update={"entity": entity}), [event]
    if isinstance(op, SetEnvironment):
        return op, [EnvironmentChanged(changes={op.key: op.value})]
    if isinstance(op, AddBelief):
        sid = d.ref(op.synth, "synth")
        state = minds[sid]
        beliefs = [b for b in state.beliefs if b.subject.casefold() != op.subject.casefold()]
        beliefs.append(Belief(subject=op.subject, content=op.content, confidence=op.confidence))
        minds[sid] = state.model_copy(update={"beliefs": beliefs})
        return op.model_copy(update={"synth": sid}), []
    if isinstance(op, AddMemory):
        sid = d.ref(op.synth, "synth")
        state = minds[sid]
        cycle = max((m.cycle for m in state.memories), default=0)
        memory = Memory(content=op.content, cycle=cycle, salience=op.salience)
        minds[sid] = state.model_copy(update={"memories": [*state.memories, memory]})
        return op.model_copy(update={"synth": sid}), []
    raise PatchError(f"unknown operation {type(op).__name__}")


def patch_id(run_id: str, director_version: int, operations: list[Any]) -> str:
    body = "\x1f".join(op.model_dump_json() for op in operations)
    return hashlib.sha256(f"{run_id}\x1f{director_version}\x1f{body}".encode()).hexdigest()[:12]


# -- diffs -----------------------------------------------------------------------------------


def diff_working(working: WorkingWorld) -> list[Change]:
    """What a working copy changed against its base: touched entities and locations, the
    environment, processes and the clock."""
    base = working.base
    after = World.model_construct(
        **{**base.__dict__, "environment": working.environment, "clock": working.clock, "processes": working.processes,
           "entities": {**base.entities, **{i: working.entity(i) for i in working.touched_entities}},
           "locations": {**base.locations, **{i: working.location(i) for i in working.touched_locations}}},
    )  # fmt: skip
    return diff_worlds(base, after, entity_ids=working.touched_entities, location_ids=working.touched_locations)


def diff_worlds(
    before: World, after: World, *, entity_ids: set[str] | None = None, location_ids: set[str] | None = None
) -> list[Change]:
    """Field by field, what differs between two states of one world (all nodes, unless
    the ids to compare are given)."""
    out: list[Change] = []
    if before.clock.tick != after.clock.tick:
        out.append(Change(kind="clock", id="clock", name="clock", field="tick", before=before.clock.tick, after=after.clock.tick))
    for key in sorted({*before.environment, *after.environment}):
        if before.environment.get(key) != after.environment.get(key):
            out.append(Change(kind="environment", id=key, name=key, field="value",
                              before=before.environment.get(key), after=after.environment.get(key)))  # fmt: skip
    for pid in sorted({*before.processes, *after.processes}):
        a, b = before.processes.get(pid), after.processes.get(pid)
        if a is not None and b is not None and a.state != b.state:
            out.append(Change(kind="process", id=pid, name=b.name, field="state", before=a.state, after=b.state))
    for kind, old, new, ids in (
        ("location", before.locations, after.locations, location_ids),
        ("entity", before.entities, after.entities, entity_ids),
    ):
        for node_id in sorted(ids if ids is not None else {*old, *new}):
            a_node, b_node = old.get(node_id), new.get(node_id)
            a_dump = a_node.model_dump(mode="json") if a_node is not None else {}
            b_dump = b_node.model_dump(mode="json") if b_node is not None else {}
            either = b_node or a_node
            name = either.name if either is not None else node_id
            for key in sorted({*a_dump, *b_dump} - {"id"}):
                if a_dump.get(key) != b_dump.get(key):
                    out.append(Change(kind=kind, id=node_id, name=name, field=key, before=a_dump.get(key), after=b_dump.get(key)))  # type: ignore[arg-type]
    return out
