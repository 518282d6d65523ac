"""Recorded runs as JSON lines: `chorus export RUN_ID` writes one; tests replay them in CI.

A line is one event: its type name and the schema version it was written with, its
envelope and its payload. Loading goes through the registered upcasters, so a fixture
recorded by older code still loads; one with no upcaster for its version fails clearly.

A fixture is sealed: each line carries `digest`, the SHA-256 of the previous line's digest and
this line's canonical JSON, and a last line `{"seal": DIGEST, "events": N}` closes the chain.
Changing, deleting, reordering or duplicating any line (a completion, a tool result, a
timestamp, a prompt) breaks the chain at that line, and loading refuses it naming the line;
cutting lines off the end breaks the seal. A fixture written before sealing (no digests)
still loads; `python -m actors.runtime.replay.fixtures seal FILE...` seals it in place.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
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
    rows = fixture_rows(store, run_id)
    write_atomically(path, [sealed_text(rows)])
    return len(rows)


def fixture_rows(store: EventStore, run_id: str) -> list[dict[str, Any]]:
    """The run's events, in global order, as a fixture's rows (unsealed: `sealed_text`
    makes the file's text; the page's export downloads that)."""
    rows = []
    for rec in run_records(store, run_id):
        e = rec.event
        rows.append(
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
            }
        )
    return rows


def _digest(previous: str, row: dict[str, Any]) -> str:
    body = {k: v for k, v in row.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256((previous + canonical).encode()).hexdigest()


def sealed_text(rows: list[dict[str, Any]]) -> str:
    """The rows as JSON lines, each with its chained digest, and the closing seal line."""
    lines, previous = [], ""
    for row in rows:
        previous = _digest(previous, row)
        lines.append(json.dumps({**row, "digest": previous}, ensure_ascii=False))
    lines.append(json.dumps({"seal": previous, "events": len(rows)}))
    return "\n".join(lines) + "\n"


def seal(path: Path) -> int:
    """Seal a fixture in place (recomputing its chain from what it holds now). Returns the count."""
    rows = [{k: v for k, v in row.items() if k != "digest"} for _, row in _read_rows(Path(path))]
    write_atomically(Path(path), [sealed_text(rows)])
    return len(rows)


def _check_chain(path: Path, rows: list[tuple[int, dict[str, Any]]], seal_row: tuple[int, dict[str, Any]] | None) -> None:
    """FixtureError naming the first line whose digest does not follow from the lines before it."""
    digests = [row.get("digest") for _, row in rows]
    if seal_row is None and not any(digests):
        return  # written before fixtures were sealed: nothing to check against
    previous = ""
    for line, row in rows:
        want = _digest(previous, row)
        if row.get("digest") != want:
            raise FixtureError(
                f"fixture {path}, line {line}: its digest does not follow from the lines before it "
                f"({row.get('type')} of {row.get('stream_id')} v{row.get('version')}): the fixture was edited after export"
            )
        previous = want
    if seal_row is None:
        raise FixtureError(f"fixture {path}: its closing seal line is missing: lines were cut off the end")
    line, closing = seal_row
    if closing.get("seal") != previous or closing.get("events") != len(rows):
        raise FixtureError(
            f"fixture {path}, line {line}: the seal does not match the {len(rows)} events before it: "
            "events were cut off the end or the seal was edited"
        )


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
    seal_row = rows.pop() if rows and "seal" in rows[-1][1] else None
    _check_chain(Path(path), rows, seal_row)
    if not rows:
        raise FixtureError(f"fixture {path} holds no events")
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
        if "seal" in row:
            missing = []  # the closing line of a sealed fixture
        if missing:
            raise FixtureError(f"cannot read fixture {path}: line {number} lacks {', '.join(missing)}")
        rows.append((number, row))
    if not rows:
        raise FixtureError(f"fixture {path} holds no events")
    return rows


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m actors.runtime.replay.fixtures")
    sub = parser.add_subparsers(dest="command", required=True)
    sealing = sub.add_parser("seal", help="seal fixtures in place (recompute their digest chain)")
    sealing.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.files:
        try:
            print(f"{path}: sealed {seal(path)} events")
        except FixtureError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
