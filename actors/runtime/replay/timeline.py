"""A run as a person debugging it reads it: every event in global order, with the offset from
the run's start, the actor, and what happened (`chorus log`)."""

from __future__ import annotations

from actors.runtime.progress import describe, is_error
from actors.runtime.replay.rerun import run_kind_of, run_records
from events.store import EventStore


def timeline(store: EventStore, run_id: str, color: bool = False) -> list[str]:
    """One block per event: offset from the run's start, position, actor, what happened."""
    records = run_records(store, run_id)
    kind = run_kind_of(store, run_id, records)
    start = records[0].event.timestamp
    lines = []
    for rec in records:
        e = rec.event
        text = describe(e, brief=True, kind=kind) or e.type_name
        if e.type_name == "ToolReturned" and e.output.strip():  # type: ignore[attr-defined]
            text += "\n" + _indent(e.output, 12)  # type: ignore[attr-defined]
        offset = (e.timestamp - start).total_seconds()
        actor = e.stream_id.split(":", 1)[0]
        line = f"{offset:8.2f}s  {rec.position:>6}  {actor:<6} {text}"
        if is_error(e, kind):
            line = f"\033[31m{line}\033[0m" if color else f"{line}  <-- !"
        lines.append(line)
    return lines


def _indent(text: str, n: int, max_lines: int = 6) -> str:
    rows = text.strip().splitlines()
    shown = rows[:max_lines] + ([f"... ({len(rows) - max_lines} more lines)"] if len(rows) > max_lines else [])
    return "\n".join(" " * n + "| " + r for r in shown)
