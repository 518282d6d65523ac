"""Full-system snapshots of a session (world + director + synths), in the simulation's own
format with the seed's migration chain 0.1.0 -> 0.2.0 -> 0.3.0.

The director saves one through the store's snapshot recorder (under its stream, at its
version), like any actor shell; the snapshots projection indexes it and writes it as a
JSON file. A snapshot is a cache: loading one and folding the streams' tails after
`versions` gives the state folding the whole log gives, and an old document (or one with
no `versions`, from before 0.3.0) still reads, through the chain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from events.base import State

SIM_SNAPSHOT_FORMAT = "0.3.0"


class SimulationSnapshot(State):
    format: str = SIM_SNAPSHOT_FORMAT
    world: dict[str, Any]
    director: dict[str, Any]
    synths: dict[str, dict[str, Any]]  # synth id -> SynthState, dumped
    versions: dict[str, int] = {}  # stream -> the version this snapshot folds up to (0.3.0)


Migration = Callable[[dict[str, Any]], dict[str, Any]]
_MIGRATIONS: dict[str, tuple[str, Migration]] = {}


def migration(source: str, target: str) -> Callable[[Migration], Migration]:
    def register(fn: Migration) -> Migration:
        _MIGRATIONS[source] = (target, fn)
        return fn

    return register


@migration("0.1.0", "0.2.0")
def _add_director(doc: dict[str, Any]) -> dict[str, Any]:
    """0.1.0 (the seed's first cut) held the world and the synths only. 0.2.0 adds the
    director's state (cycle count, pending stimuli, last outcomes) and the synths'
    mental models (theory of mind), empty for older files."""
    synths = {sid: {"mental_models": {}, **s} for sid, s in doc.get("synths", {}).items()}
    return {**doc, "format": "0.2.0", "director": doc.get("director", {}), "synths": synths}


@migration("0.2.0", "0.3.0")
def _add_versions(doc: dict[str, Any]) -> dict[str, Any]:
    """0.3.0 records which stream versions the snapshot folds up to; unknown for older
    files, which are then read, never resumed from."""
    return {**doc, "format": "0.3.0", "versions": doc.get("versions", {})}


def migration_chain(start: str = "0.1.0") -> list[str]:
    chain = [start]
    while chain[-1] in _MIGRATIONS:
        chain.append(_MIGRATIONS[chain[-1]][0])
    return chain


def migrate(doc: Mapping[str, Any]) -> SimulationSnapshot:
    """Any known format, brought to the current one and validated."""
    current = dict(doc)
    version = str(current.get("format", "0.1.0"))
    while version != SIM_SNAPSHOT_FORMAT:
        if version not in _MIGRATIONS:
            raise ValueError(f"simulation snapshot format {version!r} is unknown (this code reads up to {SIM_SNAPSHOT_FORMAT})")
        version, step = _MIGRATIONS[version]
        current = step(current)
    return SimulationSnapshot.model_validate(current)
