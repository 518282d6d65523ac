"""Perception (seed 002, stage 1 and 2): what one synth perceives, channel by channel, and
the grounded menu of actions it may choose from.

Epistemic separation is enforced here, not by prompt: a synth without "visual" gets no
visual observation at all, and in a dark place (ambient light under 0.3 and no light
burning) it sees nothing but that it is dark and where light shows through an exit.
Proprioception (where I am, what I carry) is always on.

What a synth can act on is what it perceives: what it sees (a lit place shows everything
not shut inside a closed container or held by someone; a dark one nothing), what it can
feel for within reach when it has "tactile" (so a blind synth, or anyone in the dark,
still takes a wrench or repairs a lamp by touch, and its bundle says what its hands
find), and what it carries. The resolver checks the same reach (`within_reach`) so a menu item and its
resolution never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from actors.simulation.payloads import (
    ActionOption,
    ActionOutcome,
    ActionSurface,
    CommunicationEvent,
    Observation,
    SensoryBundle,
)
from actors.simulation.world import CHANNELS, EntityNode, WorldView

if TYPE_CHECKING:
    from actors.simulation.perception_policy import PerceptionPolicy

LIT_THRESHOLD = 0.3  # ambient light at or above this lets a place be seen without a lamp
DEFAULT_AMBIENT = 1.0  # a world that says nothing about light is daylight
FAINT_LOUDNESS = 0.5  # sounds at least this loud carry into adjacent places


# -- shared reading of the world (the resolver and communication use these too) -------------


def senses_of(entity: EntityNode) -> list[str]:
    """A body's channels (its Senses component); a body without one senses everything."""
    senses = entity.component("Senses")
    if senses is None:
        return list(CHANNELS)
    return list(senses.get("channels", []))


def is_open(entity: EntityNode) -> bool:
    """Can one see and reach into it? Only a Container can be shut."""
    container = entity.component("Container")
    return container is None or bool(container.get("open", False))


def enclosing_closed(world: WorldView, entity: EntityNode) -> EntityNode | None:
    """The nearest closed container around `entity`, if one shuts it away."""
    current = entity.container_id
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        holder = world.entity(current)
        if not is_open(holder):
            return holder
        current = holder.container_id
    return None


def within_reach(world: WorldView, synth_id: str, entity: EntityNode) -> bool:
    """Can this synth put a hand on it: what it carries, or what lies in its place, not
    held by another and not shut in a closed container."""
    if entity.synth_id is not None:
        return False  # bodies are not objects to handle
    if entity.carried_by_synth_id == synth_id:
        return enclosing_closed(world, entity) is None
    body = world.body_of(synth_id)
    return (
        entity.carried_by_synth_id is None
        and entity.location_id == body.location_id
        and enclosing_closed(world, entity) is None
    )


def ambient_light(world: WorldView, location_id: str) -> float:
    props = world.location(location_id).properties
    return float(props.get("ambient_light", world.environment.get("ambient_light", DEFAULT_AMBIENT)))


def glowing_in(world: WorldView, location_id: str) -> list[EntityNode]:
    """Lit light sources in view in a place (in hands or open containers too)."""
    found = []
    for entity, shown in _walk(world, world.location(location_id).contained_entity_ids):
        lamp = entity.component("LightSource")
        if shown and lamp is not None and lamp.get("lit"):
            found.append(entity)
    return found


def light_level(world: WorldView, location_id: str) -> float:
    """How well one sees (0..1): the brightest of the ambient light and the lights in view."""
    return _level(ambient_light(world, location_id), glowing_in(world, location_id))


def is_lit(world: WorldView, location_id: str) -> bool:
    """Can anything be seen here: enough ambient light, or any light burning."""
    return ambient_light(world, location_id) >= LIT_THRESHOLD or bool(glowing_in(world, location_id))


def _level(ambient: float, glowing: list[EntityNode]) -> float:
    intensities = [float(e.components["LightSource"].get("intensity", 1.0)) for e in glowing]
    return min(max([ambient, *intensities]), 1.0)


def hearers_in(world: WorldView, location_id: str, *, besides: str | None = None) -> list[str]:
    """Synths in a place that have ears: who would hear speech there."""
    found = []
    for entity_id in world.location(location_id).contained_entity_ids:
        body = world.entity(entity_id)
        if body.synth_id is not None and body.synth_id != besides and "auditory" in senses_of(body):
            found.append(body.synth_id)
    return found


