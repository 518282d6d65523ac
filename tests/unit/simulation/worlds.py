"""A tiny world builder for kernel tests: places, things and synths, straight into the
models (no loader, no packs), with containment kept consistent as the world expects."""

from __future__ import annotations

from typing import Any

from actors.simulation.world import CHANNELS, EntityNode, LocationNode, World


class WorldBuilder:
    def __init__(self, name: str = "test", seed: int = 0, **environment: Any) -> None:
        self.world = World(name=name, random_seed=seed, environment=environment)

    def place(self, place_id: str, *, near: tuple[str, ...] = (), name: str | None = None, **properties: Any) -> WorldBuilder:
        self.world.locations[place_id] = LocationNode(id=place_id, name=name or place_id.title(), properties=properties)
        for other in near:
            self.connect(place_id, other)
        return self

    def connect(self, a: str, b: str) -> WorldBuilder:
        for x, y in ((a, b), (b, a)):
            if y not in self.world.locations[x].adjacent_ids:
                self.world.locations[x].adjacent_ids.append(y)
        return self

    def thing(self, thing_id: str, where: str, *, name: str | None = None, description: str = "",
              **components: dict[str, Any]) -> WorldBuilder:  # fmt: skip
        """An entity directly in place `where`, or inside entity `where` (a chest, a body)."""
        self._add(EntityNode(id=thing_id, name=name or thing_id.title(), description=description,
                             location_id="", components=dict(components)), where)  # fmt: skip
        return self

    def synth(self, synth_id: str, where: str, *, name: str | None = None,
              channels: tuple[str, ...] = CHANNELS) -> WorldBuilder:  # fmt: skip
        body = EntityNode(id=synth_id, name=name or synth_id.title(), location_id=where, synth_id=synth_id,
                          components={"Body": {}, "Senses": {"channels": list(channels)}})  # fmt: skip
        self._add(body, where)
        return self

    def build(self) -> World:
        return self.world

    def _add(self, entity: EntityNode, where: str) -> None:
        if where in self.world.locations:
            entity.location_id = where
            self.world.locations[where].contained_entity_ids.append(entity.id)
        else:
            holder = self.world.entities[where]
            entity.location_id = holder.location_id
            entity.container_id = holder.id
            entity.carried_by_synth_id = holder.synth_id or holder.carried_by_synth_id
            holder.contained_entity_ids.append(entity.id)
        self.world.entities[entity.id] = entity


def keeper_world(**environment: Any) -> World:
    """Two rooms; in the lamp room a jammed lamp that needs a wrench, a closed chest holding
    the wrench, a switchable torch; a seeing keeper and a blind one; a deaf one next door."""
    return (
        WorldBuilder(**environment)
        .place("lamp_room", indoor=True)
        .place("stairs", near=("lamp_room",), indoor=True)
        .thing("lamp", "lamp_room", name="Beacon Lamp",
               Repairable={"condition": "jammed", "repair_requirements": {"tools": ["wrench"]}},
               LightSource={"lit": False})
        .thing("chest", "lamp_room", name="Tool Chest", Container={"open": False})
        .thing("wrench", "chest", name="Wrench", Portable={}, Tool={"kind": "wrench"})
        .thing("torch", "lamp_room", name="Torch", Portable={}, Switchable={"on": False}, LightSource={"lit": False})
        .thing("bell", "lamp_room", name="Bell", SoundSource={"sound": "a bell tolling", "loudness": 0.8})
        .thing("stove", "lamp_room", name="Stove", Temperature={"celsius": 35.0})
        .synth("ann", "lamp_room", name="Ann")
        .synth("ben", "lamp_room", name="Ben", channels=("auditory", "tactile", "proprioceptive"))
        .synth("cal", "stairs", name="Cal", channels=("visual", "tactile", "proprioceptive"))
        .build()
    )  # fmt: skip


NAMES = {"ann": "Ann", "ben": "Ben", "cal": "Cal"}
