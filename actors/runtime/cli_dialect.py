"""The `chorus` command's one dialect, for every verb (the runtime's and each workload's
a RunKind's `front.add_commands`): the same flag for the same thing, and one JSON shape per kind of
output.

- a run: the positional `RUN` where a verb needs one (`--run RUN` only as an optional filter);
- a folder the run works in or reads: `--root DIR` (`add_root`);
- an output file: `--out FILE` (`add_out`);
- a position in a run: `--at N` (its unit per workload: docs/reference.md, "What --at means");
- machine-readable output: `--json` (`add_json`): one JSON object per line for lists, one
  object for a single answer; an event is always `event_record`'s shape.

An old spelling stays one release as a hidden alias (`alias`): it sets the same value and is
left out of `--help` and of the generated CLI reference's flag lists.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

# The one JSON shape of an event, on every verb and route that prints one (`chorus events
# --json`, `log --json`, `audit events --json`, `GET /v1/runs/{id}/events`, the SSE `data:`).
EVENT_FIELDS = (
    "position", "event_id", "run_id", "stream_id", "version", "type",
    "timestamp", "causation_id", "command_id", "data",
)  # fmt: skip


def event_record(
    *,
    position: int,
    event_id: Any,
    run_id: str,
    stream_id: str,
    version: int,
    type: str,
    timestamp: datetime,
    causation_id: str | None,
    command_id: str | None,
    data: dict[str, Any],
) -> dict[str, Any]:
    """An event as JSON: its global `position`, the envelope, and its payload as `data`."""
    return {
        "position": position,
        "event_id": str(event_id),
        "run_id": run_id,
        "stream_id": stream_id,
        "version": version,
        "type": type,
        "timestamp": timestamp.isoformat(),
        "causation_id": causation_id,
        "command_id": command_id,
        "data": data,
    }


def json_default(o: Any) -> Any:
    if isinstance(o, datetime):
        return o.isoformat()
    if isinstance(o, bytes):
        return o.hex()
    return str(o)


def print_json(value: Any) -> None:
    """One JSON value on one line (a list verb prints one per row)."""
    print(json.dumps(value, ensure_ascii=False, default=json_default))


def add_json(p: argparse.ArgumentParser, what: str = "") -> None:
    p.add_argument(
        "--json", action="store_true",
        help=f"print JSON instead of text{f': {what}' if what else ''}",
    )  # fmt: skip


def add_root(p: argparse.ArgumentParser, help: str, *, old: str | None = None, dest: str = "root", **kw: Any) -> None:
    """`--root DIR` (the folder a verb works in or reads); `old` an earlier spelling kept hidden."""
    p.add_argument("--root", dest=dest, metavar=kw.pop("metavar", "DIR"), help=help, **kw)
    if old:
        alias(p, old, dest, type=kw.get("type"))


def add_out(p: argparse.ArgumentParser, help: str, **kw: Any) -> None:
    """`--out FILE`: where a verb writes instead of printing (checked by actors.cli.paths)."""
    from pathlib import Path

    p.add_argument("--out", type=Path, metavar="FILE", help=help, **kw)


def alias(p: argparse.ArgumentParser, flag: str, dest: str, **kw: Any) -> None:
    """An old spelling of an option, setting `dest` as the new one does, hidden from help.
    Kept for one release (CHANGELOG names each)."""
    kw = {k: v for k, v in kw.items() if v is not None}
    p.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kw)


def run_arg(p: argparse.ArgumentParser, help: str = "the run's id (as `chorus runs` lists it)", **kw: Any) -> None:
    """The positional RUN."""
    p.add_argument(kw.pop("dest", "run_id"), metavar="RUN", help=help, **kw)