def state_words(entity: EntityNode) -> list[str]:
    """What a glance tells about an entity's components (its visible state)."""
    words: list[str] = []
    c = entity.components
    if "Container" in c:
        words.append("open" if c["Container"].get("open") else "closed")
    if "LightSource" in c:
        words.append("lit" if c["LightSource"].get("lit") else "unlit")
    if "Switchable" in c:
        words.append("switched on" if c["Switchable"].get("on") else "switched off")
    if "Repairable" in c and c["Repairable"].get("condition", "ok") != "ok":
        words.append(str(c["Repairable"]["condition"]))
    return words


def describe(world: WorldView, entity: EntityNode) -> str:
    """A close look: the entity and each of its components, in words."""
    parts = [entity.name + (f": {entity.description}" if entity.description else "")]
    for kind, props in entity.components.items():
        if kind == "Container":
            lock = ", locked" if props.get("locked") else ""
            if props.get("open"):
                inside = [world.entity(i).name for i in entity.contained_entity_ids]
                parts.append(f"a container, open{lock}; inside: {', '.join(inside) or 'nothing'}")
            else:
                parts.append(f"a container, closed{lock}")
        elif kind == "LightSource":
            parts.append("a light, " + ("lit" if props.get("lit") else "unlit"))
        elif kind == "Switchable":
            parts.append("it can be switched; it is " + ("on" if props.get("on") else "off"))
        elif kind == "Repairable":
            condition = props.get("condition", "ok")
            state = "in working order" if condition == "ok" else f"{condition}, it needs repair"
            tools = (props.get("repair_requirements") or {}).get("tools") or []
            need = f"; repairing it takes: {', '.join(tools)}" if tools and condition != "ok" else ""
            parts.append(state + need)
        elif kind == "Portable":
            parts.append("light enough to carry")
        elif kind == "Consumable":
            effect = f" ({props['effect']})" if props.get("effect") else ""
            parts.append(f"it can be used {props.get('uses', 0)} more time(s){effect}")
        elif kind == "Tool":
            parts.append(f"a tool: {props.get('kind', 'unknown')}")
        elif kind == "SoundSource":
            parts.append(f"it makes a sound: {props.get('sound', '')}")
        elif kind == "Temperature":
            parts.append(f"it is {_feel(float(props.get('celsius', 20.0)))} ({props.get('celsius')} C)")
        elif kind in ("Body", "Senses"):
            continue
        else:
            parts.append(f"{kind}: {props}")
    return "; ".join(parts) + "."


# -- the scene: one pass over a place ---------------------------------------------------------


def _walk(world: WorldView, root_ids: list[str], exposed: bool = True) -> Iterator[tuple[EntityNode, bool]]:
    """Every entity under `root_ids`, depth first in list order, with whether it is in view
    (not inside a closed container). Bodies are walked too: what a synth holds is in view."""
    stack = [(i, exposed) for i in reversed(root_ids)]
    seen: set[str] = set()
    while stack:
        entity_id, shown = stack.pop()
        if entity_id in seen:
            continue
        seen.add(entity_id)
        entity = world.entity(entity_id)
        yield entity, shown
        inner = shown and is_open(entity)
        stack.extend((i, inner) for i in reversed(entity.contained_entity_ids))


@dataclass
class _Scene:
    """What one synth's place holds, sorted by how the synth can perceive it."""

    location_id: str
    lit: bool
    level: float
    loose: list[EntityNode] = field(default_factory=list)  # in view, held by nobody
    others: list[EntityNode] = field(default_factory=list)  # other synths' bodies
    carried: list[EntityNode] = field(default_factory=list)  # in view in my own hands
    glowing: list[EntityNode] = field(default_factory=list)  # lit lights in view (anyone's)
    sounding: list[EntityNode] = field(default_factory=list)  # sound sources, even shut away


def _scene(world: WorldView, synth_id: str) -> _Scene:
    body = world.body_of(synth_id)
    place = world.location(body.location_id)
    scene = _Scene(place.id, False, 0.0)
    for entity, shown in _walk(world, place.contained_entity_ids):
        if entity.component("SoundSource") is not None and entity.synth_id is None:
            scene.sounding.append(entity)
        if not shown:
            continue
        lamp = entity.component("LightSource")
        if lamp is not None and lamp.get("lit"):
            scene.glowing.append(entity)
        if entity.synth_id is not None:
            if entity.synth_id != synth_id:
                scene.others.append(entity)
        elif entity.carried_by_synth_id == synth_id:
            scene.carried.append(entity)
        elif entity.carried_by_synth_id is None:
            scene.loose.append(entity)
    ambient = ambient_light(world, place.id)
    scene.level = _level(ambient, scene.glowing)
    scene.lit = ambient >= LIT_THRESHOLD or bool(scene.glowing)
    return scene


def _seen(scene: _Scene, senses: list[str]) -> list[EntityNode]:
    return scene.loose if "visual" in senses and scene.lit else []


