"""Mechanical mutations of a recorded run (a fixture's rows), for mutation testing replay:
change, delete, duplicate or reorder each recorded completion and tool result, move each
clock reading (the timestamps effects were recorded at), and edit each prompt.

Pure: rows in, (name, rows) out. Digests and the seal are left as they were, so a sealed
fixture shows where its chain breaks; `forged=True` in the callers reseals, to measure what
replay alone catches."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

EFFECTS = ("LlmCompleted", "ToolReturned")
CHANGED = {"LlmCompleted": "content", "ToolReturned": "output"}


def read_rows(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    seal = rows.pop() if rows and "seal" in rows[-1] else None
    return rows, seal


def mutations(rows: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for i, row in enumerate(rows):
        kind, where = row["type"], f"line {i + 1} ({row['type']} v{row['version']})"
        if kind in EFFECTS:
            field = CHANGED[kind]
            changed = copy.deepcopy(rows)
            changed[i]["payload"][field] = str(changed[i]["payload"].get(field, "")) + " [mutated]"
            yield f"change {where}", changed
            yield f"delete {where}", rows[:i] + rows[i + 1 :]
            yield f"duplicate {where}", rows[: i + 1] + [copy.deepcopy(row)] + rows[i + 1 :]
            if i + 1 < len(rows):
                swapped = rows[:i] + [rows[i + 1], rows[i]] + rows[i + 2 :]
                yield f"reorder {where}", swapped
            moved = copy.deepcopy(rows)
            moved[i]["timestamp"] = (datetime.fromisoformat(row["timestamp"]) + timedelta(seconds=1)).isoformat()
            yield f"clock {where}", moved
        if kind == "LlmRequested" and row["payload"].get("messages"):
            edited = copy.deepcopy(rows)
            last = edited[i]["payload"]["messages"][-1]
            last["content"] = f"{last.get('content') or ''} (edited)"
            yield f"edit-prompt {where}", edited
