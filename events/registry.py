"""Event types by stable name and schema version, and the upcasters between versions.

A stored event names its type and the schema version it was written with. Loading it
runs the registered upcasters from that version to the current one, on the plain
payload dict, before pydantic validates it. Renaming a Python class never breaks a log:
only the registered name is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from events.base import Event

E = TypeVar("E", bound=type[Event])
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_TYPES: dict[str, type[Event]] = {}
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class UnknownEventType(LookupError):
    pass


class MissingUpcaster(LookupError):
    pass


def event_type(name: str, version: int = 1) -> Callable[[E], E]:
    """Class decorator: register an event type under a stable name and schema version."""

    def register(cls: E) -> E:
        existing = _TYPES.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"event type name {name!r} already used by {existing!r}")
        cls.type_name = name
        cls.schema_version = version
        _TYPES[name] = cls
        return cls

    return register


def upcaster(name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function turning payload dicts of `name` at `from_version` into the next."""

    def register(fn: Upcaster) -> Upcaster:
        _UPCASTERS[(name, from_version)] = fn
        return fn

    return register


_LOADERS: list[Callable[[], None]] = []


def on_unknown_type(loader: Callable[[], None]) -> None:
    """Call `loader` when a type name is not registered, then look again. The runtime
    registers its plugin loader here (`actors.runtime.registry.load_workloads`): a workload
    registers its event types from its own folder when its plugin is loaded, so a log read
    before any workload was (a fixture loaded from Python, a projection caught up) still
    decodes, and this layer imports no workload."""
    if loader not in _LOADERS:
        _LOADERS.append(loader)


def resolve(name: str) -> type[Event]:
    cls = _TYPES.get(name)
    if cls is None:
        for load in _LOADERS:
            load()
        cls = _TYPES.get(name)
    if cls is None:
        raise UnknownEventType(
            f"unknown event type {name!r}: no imported module defines it; install the plugin that "
            f"defines it, or name its module in CHORUS_PLUGINS"
        )
    return cls


def upcast(name: str, stored_version: int, payload: dict[str, Any]) -> dict[str, Any]:
    cls = resolve(name)
    version = stored_version
    if version > cls.schema_version:
        raise MissingUpcaster(
            f"{name} stored at schema v{version} is newer than this code (v{cls.schema_version})"
        )
    while version < cls.schema_version:
        fn = _UPCASTERS.get((name, version))
        if fn is None:
            raise MissingUpcaster(
                f"no upcaster for {name} from schema v{version} to v{version + 1}"
            )
        payload = fn(dict(payload))
        version += 1
    return payload


def registered() -> dict[str, type[Event]]:
    return dict(_TYPES)
