"""The content pack loader (seed 002): YAML -> a validated, compiled world and its synths.

A pack names things; the kernel knows only ids. Every name compiles to a stable UUID
(uuid5 over the pack's name, the kind and the name), so the same pack gives the same ids
every time and a log stays meaningful across runs. Entity references inside components
(the properties the ruleset types `ref`) and inside process effects compile to ids too.

Every component is validated against the pack's ruleset. Problems are reported all at
once, one line each, as `FILE: entity.property.path: message`, in a `PackError`; unknown
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
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from actors.runtime.bounded_yaml import BoundedLoader, load_bounded
from events.simulation import SynthCreated, WorldCreated
from actors.simulation import statechart
from actors.simulation.processes import effect_events
from actors.simulation.ruleset import Ruleset, get_ruleset, validate_component
from actors.simulation.synth import Affect, Belief, Identity, Memory, Project, SynthState
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

ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "chorus:simulation:content-pack")
SECTIONS = ("locations", "entities", "synths", "processes", "latent_facts", "initial_conditions")
TOP_LEVEL = {"name", "random_seed", "ruleset_ref", "clock", "environment", "description", *SECTIONS}
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
    """An invalid content pack. `str()` is one line per problem, `FILE: where: message`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


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
    return _Compiler(data, text, filename).compile()


