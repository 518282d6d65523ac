"""Recorded runs as JSON lines: `chorus export RUN_ID` writes one; tests replay them in CI.

A line is one event: its type name and the schema version it was written with, its
envelope and its payload. Loading goes through the registered upcasters, so a fixture
recorded by older code still loads; one with no upcaster for its version fails clearly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from actors.runtime.replay.rerun import run_records
from events.registry import MissingUpcaster, UnknownEventType, resolve, upcast
from events.store import EventStore
from projections.files import write_atomically


def export_run(store: EventStore, run_id: str, path: Path) -> int:
    """Write the run's events, in global order, to `path` (atomically; its folder must
    exist). Returns the count."""
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
    write_atomically(path, ["\n".join(lines) + "\n"])
    return len(lines)


class FixtureError(ValueError):
    pass


ROW_KEYS = ("type", "schema_version", "stream_id", "version", "event_id", "run_id",
            "causation_id", "command_id", "timestamp", "payload")


def load_fixture(path: Path, store: EventStore | None = None) -> tuple[EventStore, str]:
    """The fixture's events appended to `store` (a fresh in-memory one by default), in
    their original order and streams. Returns the store and the run id.

    Everything is checked before the first append, so a bad fixture (not JSON, a line that
    is not an event, a stream whose versions skip) raises FixtureError naming the file and
    line and leaves `store` untouched."""
    rows = _read_rows(Path(path))
    run_ids = {str(row["run_id"]) for _, row in rows}
    if len(run_ids) != 1:
        raise FixtureError(f"fixture {path} mixes runs: {sorted(run_ids)}")
    store = store or EventStore("memory://")
    events = []
    versions: dict[str, int] = {}
    for number, (line, row) in enumerate(rows, start=1):
        where = f"fixture {path}, line {line}, event {number}"
        stream, version = row["stream_id"], row["version"]
        if not isinstance(stream, str) or not isinstance(version, int) or isinstance(version, bool):
            raise FixtureError(f"{where}: stream_id must be text and version a whole number")
        expected = (versions[stream] if stream in versions else store.stream_version(stream)) + 1
        if version != expected:
            raise FixtureError(f"{where}: {stream} jumps to version {version}, expected {expected}")
        versions[stream] = version
        try:
            cls = resolve(row["type"])
            payload: dict[str, Any] = row["payload"]
            if not isinstance(payload, dict):
                raise FixtureError(f"{where}: payload must be an object")
            if row["schema_version"] != cls.schema_version:
                payload = upcast(row["type"], row["schema_version"], payload)
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
        except (UnknownEventType, MissingUpcaster, TypeError) as e:
            raise FixtureError(f"{where}: {_one_line(e)}") from e
        except ValidationError as e:
            problem = e.errors()[0] if e.errors() else {}
            field = ".".join(str(p) for p in problem.get("loc", ())) or "event"
            raise FixtureError(f"{where}: {row['type']} {field}: {problem.get('msg', 'invalid')}") from e
        events.append((stream, version, event))
    for stream, version, event in events:
        store.append(stream, [event], version - 1)
    return store, run_ids.pop()


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) for each non-blank line; every row an object with every key."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise FixtureError(f"cannot read fixture {path}: {_one_line(e)}") from e
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise FixtureError(f"cannot read fixture {path}: line {number} is not JSON ({e.msg})") from e
        if not isinstance(row, dict):
            raise FixtureError(
                f"cannot read fixture {path}: line {number} is a JSON {type(row).__name__}, not an event object"
            )
        missing = [key for key in ROW_KEYS if key not in row]
        if missing:
            raise FixtureError(f"cannot read fixture {path}: line {number} lacks {', '.join(missing)}")
        rows.append((number, row))
    if not rows:
        raise FixtureError(f"fixture {path} holds no events")
    return rows


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__
