"""The canonical world model (seed 002): locations, entities with typed components, world
processes, latent facts, the environment and the clock, with containment first-class.

Containment:
- a location contains entities (`LocationNode.contained_entity_ids`);
- an entity contains entities (`EntityNode.contained_entity_ids`, `container_id` back);
- a synth's body is an entity (`synth_id` set) and carries what it contains
  (`carried_by_synth_id` on each carried entity);
- `location_id` is where an entity is, through any containers: carried items move with
  their carrier because `apply` moves a whole subtree.

The world changes only through `apply(world, event)`, on the canonical `World` (the fold
of the world stream) or on a `WorkingWorld` (a cycle's copy-on-write working copy: reads
fall through to the canonical world, and only what a cycle touches is copied, so a cycle
costs what it changes, not the size of the world). The kernel does not know what any
entity means: a component is a type name and a dict of properties.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from events.base import Event
from actors.simulation.events import (
    ClockAdvanced,
    Communicated,
    ComponentChanged,
    EntityContained,
    EntityCreated,
    EntityMoved,
    EnvironmentChanged,
    ProcessTransitioned,
    WorldCreated,
)

CHANNELS = ("visual", "auditory", "tactile", "proprioceptive")


class LocationNode(BaseModel):
    id: str
    name: str
    description: str = ""
    adjacent_ids: list[str] = []
    contained_entity_ids: list[str] = []  # entities directly here (not inside another)
    properties: dict[str, Any] = {}  # e.g. {"ambient_light": 0.2, "indoor": true}


class EntityNode(BaseModel):
    id: str
    name: str
    description: str = ""
    location_id: str  # where it is, through any containers or carrier
    container_id: str | None = None  # the entity directly holding it; None: directly in its location
    carried_by_synth_id: str | None = None  # set when its container is a synth's body
    synth_id: str | None = None  # set on a synth's body entity
    contained_entity_ids: list[str] = []
    components: dict[str, dict[str, Any]] = {}  # component type -> its properties

    def component(self, name: str) -> dict[str, Any] | None:
        return self.components.get(name)


class ProcessState(BaseModel):
    """A world process: a statechart (its definition, as the pack gave it) and where it is."""

    id: str
    name: str
    chart: dict[str, Any]
    state: str  # the active state's path, e.g. "night.stormy"
    entered_tick: int = 0


class LatentFact(BaseModel):
    id: str
    text: str
    known_by: list[str] = []  # synth ids


class Clock(BaseModel):
    tick: int = 0
    chronon_seconds: int = 600  # simulated seconds per tick
    start: str = "2026-01-01T18:00:00"  # simulated time at tick 0 (ISO, no zone)


class World(BaseModel):
    name: str
    random_seed: int = 0
    ruleset_ref: str = "physical_social_v1"
    clock: Clock = Field(default_factory=Clock)
    environment: dict[str, Any] = {}
    locations: dict[str, LocationNode] = {}
    entities: dict[str, EntityNode] = {}
    processes: dict[str, ProcessState] = {}
    latent_facts: list[LatentFact] = []

    # The access protocol `apply` and the kernel use (shared with WorkingWorld). On the
    # canonical world an edit is the object itself: folding the log mutates in place.
    def entity(self, entity_id: str) -> EntityNode:
        return self.entities[entity_id]

    def location(self, location_id: str) -> LocationNode:
        return self.locations[location_id]

    def process(self, process_id: str) -> ProcessState:
        return self.processes[process_id]

    def has_entity(self, entity_id: str) -> bool:
        return entity_id in self.entities

    def edit_entity(self, entity_id: str) -> EntityNode:
        return self.entities[entity_id]

    def edit_location(self, location_id: str) -> LocationNode:
        return self.locations[location_id]

    def edit_process(self, process_id: str) -> ProcessState:
        return self.processes[process_id]

    def body_of(self, synth_id: str) -> EntityNode:
        return self.entities[synth_id]  # a synth's body entity has the synth's id

    def add_entity(self, node: EntityNode) -> None:
        self.entities[node.id] = node

    def working_copy(self) -> WorkingWorld:
        return WorkingWorld(self)


class WorldView(Protocol):
    """What the kernel reads and `apply` writes: a `World` or a `WorkingWorld`."""

    environment: dict[str, Any]
    clock: Clock

    @property
    def name(self) -> str: ...
    @property
    def random_seed(self) -> int: ...
    @property
    def processes(self) -> dict[str, ProcessState]: ...
    @property
    def latent_facts(self) -> list[LatentFact]: ...
    def entity(self, entity_id: str) -> EntityNode: ...
    def location(self, location_id: str) -> LocationNode: ...
    def process(self, process_id: str) -> ProcessState: ...
    def has_entity(self, entity_id: str) -> bool: ...
    def edit_entity(self, entity_id: str) -> EntityNode: ...
    def edit_location(self, location_id: str) -> LocationNode: ...
    def edit_process(self, process_id: str) -> ProcessState: ...
    def body_of(self, synth_id: str) -> EntityNode: ...
    def add_entity(self, node: EntityNode) -> None: ...


class WorkingWorld:
    """A cycle's working copy: the canonical world plus the cycle's tentative changes.

    Reads fall through to the canonical world until an edit copies the one node it
    touches; the canonical world is never written. `touched` names every entity and
    location an edit copied (what the invariants check). Dropping the object is the
    rollback; committing is appending the cycle's events and folding them canonically.
    """

    def __init__(self, base: World) -> None:
        self.base = base
        self.environment: dict[str, Any] = dict(base.environment)
        self.clock: Clock = base.clock.model_copy()
        self._entities: dict[str, EntityNode] = {}
        self._locations: dict[str, LocationNode] = {}
        self._processes: dict[str, ProcessState] = {}
        self.touched_entities: set[str] = set()
        self.touched_locations: set[str] = set()

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def random_seed(self) -> int:
        return self.base.random_seed

    @property
    def latent_facts(self) -> list[LatentFact]:
        return self.base.latent_facts

    @property
    def processes(self) -> dict[str, ProcessState]:
        return {**self.base.processes, **self._processes}  # a handful: cheap to merge

    def entity(self, entity_id: str) -> EntityNode:
        found = self._entities.get(entity_id)
        return found if found is not None else self.base.entities[entity_id]

    def location(self, location_id: str) -> LocationNode:
        found = self._locations.get(location_id)
        return found if found is not None else self.base.locations[location_id]

    def process(self, process_id: str) -> ProcessState:
        found = self._processes.get(process_id)
        return found if found is not None else self.base.processes[process_id]

    def has_entity(self, entity_id: str) -> bool:
        return entity_id in self._entities or entity_id in self.base.entities

    def edit_entity(self, entity_id: str) -> EntityNode:
        found = self._entities.get(entity_id)
        if found is None:
            found = self._entities[entity_id] = self.base.entities[entity_id].model_copy(deep=True)
            self.touched_entities.add(entity_id)
        return found

    def edit_location(self, location_id: str) -> LocationNode:
        found = self._locations.get(location_id)
        if found is None:
            found = self._locations[location_id] = self.base.locations[location_id].model_copy(deep=True)
            self.touched_locations.add(location_id)
        return found

    def edit_process(self, process_id: str) -> ProcessState:
        found = self._processes.get(process_id)
        if found is None:
            found = self._processes[process_id] = self.base.processes[process_id].model_copy(deep=True)
        return found

    def body_of(self, synth_id: str) -> EntityNode:
        return self.entity(synth_id)

    def add_entity(self, node: EntityNode) -> None:
        self._entities[node.id] = node
        self.touched_entities.add(node.id)


# -- the one way the world changes --------------------------------------------------------------


class WorldError(ValueError):
    """An event that cannot apply to this world (an unknown id, a containment cycle)."""


def apply(world: WorldView, event: Event) -> None:
    """Fold one world event into `world` (in place). Events of other kinds are ignored."""
    if isinstance(event, ClockAdvanced):
        world.clock = world.clock.model_copy(update={"tick": event.tick})
    elif isinstance(event, EnvironmentChanged):
        world.environment.update(event.changes)
    elif isinstance(event, ComponentChanged):
        entity = _edit(world, event.entity_id)
        entity.components[event.component] = {**entity.components.get(event.component, {}), **event.changes}
    elif isinstance(event, ProcessTransitioned):
        process = world.edit_process(event.process_id)
        process.state = event.target
        process.entered_tick = world.clock.tick
    elif isinstance(event, EntityMoved):
        if event.location_id not in _location_ids(world, event.location_id):
            raise WorldError(f"no location {event.location_id}")  # before anything changes
        _detach(world, event.entity_id)
        world.edit_location(event.location_id).contained_entity_ids.append(event.entity_id)
        entity = world.edit_entity(event.entity_id)
        entity.container_id = None
        entity.carried_by_synth_id = None
        _relocate(world, event.entity_id, event.location_id)
    elif isinstance(event, EntityContained):
        if not (world.has_entity(event.container_id) and world.has_entity(event.entity_id)):
            raise WorldError(f"no entity {event.container_id} or {event.entity_id}")
        if _is_within(world, event.container_id, event.entity_id):
            raise WorldError(f"{event.entity_id} cannot go inside itself")
        container = _edit(world, event.container_id)
        _detach(world, event.entity_id)
        container.contained_entity_ids.append(event.entity_id)
        entity = world.edit_entity(event.entity_id)
        entity.container_id = container.id
        entity.carried_by_synth_id = container.synth_id or container.carried_by_synth_id
        _relocate(world, event.entity_id, container.location_id)
    elif isinstance(event, EntityCreated):
        node = EntityNode.model_validate(event.entity)
        if world.has_entity(node.id):
            raise WorldError(f"entity {node.id} exists already")
        if node.location_id not in _location_ids(world, node.location_id):
            raise WorldError(f"no location {node.location_id}")
        holder = node.container_id
        if holder is not None and not world.has_entity(holder):
            raise WorldError(f"no entity {holder}")
        unplaced: dict[str, Any] = {"container_id": None, "carried_by_synth_id": None, "contained_entity_ids": []}
        world.add_entity(node.model_copy(update=unplaced))
        world.edit_location(node.location_id).contained_entity_ids.append(node.id)
        if holder is not None:  # then into its container, as EntityContained puts it
            apply(world, EntityContained(entity_id=node.id, container_id=holder))
    elif isinstance(event, Communicated | WorldCreated):
        pass  # speech changes minds, not the world; WorldCreated is the fold's start


def fold(created: WorldCreated, events: list[Event]) -> World:
    """The canonical world after `events` (the world stream after its WorldCreated)."""
    world = World.model_validate(created.world)
    for e in events:
        apply(world, e)
    return world


def _edit(world: WorldView, entity_id: str) -> EntityNode:
    if not world.has_entity(entity_id):
        raise WorldError(f"no entity {entity_id}")
    return world.edit_entity(entity_id)


def _location_ids(world: WorldView, location_id: str) -> set[str]:
    try:
        world.location(location_id)
    except KeyError:
        return set()
    return {location_id}


def _detach(world: WorldView, entity_id: str) -> None:
    entity = _edit(world, entity_id)
    if entity.container_id is not None:
        holder = world.edit_entity(entity.container_id)
        holder.contained_entity_ids = [i for i in holder.contained_entity_ids if i != entity_id]
    else:
        place = world.edit_location(entity.location_id)
        place.contained_entity_ids = [i for i in place.contained_entity_ids if i != entity_id]


def _relocate(world: WorldView, entity_id: str, location_id: str) -> None:
    """Set `location_id` on an entity and everything inside it (carried items, a chest's
    contents): they go where their holder goes."""
    stack = [entity_id]
    while stack:
        node = world.edit_entity(stack.pop())
        node.location_id = location_id
        if node.id != entity_id and node.container_id is not None:
            holder = world.entity(node.container_id)
            node.carried_by_synth_id = holder.synth_id or holder.carried_by_synth_id
        stack.extend(node.contained_entity_ids)


def _is_within(world: WorldView, entity_id: str, ancestor_id: str) -> bool:
    """Is `entity_id` the same as, or inside, `ancestor_id`?"""
    current: str | None = entity_id
    seen = set()
    while current is not None and current not in seen:
        if current == ancestor_id:
            return True
        seen.add(current)
        current = world.entity(current).container_id
    return False
