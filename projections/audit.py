"""The audit trail: every event of every run, the LLM call log, and token and cost totals.

Seed 002 keeps an append-only JSONL audit log and `llm_calls.jsonl` (full prompt, model,
seed, temperature, response of every call) plus a token/cost summary. Here they are
views of the log, rebuilt at will, and the JSONL files are exports of those views
(the reading side is `projections.audit_query`, re-exported here).

Tables (portable SQL; timestamps are UTC ISO-8601 text with microseconds, so text order
is time order; every JSON column is JSON as pydantic writes it, `pydantic_core.to_json`
with NaN and infinities as null, keys in the order the event holds them: `payload` is the
same text as `model_dump_json` of the payload fields, and `messages`, `params`, ... are
the same text as those fields inside it; NUL in plain text columns becomes U+FFFD,
because PostgreSQL text cannot hold it, while JSON columns keep it escaped):

    audit_events  position PK, event_id, run_id, stream_id, version, type, type_version,
                  timestamp, causation_id, command_id, payload
    llm_calls     position PK (of the request; of the result for a result with no request),
                  run_id, stream_id, call_index, request_hash, status (pending | completed |
                  failed), model, response_model, messages, params, seed, temperature,
                  response_schema, content, parsed, prompt_tokens, completion_tokens,
                  latency_s, cost_usd, error, requested_at, completed_at, result_position

Schema v2 (from v1): the LLM call JSON columns keep the event's key order instead of
sorting keys (one Rust `to_json` per field instead of Python's JSON encoder: the LLM
rows were a fifth of a rebuild).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

import msgpack
from pydantic_core import to_json

from events.base import Event
from events.codec import _ext_hook
from events.registry import resolve
from events.store import Recorded
from projections.audit_query import AuditEvent, AuditTrail, LlmCall, Usage
from projections.columns import _clean, _timestamp
from projections.projection import Projection, StoredRecord, register_projection
from projections.views import ViewCursor

__all__ = ["AuditEvent", "AuditProjection", "AuditTrail", "LlmCall", "Usage"]

_LLM_TYPES = frozenset({"LlmRequested", "LlmCompleted", "LlmFailed"})


@register_projection
class AuditProjection(Projection):
    name = "audit"
    schema_version = 2
    types = ()  # every event
    tables = ("audit_events", "llm_calls")
    stored = True  # rows come from the stored msgpack: no pydantic per event
    indexes = (
        ("audit_events_run", "audit_events", "run_id, position"),
        ("audit_events_stream", "audit_events", "stream_id, position"),
        ("audit_events_type", "audit_events", "type, position"),
        ("audit_events_time", "audit_events", "timestamp, position"),
        ("llm_calls_run", "llm_calls", "run_id, position"),
    )

    def create(self, c: ViewCursor) -> None:
        # On SQLite an INTEGER PRIMARY KEY is the rowid (64-bit): one b-tree, not two.
        # The rows are the same either way; a view made before keeps its BIGINT key.
        key = "INTEGER PRIMARY KEY" if c.dialect == "sqlite" else "BIGINT PRIMARY KEY"
        c.execute(
            "CREATE TABLE IF NOT EXISTS audit_events ("
            f"position {key}, event_id TEXT NOT NULL, run_id TEXT NOT NULL, "
            "stream_id TEXT NOT NULL, version BIGINT NOT NULL, type TEXT NOT NULL, "
            "type_version INTEGER NOT NULL, timestamp TEXT NOT NULL, causation_id TEXT, "
            "command_id TEXT, payload TEXT NOT NULL)"
        )
        c.execute(
            "CREATE TABLE IF NOT EXISTS llm_calls ("
            f"position {key}, run_id TEXT NOT NULL, stream_id TEXT NOT NULL, "
            "call_index INTEGER NOT NULL, request_hash TEXT NOT NULL, status TEXT NOT NULL, "
            "model TEXT, response_model TEXT, messages TEXT, params TEXT, seed BIGINT, "
            "temperature DOUBLE PRECISION, response_schema TEXT, content TEXT, parsed TEXT, "
            "prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, "
            "latency_s DOUBLE PRECISION, cost_usd DOUBLE PRECISION, error TEXT, "
            "requested_at TEXT, completed_at TEXT, result_position BIGINT)"
        )
        # Not among `indexes`: apply looks results' requests up by it, so a bulk load keeps it.
        c.execute(
            "CREATE INDEX IF NOT EXISTS llm_calls_call ON llm_calls (stream_id, call_index, position)"
        )
        self.create_indexes(c)

    def apply(self, c: ViewCursor, recorded: Recorded | StoredRecord) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded | StoredRecord]) -> None:
        # LLM calls first seen in this batch are built here and inserted once at the end
        # (a request and its result usually arrive together); results of calls from
        # earlier batches update their rows. Either way the rows end up the same.
        calls: dict[int, list[Any]] = {}
        pending: dict[tuple[Any, ...], list[int]] = {}
        rows = []
        for row, payload in _event_rows(records):
            rows.append(row)
            if row[5] in _LLM_TYPES:
                _llm(c, row, payload, calls, pending)
        c.insert_rows("audit_events", _EVENT_COLUMN_NAMES, rows)
        c.insert_rows("llm_calls", _CALL_COLUMNS, list(calls.values()))


_EVENT_COLUMN_NAMES = (
    "position", "event_id", "run_id", "stream_id", "version", "type", "type_version",
    "timestamp", "causation_id", "command_id", "payload",
)
_CALL_COLUMNS = (
    "position", "run_id", "stream_id", "call_index", "request_hash", "status", "model",
    "response_model", "messages", "params", "seed", "temperature", "response_schema",
    "content", "parsed", "prompt_tokens", "completion_tokens", "latency_s", "cost_usd",
    "error", "requested_at", "completed_at", "result_position",
)
_COMPLETED = (
    "status", "response_model", "content", "parsed", "prompt_tokens", "completion_tokens",
    "latency_s", "cost_usd", "completed_at", "result_position",
)
_FAILED = ("status", "error", "completed_at", "result_position")
_AT = {name: i for i, name in enumerate(_CALL_COLUMNS)}
_COMPLETED_AT = tuple(_AT[k] for k in _COMPLETED)
_FAILED_AT = tuple(_AT[k] for k in _FAILED)


# -- LLM calls ------------------------------------------------------------------------------
# The fields come from the payload dict (python-mode values, as `Event.payload()` gives
# them and the log stores them), so typed and stored records give the same rows.


def _llm(
    c: ViewCursor,
    row: tuple[Any, ...],
    p: dict[str, Any],
    calls: dict[int, list[Any]],
    pending: dict[tuple[Any, ...], list[int]],
) -> None:
    position, stream_id, type_name, at = row[0], row[3], row[5], row[7]
    request_hash = _clean(p["request_hash"])
    key = (stream_id, p["call_index"], request_hash)
    if type_name == "LlmRequested":
        params = p.get("params") or {}
        seed, temperature, schema = params.get("seed"), params.get("temperature"), p.get("response_schema")
        calls[position] = [
            position, row[2], stream_id, p["call_index"], request_hash, "pending", _clean(p["model"]),
            None, _json(p["messages"]), _json(params),
            seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            float(temperature) if _is_number(temperature) else None,
            None if schema is None else _json(schema),
            None, None, 0, 0, None, None, None, at, None, None,
        ]
        pending.setdefault(key, []).append(position)
        return
    names, where, values = _result(position, type_name, p, at)
    # A result pairs with the latest pending request of its stream, call and hash.
    waiting = pending.get(key)
    if waiting:
        call = calls[waiting.pop()]
        for i, value in zip(where, values):
            call[i] = value
        return
    found = c.execute(
        "SELECT position FROM llm_calls WHERE stream_id = ? AND call_index = ? "
        "AND request_hash = ? AND status = 'pending' ORDER BY position DESC LIMIT 1",
        key,
    ).fetchone()
    if found is None:  # a result with no request (a log cut short): keep it anyway
        call = [None] * len(_CALL_COLUMNS)
        call[:6] = [position, row[2], stream_id, p["call_index"], request_hash, "pending"]
        call[15:17] = [0, 0]
        for i, value in zip(where, values):
            call[i] = value
        calls[position] = call
        return
    columns = ", ".join(f"{k} = ?" for k in names)
    c.execute(f"UPDATE llm_calls SET {columns} WHERE position = ?", (*values, found["position"]))


def _result(
    position: int, type_name: str, p: dict[str, Any], at: str
) -> tuple[tuple[str, ...], tuple[int, ...], tuple[Any, ...]]:
    """The columns a result sets: names, their indexes in a call row, values."""
    if type_name == "LlmCompleted":
        parsed = p.get("parsed")
        return _COMPLETED, _COMPLETED_AT, (
            "completed", _clean(p.get("model", "")) or None, _clean(p["content"]),
            None if parsed is None else _json(parsed), p.get("prompt_tokens", 0),
            p.get("completion_tokens", 0), p.get("latency_s", 0.0), p.get("cost_usd"), at, position,
        )
    return _FAILED, _FAILED_AT, ("failed", _json(p["error"]), at, position)  # LlmFailed


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json(value: Any) -> str:
    """JSON as pydantic writes it (the payload column's, field by field)."""
    return to_json(value, inf_nan_mode="null").decode()


# -- audit_events rows ----------------------------------------------------------------------


def _event_rows(
    records: Sequence[Recorded | StoredRecord],
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Each event's audit_events row, and its payload (python-mode values, except that
    UUIDs may come as their text: the same JSON either way).

    Stored records are read from their msgpack without pydantic, the whole batch in one
    `unpackb` (`_decode`), unless an event was written at an older schema version (then
    it is upcast and validated, as a read would). The payload column is
    `pydantic_core.to_json` of the payload, in field order: the same text as
    `model_dump_json` of the payload fields, from either kind of record. This loop is
    most of a rebuild's Python time, hence the inlining.
    """
    decoded = _decode_records(records)
    versions: dict[str, int] = {}
    for r, fields in zip(records, decoded):
        if fields is not None:
            schema, event_id, run_id, causation_id, command_id, at, payload = fields
            type_name = r.type_name  # type: ignore[union-attr]
            version = versions.get(type_name)
            if version is None:
                version = versions[type_name] = resolve(type_name).schema_version
            if schema == version:
                stream_id = r.stream_id  # type: ignore[union-attr]
                yield (
                    r.position,
                    event_id,
                    run_id if "\x00" not in run_id else _clean(run_id),
                    stream_id if "\x00" not in stream_id else _clean(stream_id),
                    r.version,  # type: ignore[union-attr]
                    type_name,
                    version,
                    at if len(at) == 32 and at.endswith("+00:00") else _utc_text(at),
                    causation_id if causation_id is None or "\x00" not in causation_id else _clean(causation_id),
                    command_id if command_id is None or "\x00" not in command_id else _clean(command_id),
                    to_json(payload, inf_nan_mode="null").decode(),
                ), payload
                continue
        yield _typed_row(r.position, r.event)


def _typed_row(position: int, e: Event) -> tuple[tuple[Any, ...], dict[str, Any]]:
    payload = e.payload()
    row = (
        position, str(e.event_id), _clean(e.run_id), _clean(e.stream_id), e.version,
        e.type_name, type(e).schema_version, _timestamp(e.timestamp), _clean(e.causation_id),
        _clean(e.command_id), _json(payload),
    )
    return row, payload


def _decode_records(records: Sequence[Recorded | StoredRecord]) -> list[list[Any] | None]:
    """Each stored record's fields (`_decode`), None where it must take the typed path;
    one `unpackb` for the batch when it can, else one per record."""
    states = [r.state for r in records if r.__class__ is StoredRecord]  # type: ignore[union-attr]
    if len(states) < len(records):
        return [_one(r.state) if r.__class__ is StoredRecord else None for r in records]  # type: ignore[union-attr]
    fields = _decode(states)
    if fields is not None:
        return fields
    return [_one(state) for state in states]


def _one(state: bytes) -> list[Any] | None:
    fields = _decode([state])
    return None if fields is None else fields[0]


def _decode(states: list[bytes]) -> list[list[Any]] | None:
    """Stored events (msgpack of [schema_version, event_id, run_id, causation_id,
    command_id, timestamp, payload]) to their fields in one `unpackb` of an array of
    them, with each envelope's event id and time left as text: formatting a UUID and a
    datetime back to text costs more than the rest of the row. Payload UUIDs come as
    text too (their JSON is that text).

    None when the stored text would not do: a payload that holds a datetime (its JSON
    differs from its stored text; every envelope holds exactly one, so more datetimes
    than events means some payload has one) or a map with tuple keys (`unpackb`'s
    TypeError). The caller then decodes event by event, and those events go typed.
    """
    stamps = 0

    def ext(code: int, data: bytes) -> Any:
        nonlocal stamps
        if code == _UUID_EXT:
            h = data.hex()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        if code == _DATETIME_EXT:
            stamps += 1
            return data.decode()
        return _ext_hook(code, data)

    data = b"".join([_ARRAY32, len(states).to_bytes(4, "big"), *states])
    collecting = gc.isenabled()
    gc.disable()  # msgpack's advice for big messages: GC passes over what it builds find nothing
    try:
        fields = msgpack.unpackb(data, ext_hook=ext, raw=False, strict_map_key=False)
    except TypeError:  # a map with tuple keys
        return None
    finally:
        if collecting:
            gc.enable()
    return fields if stamps == len(states) else None  # type: ignore[no-any-return]


_UUID_EXT, _DATETIME_EXT = 1, 2  # events.codec's extension codes
_ARRAY32 = b"\xdd"  # msgpack: an array of up to 2**32 - 1 items, its length in 4 bytes


def _utc_text(iso: str) -> str:
    """`_timestamp` of a stored `datetime.isoformat()` text (UTC with microseconds,
    32 characters, is already that text: the caller checks)."""
    t = datetime.fromisoformat(iso)
    return _timestamp(t if t.tzinfo else t.replace(tzinfo=timezone.utc))
