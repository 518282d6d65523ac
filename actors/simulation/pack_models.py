"""A content pack's shape as pydantic models (seed 002): what a pack file may say, field by
field, and the checks across sections (unique names, references, containment, components
against the ruleset) as model validators. Pure: no file, no Ray. `actors.simulation.loader`
reads the YAML, validates it as a `PackSpec` and compiles the result into a world.

Every key of a pack is known: an unknown key is an error (a typo such as `adjecent` would
otherwise be dropped without a word). A key written as null is as if absent. Types are
strict: `random_seed: "3"` or `voice: 3` is an error, not a conversion.

`problems(error, data)` turns a ValidationError into lines `path: message`, the path as the
YAML reads (`synths[2].voice`), with the item's name when it has one (`synths[2].voice (Ann)`).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from actors.simulation import statechart
from actors.simulation.ruleset import get_ruleset, validate_component
from actors.simulation.world import CHANNELS, Clock

Loc = tuple[str | int, ...]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "required (a non-empty string)")
    return value


Name = Annotated[str, AfterValidator(_not_blank)]
Channel = Literal[CHANNELS]  # type: ignore[valid-type]
Values = dict[str, Any]  # a mapping with names for keys, any values


def _checked(problems: list[tuple[Loc, str]], title: str) -> None:
    """Raise the problems a model validator found, each at its own path, as one ValidationError."""
    if problems:
        raise ValidationError.from_exception_data(
            title,
            [
                InitErrorDetails(type=PydanticCustomError("pack", message), loc=loc, input=None)
                for loc, message in dict.fromkeys(problems)
            ],
        )


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


# -- the sections -----------------------------------------------------------------------------


class ClockSpec(_Spec):
    chronon_seconds: PositiveInt = Clock().chronon_seconds
    start: str = Clock().start

    @field_validator("start", mode="before")
    @classmethod
    def _iso(cls, value: Any) -> Any:
        return value.isoformat() if isinstance(value, datetime | date) else value  # YAML reads timestamps itself

    @field_validator("start")
    @classmethod
    def _time(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise PydanticCustomError("time", "must be an ISO time like 2026-01-01T18:00:00") from None
        return value


class LocationSpec(_Spec):
    name: Name
    description: str = ""
    adjacent: list[str] = []
    properties: Values = {}

    @model_validator(mode="after")
    def _not_beside_itself(self) -> LocationSpec:
        if self.name in self.adjacent:
            raise PydanticCustomError("pack", "a location cannot be adjacent to itself")
        return self


class EntitySpec(_Spec):
    name: Name
    description: str = ""
    location: str | None = None
    in_: str | None = Field(None, alias="in")
    components: dict[str, Values] = {}

    @field_validator("components", mode="before")
    @classmethod
    def _bare_type_is_empty(cls, value: Any) -> Any:  # `Portable:` with nothing after it
        return {k: {} if v is None else v for k, v in value.items()} if isinstance(value, dict) else value


class AffectSpec(_Spec):
    mood: str = "calm"
    energy: float = 0.7


class BeliefSpec(_Spec):
    subject: str
    content: str
    confidence: float = 0.8


class ProjectSpec(_Spec):
    name: str
    goal: str
    status: str = "active"


class MemorySpec(_Spec):
    content: str
    salience: float = 0.5

    @model_validator(mode="before")
    @classmethod
    def _text_alone(cls, data: Any) -> Any:  # `- The lamp stuck last winter.`
        return {"content": data} if isinstance(data, str) else data


class SynthSpec(_Spec):
    name: Name
    description: str = ""
    traits: list[str] = []
    voice: str = ""
    location: str = Field(description="where the synth is (a location's name)")
    senses: list[Channel] = list(CHANNELS)
    carries: list[str] = []
    inner_state: AffectSpec = AffectSpec()
    beliefs: list[BeliefSpec] = []
    projects: list[ProjectSpec] = []
    memories: list[MemorySpec] = []


class SetComponent(_Spec):
    entity: str
    component: str
    changes: Values


class EffectSpec(_Spec):
    """One of `{set_environment: {...}}` or `{set_component: {entity, component, changes}}`."""

    set_environment: Values | None = None
    set_component: SetComponent | None = None

    @model_validator(mode="after")
    def _one(self) -> EffectSpec:
        if (self.set_environment is None) == (self.set_component is None):
            raise PydanticCustomError("pack", "an effect is one of {set_environment: {...}} or {set_component: {...}}")
        return self


class TransitionSpec(_Spec):
    target: str
    after: NonNegativeInt | None = None
    when: Values | None = None

    @model_validator(mode="after")
    def _guarded(self) -> TransitionSpec:
        if self.after is None and self.when is None:
            raise PydanticCustomError("pack", "a transition needs `after` or `when`")
        return self


class StateSpec(_Spec):
    initial: str | None = None
    states: dict[str, StateSpec | None] = {}
    transitions: list[TransitionSpec] = []
    on_enter: list[EffectSpec] = []


class ProcessSpec(_Spec):
    name: Name
    initial: str | None = None
    states: dict[str, StateSpec | None] = Field(description="a mapping of states")

    def chart(self) -> dict[str, Any]:
        """The statechart as the pack wrote it (plain data, what `statechart` reads)."""
        return self.model_dump(exclude={"name"}, exclude_unset=True)

    @field_validator("states")
    @classmethod
    def _some(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise PydanticCustomError("pack", "a process needs at least one state")
        return value

    @model_validator(mode="after")
    def _chart(self) -> ProcessSpec:
        _checked([((path,), message) for path, message in statechart.validate_chart(self.chart())], "ProcessSpec")
        return self


class FactSpec(_Spec):
    text: Name = Field(description="the fact, in words")
    known_by: list[str] = []


class ConditionSpec(_Spec):
    """`{entity, component, set: {...}}` (a component's properties) or `{environment: {...}}`."""

    environment: Values | None = None
    entity: str | None = None
    component: str | None = None
    set: Values | None = None

    @model_validator(mode="after")
    def _one(self) -> ConditionSpec:
        if self.environment is not None:
            if (self.entity, self.component, self.set) != (None, None, None):
                raise PydanticCustomError("pack", "`environment` stands alone: no entity, component or set beside it")
        elif None in (self.entity, self.component, self.set):
            raise PydanticCustomError("pack", "needs entity, component and set (or environment)")
        return self


def effects(states: dict[str, Any], where: str = "states") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every `on_enter` effect in a chart's states (plain data), with its path."""
    for name, state in states.items():
        for i, effect in enumerate((state or {}).get("on_enter") or []):
            yield f"{where}.{name}.on_enter[{i}]", effect
        yield from effects((state or {}).get("states") or {}, f"{where}.{name}.states")


# -- the pack -------------------------------------------------------------------------------------


class PackSpec(_Spec):
    name: Name = Field(description="the pack's name (a non-empty string)")
    description: str = ""
    random_seed: int = 0
    ruleset_ref: str = "physical_social_v1"
    clock: ClockSpec = ClockSpec()
    environment: Values = {}
    locations: list[LocationSpec] = []
    entities: list[EntitySpec] = []
    synths: list[SynthSpec] = []
    processes: list[ProcessSpec] = []
    latent_facts: list[FactSpec] = []
    initial_conditions: list[ConditionSpec] = []

    _warnings: list[tuple[Loc, str]] = PrivateAttr(default_factory=list)

    @field_validator("ruleset_ref")
    @classmethod
    def _known_ruleset(cls, value: str) -> str:
        try:
            get_ruleset(value)
        except ValueError as e:
            raise PydanticCustomError("pack", str(e)) from None
        return value

    @property
    def warnings(self) -> list[tuple[Loc, str]]:
        """(path, message) of what is allowed but likely wrong: unknown component types."""
        return self._warnings

    def start_environment(self) -> dict[str, Any]:
        """The environment with the initial conditions' environment values applied."""
        env = dict(self.environment)
        for c in self.initial_conditions:
            env.update(c.environment or {})
        return env

    def start_components(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Entity name -> its components, with the initial conditions' `set`s applied."""
        comps = {e.name: {t: dict(p) for t, p in e.components.items()} for e in self.entities}
        for c in self.initial_conditions:
            if c.entity in comps and c.component is not None:
                comps[c.entity][c.component] = {**comps[c.entity].get(c.component, {}), **(c.set or {})}
        return comps

    def containment(self) -> tuple[dict[str, str], dict[str, str]]:
        """(holder, place): entity name -> the entity or synth directly holding it, and entity or
        synth name -> location name for the outermost ones. References assumed checked."""
        holder: dict[str, str] = {}
        place = {s.name: s.location for s in self.synths}
        for s in self.synths:
            for carried in s.carries:
                holder.setdefault(carried, s.name)
        for e in self.entities:
            if e.name in holder:
                continue
            if e.location is not None:
                place[e.name] = e.location
            elif e.in_ is not None:
                holder[e.name] = e.in_
        return holder, place

    @model_validator(mode="after")
    def _unique_names(self) -> PackSpec:
        found: list[tuple[Loc, str]] = []
        for section in ("locations", "entities", "synths", "processes"):
            seen: set[str] = set()
            for i, item in enumerate(getattr(self, section)):
                if item.name in seen:
                    found.append(((section, i, "name"), f"duplicate {_KIND[section]} name {item.name!r}"))
                seen.add(item.name)
        entities = {e.name for e in self.entities}
        for i, s in enumerate(self.synths):
            if s.name in entities:
                found.append((("synths", i, "name"), f"{s.name!r} names both an entity and a synth"))
        _checked(found, "PackSpec")
        return self

    @model_validator(mode="after")
    def _cross_checks(self) -> PackSpec:
        """With names unique: references, containment, components; every problem at once."""
        _checked(self._references() + self._cycles() + self._components(), "PackSpec")
        return self

    def _references(self) -> list[tuple[Loc, str]]:
        locations, entities = {x.name for x in self.locations}, {x.name for x in self.entities}
        synths = {x.name for x in self.synths}
        found: list[tuple[Loc, str]] = []

        def known(loc: Loc, name: str | None, names: set[str], kind: str) -> None:
            if name is not None and name not in names:
                found.append((loc, f"unknown {kind} {name!r}"))

        for i, loc in enumerate(self.locations):
            for j, other in enumerate(loc.adjacent):
                known(("locations", i, "adjacent", j), other, locations, "location")
        carrier: dict[str, str] = {}
        for i, s in enumerate(self.synths):
            known(("synths", i, "location"), s.location, locations, "location")
            for j, carried in enumerate(s.carries):
                known(("synths", i, "carries", j), carried, entities, "entity")
                if carried in carrier:
                    at = ("synths", i, "carries", j)
                    found.append((at, f"{carried!r} is already carried by {carrier[carried]!r}"))
                carrier.setdefault(carried, s.name)
        for i, e in enumerate(self.entities):
            if e.name in carrier:
                if e.location is not None or e.in_ is not None:
                    found.append((("entities", i), f"carried by {carrier[e.name]!r}, so it takes no location or `in`"))
            elif (e.location is None) == (e.in_ is None):
                found.append((("entities", i), "needs exactly one of `location` or `in` (or a synth that carries it)"))
            elif e.in_ == e.name:
                found.append((("entities", i, "in"), "cannot be inside itself"))
            known(("entities", i, "location"), e.location, locations, "location")
            known(("entities", i, "in"), e.in_, entities, "entity")
        for i, c in enumerate(self.initial_conditions):
            known(("initial_conditions", i, "entity"), c.entity, entities, "entity")
        for i, p in enumerate(self.processes):
            for path, effect in effects(p.chart()["states"]):
                if "set_component" in effect:
                    at = ("processes", i, f"{path}.set_component.entity")
                    known(at, effect["set_component"]["entity"], entities, "entity")
        for i, f in enumerate(self.latent_facts):
            for j, who in enumerate(f.known_by):
                known(("latent_facts", i, "known_by", j), who, synths, "synth")
        return found

    def _cycles(self) -> list[tuple[Loc, str]]:
        holder, _ = self.containment()
        on_cycle: set[str] = set()
        done: set[str] = set()
        for e in self.entities:  # each holder chain walked once: linear in the pack
            trail: dict[str, int] = {}
            current = e.name
            while current in holder and current not in done and current not in trail:
                trail[current] = len(trail)
                current = holder[current]
            if current in trail:  # back on this walk's own trail
                on_cycle.update(list(trail)[trail[current] :])
            done.update(trail)
        return [
            (("entities", i, "in"), "containment cycle")
            for i, e in enumerate(self.entities)
            if e.name in on_cycle and e.in_ != e.name  # inside itself: said so already
        ]

    def _components(self) -> list[tuple[Loc, str]]:
        """Every component, initial conditions applied, against the ruleset; references to
        entities among its properties (those the ruleset types `ref`) must name one."""
        ruleset = get_ruleset(self.ruleset_ref)
        index = {e.name: i for i, e in enumerate(self.entities)}
        entities = set(index)
        found: list[tuple[Loc, str]] = []
        for name, comps in self.start_components().items():
            for type_name, props in comps.items():
                errors, warnings = validate_component(ruleset, type_name, props)
                found += [(("entities", index[name], path), message) for path, message in errors]
                self._warnings += [(("entities", index[name], path), message) for path, message in warnings]
                for prop, is_list in ruleset.ref_paths(type_name):
                    value = props.get(prop)
                    names = value if is_list and isinstance(value, list) else [value]
                    for n in names:
                        if isinstance(n, str) and n not in entities:
                            at = ("entities", index[name], f"components.{type_name}.{prop}")
                            found.append((at, f"unknown entity {n!r}"))
        return found


_KIND = {"locations": "location", "entities": "entity", "synths": "synth", "processes": "process"}


# -- ValidationError -> lines ---------------------------------------------------------------------


def path(loc: Loc, data: Any) -> str:
    """`synths[2].voice (Ann)`: the YAML path of `loc`, with the named item it is in."""
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "pack"
    if len(loc) >= 2 and isinstance(loc[1], int) and isinstance(data, dict):
        items = data.get(loc[0])
        item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) else None
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"].strip():
            text += f" ({item['name']})"
    return text


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The pack model that the mapping at `loc` is validated as (to list its keys)."""
    model: type[BaseModel] = PackSpec
    for part in loc:
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        if isinstance(part, int) or part not in fields:
            continue  # a list's index, a dict's key (a state's name)
        model = _model_in(fields[part].annotation)  # type: ignore[assignment]
        if model is None:
            return None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation)[::-1]:  # a dict's value, a list's item
            if (found := _model_in(arg)) is not None:
                return found
    return None


def _message(error: Any) -> str:
    kind, loc, value = error["type"], error["loc"], error.get("input")
    if kind == "missing":
        model = _model_at(loc[:-1])
        field = model.model_fields.get(str(loc[-1])) if model else None
        return f"required: {field.description}" if field is not None and field.description else "required"
    if kind == "extra_forbidden":
        model = _model_at(tuple(p for p in loc[:-1] if not (isinstance(p, str) and "." in p)))
        keys = ", ".join(f.alias or n for n, f in model.model_fields.items()) if model else ""
        return f"unknown key {loc[-1]!r}" + (f" (known: {keys})" if keys else "")
    if kind in ("pack", "blank", "time"):
        return error["msg"] + (f", got {value!r}" if kind == "time" else "")
    message = re.sub(r"a valid dictionary( or instance of \w+)?", "a mapping", error["msg"])
    message = message[0].lower() + message[1:]
    if isinstance(value, str | int | float | bool) and len(repr(value)) <= 60:
        return f"{message}, got {value!r}"
    got = "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else type(value).__name__
    return f"{message}, got {got}"


def problems(error: ValidationError, data: Any) -> list[str]:
    """One line per problem, `path: message`, in the order pydantic found them."""
    lines = []
    for e in error.errors():
        loc = e["loc"]
        if loc[-1:] == ("[key]",):  # a mapping's key that is not a name
            lines.append(f"{path(loc[:-2], data)}: key {loc[-2]!r}: keys must be names (strings)")
        else:
            lines.append(f"{path(loc, data)}: {_message(e)}")
    return list(dict.fromkeys(lines))
