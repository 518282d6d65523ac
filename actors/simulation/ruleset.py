"""The ruleset layer (seed 002): which component types exist, what properties they take,
and which affordances they enable.

A content pack names its ruleset (`ruleset_ref`); the loader validates every component
against it, so the kernel can trust that a Repairable has a `condition` without knowing
what a lamp is. An unknown component type is a warning (a pack may carry data for a later
ruleset); a missing required property or a wrong type is an error, reported by its
property path (`components.Repairable.repair_requirements.tools`).

Properties typed `ref` name entities in the pack; the loader compiles them to entity ids,
so the ruleset (not the loader) says which properties are references.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

PropertyType = Literal["str", "bool", "int", "float", "list", "map", "ref", "any"]

Problem = tuple[str, str]  # (property path, message)


class PropertySpec(BaseModel):
    type: PropertyType
    choices: list[Any] | None = None  # allowed values (for a list: of its items)
    item: PropertyType | None = None  # for a list: its items' type
    required: dict[str, PropertySpec] = {}  # for a map: its own required properties
    optional: dict[str, PropertySpec] = {}  # for a map: its own optional properties


class ComponentSchema(BaseModel):
    name: str
    required: dict[str, PropertySpec] = {}
    optional: dict[str, PropertySpec] = {}
    affordances: list[str] = []  # action prefixes it enables: "repair", "take", ...
    description: str = ""

    def properties(self) -> dict[str, PropertySpec]:
        return {**self.required, **self.optional}


class Ruleset(BaseModel):
    name: str
    schemas: dict[str, ComponentSchema]

    def schema(self, type_name: str) -> ComponentSchema | None:  # type: ignore[override]  # not BaseModel.schema()
        return self.schemas.get(type_name)

    def affordances(self, components: dict[str, Any]) -> list[str]:
        """The affordances an entity with these component types offers, in schema order."""
        found: list[str] = []
        for type_name in components:
            schema = self.schemas.get(type_name)
            for a in schema.affordances if schema else ():
                if a not in found:
                    found.append(a)
        return found

    def ref_paths(self, type_name: str) -> list[tuple[str, bool]]:
        """Top-level properties of a component that name entities: (property, is_list)."""
        schema = self.schemas.get(type_name)
        if schema is None:
            return []
        return [
            (name, spec.type == "list")
            for name, spec in schema.properties().items()
            if spec.type == "ref" or (spec.type == "list" and spec.item == "ref")
        ]


def _p(type_: PropertyType, **kw: Any) -> PropertySpec:
    return PropertySpec(type=type_, **kw)


CHANNEL_NAMES = ["visual", "auditory", "tactile", "proprioceptive"]

PHYSICAL_SOCIAL_V1 = Ruleset(
    name="physical_social_v1",
    schemas={
        s.name: s
        for s in [
            ComponentSchema(
                name="Repairable",
                required={"condition": _p("str", choices=["ok", "jammed", "broken"])},
                optional={
                    # when given, it must say which tool kinds a repair needs
                    "repair_requirements": _p("map", required={"tools": _p("list", item="str")}),
                    "links": _p("list", item="ref"),
                },
                affordances=["repair"],
                description="can be out of order and put right; a repair cascades to its links",
            ),
            ComponentSchema(
                name="Switchable",
                required={"on": _p("bool")},
                optional={"links": _p("list", item="ref")},
                affordances=["switch"],
                description="turns on and off; powers its own and its linked light sources",
            ),
            ComponentSchema(
                name="LightSource",
                required={"lit": _p("bool")},
                optional={"intensity": _p("float"), "requires_power": _p("bool")},
            ),
            ComponentSchema(name="Portable", optional={"weight": _p("float")}, affordances=["take"]),
            ComponentSchema(
                name="Consumable",
                required={"uses": _p("int")},
                optional={"effect": _p("str")},
                affordances=["consume"],
            ),
            ComponentSchema(
                name="Container",
                required={"open": _p("bool")},
                optional={"locked": _p("bool")},
                affordances=["open"],
            ),
            ComponentSchema(name="Tool", required={"kind": _p("str")}),
            ComponentSchema(
                name="SoundSource", required={"sound": _p("str")}, optional={"loudness": _p("float")}
            ),
            ComponentSchema(name="Body", description="a synth's body (the loader adds it)"),
            ComponentSchema(
                name="Senses",
                required={"channels": _p("list", item="str", choices=CHANNEL_NAMES)},
                description="what a synth can perceive (the loader adds it)",
            ),
            ComponentSchema(name="Temperature", required={"celsius": _p("float")}),
        ]
    },
)
RULESETS: dict[str, Ruleset] = {PHYSICAL_SOCIAL_V1.name: PHYSICAL_SOCIAL_V1}


def get_ruleset(ref: str) -> Ruleset:
    try:
        return RULESETS[ref]
    except (KeyError, TypeError):
        known = ", ".join(sorted(RULESETS))
        raise ValueError(f"unknown ruleset {ref!r} (known: {known})") from None


def validate_component(ruleset: Ruleset, type_name: str, props: Any) -> tuple[list[Problem], list[Problem]]:
    """Check one component's properties. Returns (errors, warnings), each a list of
    (property path, message) with paths like `components.Repairable.condition`."""
    path = f"components.{type_name}"
    schema = ruleset.schema(type_name)
    if schema is None:
        return [], [(path, f"unknown component type {type_name!r} in ruleset {ruleset.name}")]
    if props is None:
        props = {}
    errors: list[Problem] = []
    warnings: list[Problem] = []
    _check_map(path, props, schema.required, schema.optional, errors, warnings)
    return errors, warnings


def _check_map(
    path: str,
    value: Any,
    required: dict[str, PropertySpec],
    optional: dict[str, PropertySpec],
    errors: list[Problem],
    warnings: list[Problem],
) -> None:
    if not isinstance(value, dict):
        errors.append((path, f"must be a mapping of properties, not {_kind(value)}"))
        return
    for name in value:
        if not isinstance(name, str):
            errors.append((f"{path}.{name}", "a property name must be a string"))
    for name in required:
        if name not in value:
            errors.append((f"{path}.{name}", "required property missing"))
    for name, v in value.items():
        if not isinstance(name, str):
            continue
        spec = required.get(name) or optional.get(name)
        if spec is None:
            warnings.append((f"{path}.{name}", "unknown property"))
            continue
        _check_value(f"{path}.{name}", v, spec, errors, warnings)


def _check_value(path: str, value: Any, spec: PropertySpec, errors: list[Problem], warnings: list[Problem]) -> None:
    if spec.type == "map":
        _check_map(path, value, spec.required, spec.optional, errors, warnings)
        return
    if spec.type == "list":
        if not isinstance(value, list):
            errors.append((path, f"expected a list, got {_kind(value)}"))
            return
        for i, item in enumerate(value):
            if spec.item is not None and not _is(item, spec.item):
                errors.append((f"{path}[{i}]", f"expected {spec.item}, got {_kind(item)}"))
            elif spec.choices is not None and item not in spec.choices:
                errors.append((f"{path}[{i}]", f"must be one of {', '.join(map(str, spec.choices))}"))
        return
    if not _is(value, spec.type):
        errors.append((path, f"expected {spec.type}, got {_kind(value)}"))
    elif spec.choices is not None and value not in spec.choices:
        errors.append((path, f"must be one of {', '.join(map(str, spec.choices))}, got {value!r}"))


def _is(value: Any, type_: PropertyType) -> bool:
    if type_ == "any":
        return True
    if type_ in ("str", "ref"):
        return isinstance(value, str)
    if type_ == "bool":
        return isinstance(value, bool)
    if type_ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if type_ == "list":
        return isinstance(value, list)
    return isinstance(value, dict)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )
