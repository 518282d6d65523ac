"""The content pack loader (seed 002): YAML -> a validated, compiled world and its synths.

A pack names things; the kernel knows only ids. Every name compiles to a stable UUID
(uuid5 over the pack's name, the kind and the name), so the same pack gives the same ids
every time and a log stays meaningful across runs. Entity references inside components
(the properties the ruleset types `ref`) and inside process effects compile to ids too.

What a pack may say is `actors.simulation.pack_models.PackSpec` (pydantic models: unknown
keys, wrong types and missing fields are errors; references between sections, unique names,
containment and every component against the pack's ruleset are its model validators). A bad
pack raises `PackError`, whose `str()` is one line, `FILE: path: message (and N more)`, the
path as the YAML reads (`synths[2].voice (Ann)`); `.problems` holds every line. Unknown
component types are warnings, not errors. This is the only simulation module that reads a
file, and `compile_pack` (text in, pack out) does not.

Schema (all sections optional but `name`):

    name: str                       random_seed: int        ruleset_ref: physical_social_v1
    clock: {chronon_seconds: int, start: ISO time}          environment: {key: value}
    locations:  [{name, description, adjacent: [location], properties: {...}}]
    entities:   [{name, description, location: location | in: entity, components: {Type: {...}}}]
    synths:     [{name, description, traits, voice, location, senses, carries: [entity],
                  inner_state: {mood, energy}, beliefs: [{subject, content, confidence}],
                  projects: [{name, goal}], memories: [str | {content, salience}]}]
    processes:  [{name, initial, states: {...statechart...}}]
    latent_facts: [{text, known_by: [synth]}]
    initial_conditions: [{entity, component, set: {...}} | {environment: {...}}]

Initial conditions apply before validation; each process starts in its initial leaf with
that state's `on_enter` effects applied. Booleans are YAML 1.2's (`on: true` is a key).

A pack is bounded: at most MAX_PACK_BYTES of text (a file larger is not read), nesting at
most MAX_DEPTH levels deep, and no YAML aliases (`*name`, `<<: *name`): an alias can make a
few lines expand to gigabytes, and no pack needs one.
"""

from __future__ import annotations

import copy
import hashlib
import re
import uuid
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from actors.runtime.bounded_yaml import BoundedLoader, load_bounded
from actors.simulation import statechart
from actors.simulation.pack_models import PackSpec, effects, path, problems
from actors.simulation.processes import effect_events
from actors.simulation.ruleset import get_ruleset
from actors.simulation.synth import (
    Affect,
    Belief,
    Identity,
    Memory,
    Project,
    SynthState,
)
from actors.simulation.world import (
    CHANNELS,
    Clock,
    EntityNode,
    LatentFact,
    LocationNode,
    ProcessState,
    World,
    apply,
)
from actors.simulation.events import SynthCreated, WorldCreated

ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "chorus:simulation:content-pack")
MAX_PACK_BYTES = 1_000_000
MAX_DEPTH = 40


class _PackYamlLoader(BoundedLoader):
    """YAML 1.2 booleans: only true/false. YAML 1.1 would read `Switchable: {on: true}`
    as `{True: True}` (and `no`, `off`, `yes` as booleans too). No aliases, and nesting at
    most MAX_DEPTH deep (actors.runtime.bounded_yaml)."""

    max_depth = MAX_DEPTH
    what = "a content pack"


_PackYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PackYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class PackError(ValueError):
    """An invalid content pack. `str()` is one line: the first problem, `FILE: where: message`,
    and how many more there are; `problems` is every one, a line each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)


class CompiledPack(BaseModel):
    name: str
    digest: str  # sha256 of the pack's text
    text: str
    world: World
    synths: list[SynthState]
    warnings: list[str] = []
    ids: dict[str, dict[str, str]] = {}  # kind ("location", "entity", "synth", "process") -> name -> id

    def id_of(self, name: str) -> str:
        """The id a name compiled to (synths, then entities, locations, processes)."""
        for kind in ("synth", "entity", "location", "process"):
            if name in self.ids.get(kind, {}):
                return self.ids[kind][name]
        raise KeyError(name)

    def world_created(self) -> WorldCreated:
        return WorldCreated(
            world=self.world.model_dump(mode="json"), pack=self.name, pack_digest=self.digest, warnings=self.warnings
        )

    def synths_created(self) -> list[SynthCreated]:
        return [SynthCreated(synth=s.model_dump(mode="json")) for s in self.synths]


def stable_id(pack: str, kind: str, name: str) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"{pack}\x1f{kind}\x1f{name}"))


def load_pack(path: str | Path) -> CompiledPack:
    """Read and compile a pack file; problems are reported under the file's name."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_PACK_BYTES + 1)
        if len(raw) > MAX_PACK_BYTES:
            raise PackError([f"{path}: larger than {MAX_PACK_BYTES} bytes, the most a pack may be"])
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise PackError([f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise PackError([f"{path}: is a directory, not a pack file"]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise PackError([f"{path}: cannot read: {getattr(e, 'strerror', None) or e}"]) from None
    return compile_pack(text, p.name)


def compile_pack(text: str, filename: str) -> CompiledPack:
    if len(text) > MAX_PACK_BYTES:
        raise PackError([f"{filename}: larger than {MAX_PACK_BYTES} characters, the most a pack may be"])
    try:
        data = load_bounded(text, _PackYamlLoader, MAX_PACK_BYTES)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "YAML"
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise PackError([f"{filename}: {where}: YAML syntax error: {what}"]) from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise PackError([f"{filename}: pack: must be a mapping (name, locations, entities, ...), got {got}"])
    try:
        spec = PackSpec.model_validate(data)
    except ValidationError as e:
        raise PackError([f"{filename}: {line}" for line in problems(e, data)]) from None
    warnings = [f"{filename}: {path(loc, data)}: {message}" for loc, message in spec.warnings]
    return _compile(spec, text, warnings)


def _compile(spec: PackSpec, text: str, warnings: list[str]) -> CompiledPack:
    """The world and synths of a checked pack: names to ids, containment made consistent,
    processes in their initial states with those states' effects applied."""
    kinds: dict[str, list[Any]] = {
        "location": spec.locations, "entity": spec.entities, "synth": spec.synths, "process": spec.processes
    }
    ids = {kind: {x.name: stable_id(spec.name, kind, x.name) for x in items} for kind, items in kinds.items()}
    lids, eids, sids = ids["location"], ids["entity"], ids["synth"]

    locations = {
        lids[x.name]: LocationNode(id=lids[x.name], name=x.name, description=x.description,
                                   properties=copy.deepcopy(x.properties))
        for x in spec.locations
    }  # fmt: skip
    adjacent: dict[str, dict[str, None]] = {lid: {} for lid in locations}  # ordered sets
    for x in spec.locations:
        for other in x.adjacent:  # adjacency is symmetric
            adjacent[lids[x.name]][lids[other]] = adjacent[lids[other]][lids[x.name]] = None
    for lid, place_node in locations.items():
        place_node.adjacent_ids = list(adjacent[lid])

    components = copy.deepcopy(spec.start_components())
    ruleset = get_ruleset(spec.ruleset_ref)
    for comps in components.values():
        for type_name, props in comps.items():
            for prop, is_list in ruleset.ref_paths(type_name):
                if prop in props:
                    props[prop] = [eids[n] for n in props[prop]] if is_list else eids[props[prop]]

    holder, place = spec.containment()
    roots: dict[str, str] = {}

    def outermost(name: str) -> tuple[str, str | None]:
        """(location name, carrying synth name) of an entity or synth: where its outermost
        holder is, and that holder if a synth (synths are held by nothing)."""
        trail, current = [], name
        while current in holder and current not in roots:
            trail.append(current)
            current = holder[current]
        root = roots.get(current, current)
        roots.update(dict.fromkeys(trail, root))
        return place[root], root if root in sids and root != name else None

    def node_id(name: str) -> str:
        return sids[name] if name in sids else eids[name]

    nodes: dict[str, EntityNode] = {}
    for item, comps in [(e, components[e.name]) for e in spec.entities] + [
        (s, {"Body": {}, "Senses": {"channels": [c for c in CHANNELS if c in s.senses]}}) for s in spec.synths
    ]:
        loc, carrier = outermost(item.name)
        direct = holder.get(item.name)
        nid = node_id(item.name)
        nodes[nid] = EntityNode(
            id=nid,
            name=item.name,
            description=item.description,
            location_id=lids[loc],
            container_id=node_id(direct) if direct else None,
            carried_by_synth_id=sids[carrier] if carrier else None,
            synth_id=nid if item.name in sids else None,
            components=comps,
        )
    for node in nodes.values():  # contents in pack order: entities, then synth bodies
        holding: EntityNode | LocationNode = (
            nodes[node.container_id] if node.container_id else locations[node.location_id]
        )
        holding.contained_entity_ids.append(node.id)
    for s in spec.synths:  # a synth's carried items in the order it lists them
        nodes[sids[s.name]].contained_entity_ids = [eids[c] for c in s.carries]

    processes: dict[str, ProcessState] = {}
    for process in spec.processes:
        chart = process.chart()
        for _, effect in effects(chart["states"]):
            if "set_component" in effect:
                effect["set_component"]["entity"] = eids[effect["set_component"]["entity"]]
        pid = ids["process"][process.name]
        processes[pid] = ProcessState(id=pid, name=process.name, chart=chart, state=statechart.initial_state(chart))

    synths = [
        SynthState(
            synth_id=sids[s.name],
            identity=Identity(name=s.name, description=s.description, traits=s.traits, voice=s.voice),
            senses=[c for c in CHANNELS if c in s.senses],
            affect=Affect(**s.inner_state.model_dump()),
            beliefs=[Belief(**b.model_dump()) for b in s.beliefs],
            projects=[Project(**p.model_dump()) for p in s.projects],
            memories=[Memory(**m.model_dump()) for m in s.memories],
        )
        for s in spec.synths
    ]
    facts = [
        LatentFact(id=stable_id(spec.name, "fact", str(i)), text=f.text, known_by=[sids[w] for w in f.known_by])
        for i, f in enumerate(spec.latent_facts)
    ]
    world = World(
        name=spec.name,
        random_seed=spec.random_seed,
        ruleset_ref=spec.ruleset_ref,
        clock=Clock(tick=0, chronon_seconds=spec.clock.chronon_seconds, start=spec.clock.start),
        environment=copy.deepcopy(spec.start_environment()),
        locations=locations,
        entities=nodes,
        processes=processes,
        latent_facts=facts,
    )
    # Entering a process's initial state has its effects, as any later entry does.
    for pid in sorted(processes):
        started = processes[pid]
        for state in reversed(statechart.ancestors(started.state)):
            for e in effect_events(statechart.on_enter(started.chart, state)):
                apply(world, e)
    return CompiledPack(
        name=spec.name,
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        text=text,
        world=world,
        synths=synths,
        warnings=warnings,
        ids=ids,
    )
