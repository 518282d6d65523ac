"""How views spell values in their columns, the same on every backend: JSON with sorted
keys, text without NUL, timestamps as fixed-width UTC text (so text order is time order)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def json_column(value: Any) -> str:
    """JSON text for a TEXT column: sorted keys, compact, unknown types as str."""
    return _ENCODER.encode(value)


def clean(text: str | None) -> str | None:
    """PostgreSQL TEXT cannot hold NUL: replace it (everywhere, so every backend agrees).
    JSON columns need no cleaning: JSON escapes NUL."""
    return text if text is None or "\x00" not in text else text.replace("\x00", "\ufffd")


def timestamp_text(t: datetime) -> str:
    """UTC, fixed width: text order is time order (naive datetimes are taken as UTC)."""
    if t.tzinfo is not timezone.utc:
        t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")