def _felt(scene: _Scene, senses: list[str]) -> list[EntityNode]:
    return scene.loose if "tactile" in senses else []


def _perceived(scene: _Scene, senses: list[str]) -> list[EntityNode]:
    """What the synth can act on, in a stable order: the place's things, then its own."""
    seen = {e.id for e in _seen(scene, senses)} | {e.id for e in _felt(scene, senses)}
    return [e for e in scene.loose if e.id in seen] + scene.carried


# -- observations --------------------------------------------------------------------------------


def _obs(channel: str, text: str, subject_id: str | None, salience: float = 1.0) -> Observation:
    return Observation(channel=channel, text=text, subject_id=subject_id, salience=salience)  # type: ignore[arg-type]


def _visual(world: WorldView, scene: _Scene, names: dict[str, str]) -> list[Observation]:
    obs: list[Observation] = []
    place = world.location(scene.location_id)
    if not scene.lit:  # nothing burns here: only light through an exit shows
        obs.append(_obs("visual", "It is too dark to see much.", place.id))
        for exit_id in place.adjacent_ids:
            if is_lit(world, exit_id):
                obs.append(_obs("visual", f"Light shows from {world.location(exit_id).name}.", exit_id))
        return obs
    brightness = "bright" if scene.level >= 0.7 else "dim"
    obs.append(_obs("visual", f"The light here is {brightness}.", place.id))
    if place.description:
        obs.append(_obs("visual", place.description, place.id))
    if not place.properties.get("indoor", False):
        for key, label in (("time_of_day", "It is"), ("weather", "The weather is")):
            if world.environment.get(key):
                obs.append(_obs("visual", f"{label} {world.environment[key]}.", place.id))
    for entity in scene.loose:
        words = state_words(entity)
        where = ""
        if entity.container_id is not None:
            where = f" (in {world.entity(entity.container_id).name})"
        state = f" ({', '.join(words)})" if words else ""
        desc = f": {entity.description}" if entity.description else ""
        obs.append(_obs("visual", f"You see {entity.name}{where}{state}{desc}", entity.id))
    for other in scene.others:
        name = names.get(other.synth_id or "", other.name)
        held = [world.entity(i).name for i in other.contained_entity_ids]
        carrying = f", carrying {', '.join(held)}" if held else ""
        obs.append(_obs("visual", f"{name} is here{carrying}.", other.synth_id))
    for exit_id in place.adjacent_ids:
        obs.append(_obs("visual", f"An exit leads to {world.location(exit_id).name}.", exit_id))
    return obs


def _auditory(world: WorldView, scene: _Scene) -> list[Observation]:
    obs: list[Observation] = []
    for source in scene.sounding:
        sound = source.components["SoundSource"]
        loud = float(sound.get("loudness", 1.0))
        text = f"You hear {sound.get('sound', 'a sound')} ({source.name})."
        obs.append(_obs("auditory", text, source.id, min(max(loud, 0.0), 1.0)))
    place = world.location(scene.location_id)
    for exit_id in place.adjacent_ids:
        near = world.location(exit_id)
        for source, _ in _walk(world, near.contained_entity_ids):
            heard = source.component("SoundSource")
            if heard is not None and source.synth_id is None and float(heard.get("loudness", 1.0)) >= FAINT_LOUDNESS:
                text = f"From {near.name}, faintly: {heard.get('sound', 'a sound')}."
                obs.append(_obs("auditory", text, source.id, float(heard.get("loudness", 1.0)) / 2))
    weather = world.environment.get("weather")
    if weather:
        text = (f"Muffled by the walls, you hear the weather outside: {weather}." if place.properties.get("indoor")
                else f"You hear the weather around you: {weather}.")  # fmt: skip
        obs.append(_obs("auditory", text, place.id))
    return obs


def _feel(celsius: float) -> str:
    for limit, word in ((0, "freezing"), (10, "cold"), (18, "cool"), (26, "mild"), (40, "warm")):
        if celsius < limit:
            return word
    return "hot"


def _tactile(scene: _Scene, senses: list[str]) -> list[Observation]:
    obs: list[Observation] = []
    for entity in scene.loose + scene.carried:
        temp = entity.component("Temperature")
        if temp is not None and "celsius" in temp:
            obs.append(_obs("tactile", f"Near {entity.name} it feels {_feel(float(temp['celsius']))}.", entity.id))
    for entity in scene.carried:
        obs.append(_obs("tactile", f"You feel {entity.name} in your grip.", entity.id))
    if not _seen(scene, senses):  # unseen, a hand finds what is within reach
        obs += [_obs("tactile", f"Within reach you feel {e.name}.", e.id) for e in scene.loose]
    return obs


