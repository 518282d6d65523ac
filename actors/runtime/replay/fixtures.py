"""Recorded runs as JSON lines: `chorus export RUN_ID` writes one; tests replay them in CI.

A line is one event: its type name and the schema version it was written with, its
envelope and its payload. Loading goes through the registered upcasters, so a fixture
recorded by older code still loads; one with no upcaster for its version fails clearly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actors.runtime.replay.rerun import run_records
from events.registry import MissingUpcaster, UnknownEventType, resolve, upcast
from events.store import EventStore
from projections.files import write_atomically


def export_run(store: EventStore, run_id: str, path: Path) -> int:
    """Write the run's events, in global order, to `path` (atomically). Returns the count."""
    lines = []
    for rec in run_records(store, run_id):
        e = rec.event
        lines.append(
            json.dumps(
                {
                    "type": e.type_name,
                    "schema_version": e.schema_version,
                    "stream_id": e.stream_id,
                    "version": e.version,
                    "event_id": str(e.event_id),
                    "run_id": e.run_id,
                    "causation_id": e.causation_id,
                    "command_id": e.command_id,
                    "timestamp": e.timestamp.isoformat(),
                    "payload": e.model_dump(mode="json", include=set(e.payload())),
                },
                ensure_ascii=False,
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, ["\n".join(lines) + "\n"])
    return len(lines)


class FixtureError(ValueError):
    pass


def load_fixture(path: Path, store: EventStore | None = None) -> tuple[EventStore, str]:
    """The fixture's events appended to `store` (a fresh in-memory one by default), in
    their original order and streams. Returns the store and the run id."""
    store = store or EventStore("memory://")
    try:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise FixtureError(f"cannot read fixture {path}: {e}") from e
    if not rows:
        raise FixtureError(f"fixture {path} holds no events")
    run_ids = {row["run_id"] for row in rows}
    if len(run_ids) != 1:
        raise FixtureError(f"fixture {path} mixes runs: {sorted(run_ids)}")
    for number, row in enumerate(rows, start=1):
        try:
            cls = resolve(row["type"])
            payload: dict[str, Any] = row["payload"]
            if row["schema_version"] != cls.schema_version:
                payload = upcast(row["type"], row["schema_version"], payload)
        except (UnknownEventType, MissingUpcaster) as e:
            raise FixtureError(f"fixture {path}, event {number}: {e}") from e
        event = cls.model_validate(
            {
                **payload,
                "event_id": row["event_id"],
                "run_id": row["run_id"],
                "causation_id": row["causation_id"],
                "command_id": row["command_id"],
                "timestamp": row["timestamp"],
            }
        )
        store.append(row["stream_id"], [event], row["version"] - 1)
    return store, run_ids.pop()