class _Compiler:
    def __init__(self, data: dict[str, Any], text: str, filename: str) -> None:
        self.data = data
        self.text = text
        self.file = filename
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.ids: dict[str, dict[str, str]] = {k: {} for k in ("location", "entity", "synth", "process")}

    # -- reporting ----------------------------------------------------------------------

    def err(self, where: str, message: str) -> None:
        self.problems.append(f"{self.file}: {where}: {message}")

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{self.file}: {where}: {message}")

    # -- the pass --------------------------------------------------------------------------

    def compile(self) -> CompiledPack:
        d = self.data
        name = d.get("name")
        if not isinstance(name, str) or not name.strip():
            self.err("name", "required: the pack's name (a non-empty string)")
            name = ""
        self.name = name
        for key in d:
            if key not in TOP_LEVEL:
                self.warn(str(key), "unknown top-level key (ignored)")

        seed = d.get("random_seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            self.err("random_seed", f"must be an integer, got {seed!r}")
            seed = 0
        ruleset: Ruleset | None = None
        ruleset_ref = d.get("ruleset_ref", "physical_social_v1")
        try:
            ruleset = get_ruleset(ruleset_ref)
        except ValueError as e:
            self.err("ruleset_ref", str(e))
        clock = self._clock(d.get("clock"))
        environment = self._mapping(d.get("environment"), "environment")

        sections = {s: self._items(s) for s in SECTIONS}
        self._names(sections)

        locations = self._locations(sections["locations"])
        raw = self._raw_components(sections["entities"])
        self._initial_conditions(sections["initial_conditions"], raw, environment)
        if ruleset is not None:
            self._validate(raw, ruleset)
            self._compile_refs(raw, ruleset)
        synths = self._synths(sections["synths"])
        entities = self._place(sections["entities"], sections["synths"], raw, locations)
        processes = self._processes(sections["processes"])
        facts = self._facts(sections["latent_facts"])
        if self.problems:
            raise PackError(list(dict.fromkeys(self.problems)))  # a bad value read twice: one line

        world = World(
            name=name,
            random_seed=seed,
            ruleset_ref=ruleset_ref,
            clock=clock,
            environment=environment,
            locations=locations,
            entities=entities,
            processes=processes,
            latent_facts=facts,
        )
        # Entering a process's initial state has its effects, as any later entry does.
        for pid in sorted(processes):
            p = processes[pid]
            for state in reversed(statechart.ancestors(p.state)):
                for e in effect_events(statechart.on_enter(p.chart, state)):
                    apply(world, e)
        return CompiledPack(
            name=name,
            digest=hashlib.sha256(self.text.encode("utf-8")).hexdigest(),
            text=self.text,
            world=world,
            synths=synths,
            warnings=self.warnings,
            ids=self.ids,
        )

    # -- helpers ---------------------------------------------------------------------------

    def _mapping(self, value: Any, where: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.err(where, f"must be a mapping, got {type(value).__name__}")
            return {}
        for key in value:
            if not isinstance(key, str):
                self.err(f"{where}.{key}", "keys must be names (strings)")
                return {}
        return copy.deepcopy(value)

    def _str(self, item: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
        value = item.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            self.err(f"{where}.{key}", f"must be a string, got {type(value).__name__}")
            return default
        return value

    def _names_list(self, item: Mapping[str, Any], key: str, where: str) -> list[str]:
        value = item.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.err(f"{where}.{key}", "must be a list of names")
            return []
        return value

    def _items(self, section: str) -> list[tuple[str, dict[str, Any]]]:
        """A section's items as (label for messages, item); each must be a mapping, and
        named ones need a `name`."""
        value = self.data.get(section) or []
        if not isinstance(value, list):
            self.err(section, "must be a list")
            return []
        named = section in ("locations", "entities", "synths", "processes")
        found = []
        for i, item in enumerate(value):
            label = f"{section}[{i}]"
            if not isinstance(item, dict):
                self.err(label, "must be a mapping")
                continue
            if named:
                if not isinstance(item.get("name"), str) or not item["name"].strip():
                    self.err(f"{label}.name", "required (a non-empty string)")
                    continue
                label = item["name"]
            found.append((label, item))
        return found

    def _names(self, sections: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
        kinds = {"locations": "location", "entities": "entity", "synths": "synth", "processes": "process"}
        for section, kind in kinds.items():
            for label, _ in sections[section]:
                if label in self.ids[kind]:
                    self.err(label, f"duplicate {kind} name")
                else:
                    self.ids[kind][label] = stable_id(self.name, kind, label)
        for label in self.ids["synth"]:
            if label in self.ids["entity"]:
                self.err(label, "name used by both an entity and a synth")

    def _clock(self, value: Any) -> Clock:
        spec = self._mapping(value, "clock")
        clock = Clock()
        chronon = spec.get("chronon_seconds", clock.chronon_seconds)
        if isinstance(chronon, bool) or not isinstance(chronon, int) or chronon <= 0:
            self.err("clock.chronon_seconds", f"must be a positive whole number of seconds, got {chronon!r}")
            chronon = clock.chronon_seconds
        start = spec.get("start", clock.start)
        if isinstance(start, datetime | date):  # YAML reads unquoted timestamps itself
            start = start.isoformat()
        try:
            datetime.fromisoformat(str(start))
        except ValueError:
            self.err("clock.start", f"must be an ISO time like 2026-01-01T18:00:00, got {start!r}")
            start = clock.start
        return Clock(tick=0, chronon_seconds=chronon, start=str(start))

    # -- locations -------------------------------------------------------------------------

    def _locations(self, items: list[tuple[str, dict[str, Any]]]) -> dict[str, LocationNode]:
        ids = self.ids["location"]
        adjacency: dict[str, list[str]] = {ids[label]: [] for label, _ in items if label in ids}
        nodes: dict[str, LocationNode] = {}
        for label, item in items:
            lid = ids[label]
            for other in self._names_list(item, "adjacent", label):
                if other not in ids:
                    self.err(f"{label}.adjacent", f"unknown location {other!r}")
                elif other == label:
                    self.err(f"{label}.adjacent", "a location cannot be adjacent to itself")
                else:
                    for a, b in ((lid, ids[other]), (ids[other], lid)):  # adjacency is symmetric
                        if b not in adjacency[a]:
                            adjacency[a].append(b)
            if lid not in nodes:
                nodes[lid] = LocationNode(
                    id=lid,
                    name=label,
                    description=self._str(item, "description", label),
                    properties=self._mapping(item.get("properties"), f"{label}.properties"),
                )
        for lid, node in nodes.items():
            node.adjacent_ids = adjacency[lid]
        return nodes

    # -- components ------------------------------------------------------------------------

    def _raw_components(self, items: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        raw: dict[str, dict[str, Any]] = {}
        for label, item in items:
            comps = self._mapping(item.get("components"), f"{label}.components")
            for type_name, props in list(comps.items()):
                if props is None:
                    comps[type_name] = {}
            raw.setdefault(label, comps)
        return raw

    def _initial_conditions(
        self, items: list[tuple[str, dict[str, Any]]], raw: dict[str, dict[str, Any]], environment: dict[str, Any]
    ) -> None:
        for label, item in items:
            if "environment" in item:
                environment.update(self._mapping(item["environment"], f"{label}.environment"))
                continue
            entity, component, changes = item.get("entity"), item.get("component"), item.get("set")
            if not isinstance(entity, str) or entity not in raw:
                self.err(f"{label}.entity", f"unknown entity {entity!r}")
            elif not isinstance(component, str):
                self.err(f"{label}.component", "required: the component type to set")
            elif not isinstance(changes, dict):
                self.err(f"{label}.set", "required: a mapping of properties to set")
            else:
                raw[entity][component] = {**(raw[entity].get(component) or {}), **copy.deepcopy(changes)}

    def _validate(self, raw: dict[str, dict[str, Any]], ruleset: Ruleset) -> None:
        for label, comps in raw.items():
            for type_name, props in comps.items():
                errors, warnings = validate_component(ruleset, type_name, props)
                for path, message in errors:
                    self.err(f"{label}.{path}", message)
                for path, message in warnings:
                    self.warn(f"{label}.{path}", message)

    def _compile_refs(self, raw: dict[str, dict[str, Any]], ruleset: Ruleset) -> None:
        ids = self.ids["entity"]
        for label, comps in raw.items():
            for type_name, props in comps.items():
                if not isinstance(props, dict):
                    continue
                for prop, is_list in ruleset.ref_paths(type_name):
                    value = props.get(prop)
                    names = value if is_list else [value]
                    if value is None or not all(isinstance(n, str) for n in names):
                        continue  # absent, or a type error already reported
                    for n in names:
                        if n not in ids:
                            self.err(f"{label}.components.{type_name}.{prop}", f"unknown entity {n!r}")
                    compiled = [ids.get(n, n) for n in names]
                    props[prop] = compiled if is_list else compiled[0]

    # -- synths ----------------------------------------------------------------------------

    def _synths(self, items: list[tuple[str, dict[str, Any]]]) -> list[SynthState]:
        synths: list[SynthState] = []
        for label, item in items:
            senses = item.get("senses", list(CHANNELS))
            if not isinstance(senses, list) or not all(isinstance(s, str) for s in senses):
                self.err(f"{label}.senses", "must be a list of channels")
                senses = []
            for s in senses:
                if s not in CHANNELS:
                    self.err(f"{label}.senses", f"unknown channel {s!r} (channels: {', '.join(CHANNELS)})")
            inner = self._mapping(item.get("inner_state"), f"{label}.inner_state")
            parts: dict[str, Any] = {}
            for key, model, value in (
                ("identity", Identity, {
                    "name": label,
                    "description": item.get("description") or "",
                    "traits": item.get("traits") or [],
                    "voice": item.get("voice") or "",
                }),
                ("inner_state", Affect, inner),
            ):  # fmt: skip
                parts[key] = self._model(model, value, label if key == "identity" else f"{label}.{key}")
            for key, model in (("beliefs", Belief), ("projects", Project), ("memories", Memory)):
                values = item.get(key) or []
                if not isinstance(values, list):
                    self.err(f"{label}.{key}", "must be a list")
                    values = []
                if key == "memories":
                    values = [v if isinstance(v, dict) else {"content": v} for v in values]
                parts[key] = [self._model(model, v, f"{label}.{key}[{i}]") for i, v in enumerate(values)]
            if any(p is None for p in [parts["identity"], parts["inner_state"], *parts["beliefs"],
                                      *parts["projects"], *parts["memories"]]):  # fmt: skip
                continue
            synths.append(
                SynthState(
                    synth_id=self.ids["synth"][label],
                    identity=parts["identity"],
                    senses=[s for s in CHANNELS if s in senses],
                    affect=parts["inner_state"],
                    beliefs=parts["beliefs"],
                    projects=parts["projects"],
                    memories=parts["memories"],
                )
            )
        return synths

    def _model(self, model: type[BaseModel], value: Any, where: str) -> Any:
        """`model` validated from `value`, or None with the first problem reported."""
        try:
            return model.model_validate(value)
        except ValidationError as e:
            first = e.errors()[0]
            path = ".".join(str(p) for p in first["loc"])
            self.err(f"{where}.{path}" if path else where, first["msg"])
            return None

    # -- containment -----------------------------------------------------------------------

    def _place(
        self,
        entity_items: list[tuple[str, dict[str, Any]]],
        synth_items: list[tuple[str, dict[str, Any]]],
        raw: dict[str, dict[str, Any]],
        locations: dict[str, LocationNode],
    ) -> dict[str, EntityNode]:
        """Build every entity node (synth bodies included) with consistent containment:
        a location lists what is directly in it, a holder lists what it holds, and every
        node's `location_id` is where its outermost holder is."""
        eids, sids, lids = self.ids["entity"], self.ids["synth"], self.ids["location"]
        holder: dict[str, str] = {}  # entity name -> the entity or synth name directly holding it
        place: dict[str, str] = {}  # entity/synth name -> location name, for the outermost ones
        for label, item in synth_items:
            loc = _name(item.get("location"))
            if loc not in lids:
                self.err(f"{label}.location", f"unknown location {loc!r}" if loc else "required: where the synth is")
            else:
                place[label] = loc
            for carried in self._names_list(item, "carries", label):
                if carried not in eids:
                    self.err(f"{label}.carries", f"unknown entity {carried!r}")
                elif carried in holder:
                    self.err(f"{label}.carries", f"{carried!r} is already held by {holder[carried]!r}")
                else:
                    holder[carried] = label
        for label, item in entity_items:
            loc, inside = _name(item.get("location")), _name(item.get("in"))
            if label in holder and label in eids and holder[label] in sids:
                if loc is not None or inside is not None:
                    self.err(label, f"carried by {holder[label]!r}, so it takes no location or `in`")
                continue
            if (loc is None) == (inside is None):
                self.err(label, "needs exactly one of `location` or `in` (or a synth that carries it)")
            elif loc is not None:
                if loc in lids:
                    place[label] = loc
                else:
                    self.err(f"{label}.location", f"unknown location {loc!r}")
            elif inside in eids and inside != label:
                holder[label] = inside
            else:
                self.err(f"{label}.in", f"unknown entity {inside!r}" if inside != label else "cannot be inside itself")

        def outermost(name: str) -> tuple[str | None, str | None, bool]:
            """(location name, carrying synth name, on a cycle?) of an entity."""
            seen, carrier, current = set(), None, name
            while current in holder:
                if current in seen:
                    return None, None, True
                seen.add(current)
                current = holder[current]
                if current in sids and carrier is None:
                    carrier = current
            return place.get(current), carrier, False

        nodes: dict[str, EntityNode] = {}
        all_items = [(lbl, it, False) for lbl, it in entity_items] + [(lbl, it, True) for lbl, it in synth_items]
        for label, item, is_synth in all_items:
            loc, carrier, cycle = outermost(label)
            if cycle:
                self.err(f"{label}.in", "containment cycle")
            if loc is None:
                continue  # reported: a cycle, or an unknown place further out
            nid = sids[label] if is_synth else eids[label]
            direct = holder.get(label)
            nodes[nid] = EntityNode(
                id=nid,
                name=label,
                description=self._str(item, "description", label),
                location_id=lids[loc],
                container_id=(sids[direct] if direct in sids else eids[direct]) if direct else None,
                carried_by_synth_id=sids[carrier] if carrier else None,
                synth_id=nid if is_synth else None,
                components=(
                    {"Body": {}, "Senses": {"channels": [s for s in CHANNELS if s in (item.get("senses") or CHANNELS)]}}
                    if is_synth
                    else {
                        k: v
                        for k, v in raw.get(label, {}).items()
                        if isinstance(k, str) and isinstance(v, dict) and all(isinstance(p, str) for p in v)
                    }
                ),
            )
        by_name = {n.name: n for n in nodes.values()}
        for label, item, _ in all_items:  # contents in pack order: entities, then synth bodies
            node = by_name.get(label)
            if node is None:
                continue
            direct = holder.get(label)
            if direct is None:
                locations[node.location_id].contained_entity_ids.append(node.id)
            elif direct in by_name:
                by_name[direct].contained_entity_ids.append(node.id)
        for label, item in synth_items:  # a synth's carried items in the order it lists them
            body = by_name.get(label)
            if body is not None:
                order = [by_name[c].id for c in self._names_list(item, "carries", label) if c in by_name]
                body.contained_entity_ids = [i for i in order if i in body.contained_entity_ids]
        return nodes

    # -- processes and facts ---------------------------------------------------------------

    def _processes(self, items: list[tuple[str, dict[str, Any]]]) -> dict[str, ProcessState]:
        processes: dict[str, ProcessState] = {}
        for label, item in items:
            chart = {"initial": item.get("initial"), "states": copy.deepcopy(item.get("states"))}
            if chart["initial"] is None:
                del chart["initial"]
            problems = statechart.validate_chart(chart)
            for path, message in problems:
                self.err(f"{label}.{path}", message)
            if problems:
                continue
            before = len(self.problems)
            self._compile_effects(label, chart, "")
            if len(self.problems) > before:
                continue
            pid = self.ids["process"][label]
            processes[pid] = ProcessState(id=pid, name=label, chart=chart, state=statechart.initial_state(chart))
        return processes

    def _compile_effects(self, label: str, node: dict[str, Any], where: str) -> None:
        for name, state in (node.get("states") or {}).items():
            here = f"{where}states.{name}"
            if not isinstance(state, dict):
                continue
            for i, effect in enumerate(state.get("on_enter") or []):
                at = f"{label}.{here}.on_enter[{i}]"
                if not isinstance(effect, dict) or len(effect) != 1:
                    self.err(at, "an effect is one of {set_environment: {...}} or {set_component: {...}}")
                elif "set_environment" in effect:
                    if not _named_mapping(effect["set_environment"]):
                        self.err(f"{at}.set_environment", "must be a mapping of environment values")
                elif "set_component" in effect:
                    spec = effect["set_component"]
                    if not isinstance(spec, dict):
                        self.err(f"{at}.set_component", "must be a mapping {entity, component, changes}")
                        continue
                    if _name(spec.get("entity")) not in self.ids["entity"]:
                        self.err(f"{at}.set_component.entity", f"unknown entity {spec.get('entity')!r}")
                    else:
                        spec["entity"] = self.ids["entity"][spec["entity"]]
                    if not isinstance(spec.get("component"), str):
                        self.err(f"{at}.set_component.component", "required: a component type")
                    if not _named_mapping(spec.get("changes")):
                        self.err(f"{at}.set_component.changes", "required: a mapping of properties")
                else:
                    self.err(at, f"unknown effect {next(iter(effect))!r}")
            self._compile_effects(label, state, f"{here}.")

    def _facts(self, items: list[tuple[str, dict[str, Any]]]) -> list[LatentFact]:
        facts = []
        for i, (label, item) in enumerate(items):
            text = item.get("text")
            if not isinstance(text, str) or not text.strip():
                self.err(f"{label}.text", "required (the fact, in words)")
                continue
            known = []
            for who in self._names_list(item, "known_by", label):
                if who in self.ids["synth"]:
                    known.append(self.ids["synth"][who])
                else:
                    self.err(f"{label}.known_by", f"unknown synth {who!r}")
            facts.append(LatentFact(id=stable_id(self.name, "fact", str(i)), text=text, known_by=known))
        return facts


def _name(value: Any) -> Any:
    """A reference as written: a string stays; anything else becomes its text, so a lookup
    reports it as unknown instead of failing on an unhashable value."""
    return value if value is None or isinstance(value, str) else str(value)


def _named_mapping(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)