def _proprioceptive(world: WorldView, scene: _Scene) -> list[Observation]:
    place = world.location(scene.location_id)
    held = ", ".join(e.name for e in scene.carried) or "nothing"
    return [
        _obs("proprioceptive", f"You are in {place.name}.", place.id),
        _obs("proprioceptive", f"You are carrying {held}.", None),
    ]


def _time(world: WorldView) -> str:
    try:
        start = datetime.fromisoformat(world.clock.start)
    except ValueError:
        return f"tick {world.clock.tick}"
    return (start + timedelta(seconds=world.clock.tick * world.clock.chronon_seconds)).isoformat()


def compose_bundle(
    world: WorldView,
    synth_id: str,
    senses: list[str],
    *,
    cycle: int,
    microcycle: int,
    heard: list[CommunicationEvent],
    previous_outcomes: list[ActionOutcome],
    names: dict[str, str],
    policy: PerceptionPolicy | None = None,
) -> SensoryBundle:
    """Everything `synth_id` perceives now, filtered by `senses`, with its action surface;
    `policy` (default: none) may reshape the observations last."""
    scene = _scene(world, synth_id)
    observations = _proprioceptive(world, scene)
    if "visual" in senses:
        observations += _visual(world, scene, names)
    if "auditory" in senses:
        observations += _auditory(world, scene)
    if "tactile" in senses:
        observations += _tactile(scene, senses)
    bundle = SensoryBundle(
        synth_id=synth_id,
        cycle=cycle,
        microcycle=microcycle,
        time=_time(world),
        location_id=scene.location_id,
        location_name=world.location(scene.location_id).name,
        observations=observations,
        heard=list(heard) if "auditory" in senses else [],
        surface=_surface(world, synth_id, names, senses, scene),
        previous_outcomes=list(previous_outcomes),
    )
    return policy.apply(bundle, world) if policy is not None else bundle


# -- the action surface ----------------------------------------------------------------------------


def action_surface(world: WorldView, synth_id: str, names: dict[str, str]) -> ActionSurface:
    """The grounded menu for `synth_id`, with its body's senses: stable ids in a stable order
    (moves, inspect, repair, switch, take, open, consume, then wait and communicate)."""
    return _surface(world, synth_id, names, senses_of(world.body_of(synth_id)), _scene(world, synth_id))


def _surface(
    world: WorldView, synth_id: str, names: dict[str, str], senses: list[str], scene: _Scene
) -> ActionSurface:
    place = world.location(scene.location_id)
    options = [
        ActionOption(action_id=f"move_to_{i}", label=f"Move to {world.location(i).name}", target_id=i)
        for i in place.adjacent_ids
    ]
    things = _perceived(scene, senses)
    loose = {e.id for e in scene.loose}
    inspect, repair, switch, take, open_, consume = [], [], [], [], [], []
    for e in things:
        inspect.append(ActionOption(action_id=f"inspect_{e.id}", label=f"Examine {e.name} closely", target_id=e.id))
        fix = e.component("Repairable")
        if fix is not None and fix.get("condition", "ok") != "ok":
            label = f"Attempt to repair {e.name} ({fix['condition']})"
            repair.append(ActionOption(action_id=f"repair_{e.id}", label=label, target_id=e.id))
        toggle = e.component("Switchable")
        if toggle is not None:
            to = "off" if toggle.get("on") else "on"
            switch.append(ActionOption(action_id=f"switch_{e.id}", label=f"Switch {e.name} {to}", target_id=e.id))
        if e.id in loose and e.component("Portable") is not None:
            take.append(ActionOption(action_id=f"take_{e.id}", label=f"Pick up {e.name}", target_id=e.id))
        box = e.component("Container")
        if box is not None and not box.get("open", False):
            open_.append(ActionOption(action_id=f"open_{e.id}", label=f"Open {e.name}", target_id=e.id))
        use = e.component("Consumable")
        if use is not None and int(use.get("uses", 0)) > 0:
            consume.append(ActionOption(action_id=f"consume_{e.id}", label=f"Use {e.name}", target_id=e.id))
    options += inspect + repair + switch + take + open_ + consume
    hearers = hearers_in(world, scene.location_id, besides=synth_id)
    hearer_names = [names.get(i, world.body_of(i).name) for i in hearers]
    speak = f"Speak ({', '.join(hearer_names)} can hear you)" if hearer_names else "Speak (no one here can hear you)"
    options += [
        ActionOption(action_id="wait", label="Do nothing this turn"),
        ActionOption(action_id="communicate", label=speak),
    ]
    return ActionSurface(options=options, hearers=hearer_names)
