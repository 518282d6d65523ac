"""The audit trail's view (the writing side of `projections.audit`): an index over the log.

Seed 002 keeps an append-only JSONL audit log and `llm_calls.jsonl` (full prompt, model,
seed, temperature, response of every call) plus a token/cost summary. Here they are an
*index over the log*, rebuilt at will: the events themselves, prompts and responses
included, stay where they already are, in the store, and the reading side
(`projections.audit_query`) fetches them by stream and position. The
view holds what the log cannot answer by itself: which streams and positions hold a
run's events and when, and which request each LLM result answers, with its numbers.

Tables (portable SQL; timestamps are UTC ISO-8601 text with microseconds, so text order
is time order; NUL in text becomes U+FFFD, because PostgreSQL text cannot hold it):

    audit_streams  one row per run and actor stream (the events of one run in one
                   stream): run_id, stream_id, first_position, last_position,
                   first_version, last_version, first_at, last_at (earliest and latest
                   timestamp), events (how many)
    llm_calls      one row per LLM call: position PK (of the request; of the result for
                   a result with no request), run_id, stream_id, call_index,
                   request_hash, model, seed, temperature, requested_at; status
                   (pending | completed | failed), response_model, prompt_tokens,
                   completion_tokens, latency_s, cost_usd, completed_at, result_position

Schema v3 (from v2): v2 copied every event into `audit_events` (its payload as JSON) and
every prompt and response into `llm_calls`: 1.2 rows and 1.7 times the log's bytes per
event, which capped a rebuild at a third of the speed of reading the log even with no
Python at all (BENCHMARKS.md). v3 writes a row per run and stream and a narrow row per
LLM call.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from itertools import groupby
from typing import Any, TypeGuard

import msgpack

from events.registry import resolve
from events.store import Recorded
from projections.columns import clean, timestamp_text
from projections.log_reader import gc_paused
from projections.projection import Projection, StoredRecord, register_projection
from projections.views import ViewCursor

__all__ = ["AuditProjection"]

_LLM_TYPES = frozenset({"LlmRequested", "LlmCompleted", "LlmFailed"})

_STREAM_COLUMNS = (
    "run_id", "stream_id", "first_position", "last_position", "first_version", "last_version",
    "first_at", "last_at", "events",
)
_CALL_COLUMNS = (  # what the request tells, then what its result tells (`_RESULT`)
    "position", "run_id", "stream_id", "call_index", "request_hash", "model", "seed", "temperature",
    "requested_at", "status", "response_model", "prompt_tokens", "completion_tokens", "latency_s",
    "cost_usd", "completed_at", "result_position",
)


def _upsert(least: str, greatest: str) -> str:
    """A batch's spans of run and stream folded into the stored ones (batches come in
    log order, so a batch's last position and version are the latest)."""
    return (
        f"INSERT INTO audit_streams ({', '.join(_STREAM_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(_STREAM_COLUMNS))}) "
        "ON CONFLICT (run_id, stream_id) DO UPDATE SET "
        "last_position = excluded.last_position, last_version = excluded.last_version, "
        f"first_at = {least}(audit_streams.first_at, excluded.first_at), "
        f"last_at = {greatest}(audit_streams.last_at, excluded.last_at), "
        "events = audit_streams.events + excluded.events"
    )


_UPSERT = {"sqlite": _upsert("MIN", "MAX"), "postgres": _upsert("LEAST", "GREATEST")}


@register_projection
class AuditProjection(Projection):
    name = "audit"
    schema_version = 3
    types = ()  # every event
    tables = ("audit_streams", "llm_calls")
    stored = True  # rows come from the stored msgpack: no pydantic per event
    indexes = (
        ("audit_streams_stream", "audit_streams", "stream_id, first_position"),
        ("llm_calls_run", "llm_calls", "run_id, position"),
    )

    def create(self, c: ViewCursor) -> None:
        c.execute(
            "CREATE TABLE IF NOT EXISTS audit_streams ("
            "run_id TEXT NOT NULL, stream_id TEXT NOT NULL, first_position BIGINT NOT NULL, "
            "last_position BIGINT NOT NULL, first_version BIGINT NOT NULL, last_version BIGINT NOT NULL, "
            "first_at TEXT NOT NULL, last_at TEXT NOT NULL, events BIGINT NOT NULL, "
            "PRIMARY KEY (run_id, stream_id))"
        )
        # On SQLite an INTEGER PRIMARY KEY is the rowid (64-bit): one b-tree, not two.
        key = "INTEGER PRIMARY KEY" if c.dialect == "sqlite" else "BIGINT PRIMARY KEY"
        c.execute(
            "CREATE TABLE IF NOT EXISTS llm_calls ("
            f"position {key}, run_id TEXT NOT NULL, stream_id TEXT NOT NULL, "
            "call_index INTEGER NOT NULL, request_hash TEXT NOT NULL, model TEXT, seed BIGINT, "
            "temperature DOUBLE PRECISION, requested_at TEXT, status TEXT NOT NULL, response_model TEXT, "
            "prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0, "
            "latency_s DOUBLE PRECISION, cost_usd DOUBLE PRECISION, completed_at TEXT, "
            "result_position BIGINT)"
        )
        # Not among `indexes`: apply looks results' requests up by it, so a bulk load keeps it.
        c.execute(
            "CREATE INDEX IF NOT EXISTS llm_calls_call ON llm_calls (stream_id, call_index, position)"
        )
        self.create_indexes(c)

    def apply(self, c: ViewCursor, recorded: Recorded | StoredRecord) -> None:
        self.apply_batch(c, [recorded])

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded | StoredRecord]) -> None:
        with gc_paused():  # the batch's decoded events: many small containers, no cycles
            self._apply_batch(c, records)

    def _apply_batch(self, c: ViewCursor, records: Sequence[Recorded | StoredRecord]) -> None:
        # Spans and LLM calls first seen in this batch are built here and written once
        # at the end (a request and its result usually arrive together); results of
        # calls from earlier batches update their rows. The rows end up the same
        # however the log is cut into batches. This loop and the decoding are most of
        # a rebuild's Python time, hence the inlining.
        if records and records[0].__class__ is not StoredRecord:
            records = [_as_stored(r) for r in records]  # type: ignore[arg-type]  # all Recorded here
        fields = _decode_records(records)  # type: ignore[arg-type]
        # Per event only list comprehensions; per run of consecutive events of one run
        # and stream (a command's events, usually more), one span update.
        # Text comes as UTF-8 bytes (`_decode`): ids and times are decoded once per span.
        ats = [f[5] for f in fields]
        ats = [at if len(at) == 32 and at[26:] == b"+00:00" else _utc_text(at) for at in ats]
        spans: dict[tuple[bytes, str], list[Any]] = {}
        start = 0
        for key, group in groupby(zip([f[2] for f in fields], [r.stream_id for r in records])):  # type: ignore[union-attr]
            end = start + len(list(group))
            first, last = records[start], records[end - 1]
            earliest, latest = min(ats[start:end]), max(ats[start:end])
            span = spans.get(key)
            if span is None:
                spans[key] = [*key, first.position, last.position, first.version, last.version, earliest, latest, end - start]  # type: ignore[union-attr]
            else:
                span[3], span[5], span[8] = last.position, last.version, span[8] + end - start  # type: ignore[union-attr]
                span[6], span[7] = min(span[6], earliest), max(span[7], latest)
            start = end
        calls: dict[int, list[Any]] = {}
        pending: dict[tuple[Any, ...], list[int]] = {}
        versions = _llm_versions()
        for i in [i for i, r in enumerate(records) if r.type_name in versions]:  # type: ignore[union-attr]
            r, f = records[i], fields[i]
            # An LLM event written at an older schema version is upcast, as a read would.
            payload = f[6] if f[0] == versions[r.type_name] else _utf8(r.event.payload())  # type: ignore[union-attr]
            event = (r.position, clean(f[2].decode()), clean(r.stream_id), r.type_name, ats[i].decode())  # type: ignore[union-attr]
            _llm(c, event, payload, calls, pending)
        c.executemany(_UPSERT[c.dialect], _clean_spans(spans))
        c.insert_rows("llm_calls", _CALL_COLUMNS, list(calls.values()))


def _llm_versions() -> dict[str, int]:
    return {name: resolve(name).schema_version for name in _LLM_TYPES}


def _clean_spans(spans: dict[tuple[bytes, str], list[Any]]) -> list[list[Any]]:
    """The spans as rows, in key order, their run ids and times decoded and NUL in ids
    replaced (`clean`); two ids that only differ there become one span."""
    rows: dict[tuple[str, str], list[Any]] = {}
    for key in sorted(spans):
        span = spans[key]
        span[0], span[6], span[7] = span[0].decode(), span[6].decode(), span[7].decode()
        if "\x00" in span[0] or "\x00" in span[1]:
            span[0], span[1] = clean(span[0]), clean(span[1])
            same = rows.get((span[0], span[1]))
            if same is not None:  # merge: positions and versions of one stream ascend together
                same[2], same[4] = min(same[2], span[2]), min(same[4], span[4])
                same[3], same[5] = max(same[3], span[3]), max(same[5], span[5])
                same[6], same[7], same[8] = min(same[6], span[6]), max(same[7], span[7]), same[8] + span[8]
                continue
        rows[span[0], span[1]] = span
    return [rows[key] for key in sorted(rows)]


# -- LLM calls ------------------------------------------------------------------------------
# The fields come from the payload dict (python-mode values, as `Event.payload()` gives
# them and the log stores them), so typed and stored records give the same rows. A
# result sets the last `len(_RESULT)` columns of its call's row.

_RESULT = _CALL_COLUMNS[-8:]
_SET_RESULT = (
    f"UPDATE llm_calls SET {', '.join(f'{k} = ?' for k in _RESULT)} WHERE position = ?"
)
_FIND_REQUEST = (
    "SELECT position FROM llm_calls WHERE stream_id = ? AND call_index = ? "
    "AND request_hash = ? AND status = 'pending' ORDER BY position DESC LIMIT 1"
)


def _llm(
    c: ViewCursor,
    event: tuple[int, str | None, str | None, str, str],
    p: dict[bytes, Any],
    calls: dict[int, list[Any]],
    pending: dict[tuple[Any, ...], list[int]],
) -> None:
    position, run_id, stream_id, type_name, at = event
    # The payload's text is UTF-8 bytes, keys too (`_decode`).
    request_hash = clean(p[b"request_hash"].decode())
    key = (stream_id, p[b"call_index"], request_hash)
    if type_name == "LlmRequested":
        params = p.get(b"params") or {}
        seed, temperature = params.get(b"seed"), params.get(b"temperature")
        calls[position] = [
            position, run_id, stream_id, p[b"call_index"], request_hash, clean(p[b"model"].decode()),
            seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            float(temperature) if _is_number(temperature) else None, at,
            "pending", None, 0, 0, None, None, None, None,
        ]
        pending.setdefault(key, []).append(position)
        return
    if type_name == "LlmCompleted":
        model = p.get(b"model")
        result = [
            "completed", clean(model.decode()) if model else None, p.get(b"prompt_tokens", 0),
            p.get(b"completion_tokens", 0), p.get(b"latency_s", 0.0), p.get(b"cost_usd"), at, position,
        ]
    else:  # LlmFailed
        result = ["failed", None, 0, 0, None, None, at, position]
    # A result pairs with the latest pending request of its stream, call and hash.
    waiting = pending.get(key)
    if waiting:
        calls[waiting.pop()][-8:] = result
        return
    found = c.execute(_FIND_REQUEST, key).fetchone()
    if found is None:  # a result with no request (a log cut short): keep it anyway
        calls[position] = [position, run_id, stream_id, p[b"call_index"], request_hash, None, None, None, None, *result]
        return
    c.execute(_SET_RESULT, (*result, found["position"]))


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- reading the stored events ---------------------------------------------------------------


def _typed_fields(e: Any) -> list[Any]:
    """A typed event as `_decode` gives a stored one (the fields this view reads)."""
    return [
        type(e).schema_version, None, e.run_id.encode(), None, None, timestamp_text(e.timestamp).encode(),
        _utf8(e.payload()),
    ]


def _utf8(value: Any) -> Any:
    """A payload value with its text as UTF-8 bytes, keys too, as `_decode` gives it."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict):
        return {_utf8(k): _utf8(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_utf8(v) for v in value]
    return value


def _as_stored(r: Recorded) -> StoredRecord:
    """A typed record in a StoredRecord's shape, with no stored bytes (`_one` then reads
    the event)."""
    e = r.event
    stored = StoredRecord(r.position, e.stream_id, e.version, e.type_name, None)  # type: ignore[arg-type]
    stored._event = e
    return stored


def _decode_records(records: Sequence[StoredRecord]) -> list[list[Any]]:
    """Each record's fields: [schema_version, event_id, run_id, causation_id,
    command_id, timestamp, payload], as `_decode` gives them; one `unpackb` per batch
    of stored records when it can, else one per record, and typed records (or a
    stored one `_decode` cannot read) through `_typed_fields`."""
    states = [r.state for r in records]
    out: list[list[Any]] = []
    for i in range(0, len(records), _CHUNK):
        chunk = states[i : i + _CHUNK]
        fields = _decode(chunk) if None not in chunk else None
        out.extend(fields if fields is not None else [_one(r) for r in records[i : i + _CHUNK]])
    return out


_CHUNK = 500  # events per `unpackb`: measured faster than a whole batch of 5,000 at once


def _one(r: StoredRecord) -> list[Any]:
    if r.state is not None:
        fields = _decode([r.state])
        if fields is not None:
            return fields[0]
    return _typed_fields(r.event)


def _decode(states: list[bytes]) -> list[list[Any]] | None:
    """Stored events (msgpack of [schema_version, event_id, run_id, causation_id,
    command_id, timestamp, payload]) to their fields in one `unpackb` of an array of
    them (the envelope's fields do not change with an event's schema version). Text
    stays UTF-8 bytes (map keys too): decoding every payload's text was a tenth of a
    rebuild, and the view reads little of it. Datetimes stay their stored ISO text, as
    bytes (the envelope's time is all this view reads of them), and other extension
    values (UUIDs, sets, ...) become None: the view reads none of them, and building
    them would cost more than the rest.

    None when a map has tuple keys (`unpackb`'s TypeError): the caller then decodes
    event by event, and those events go typed.
    """

    def ext(code: int, data: bytes) -> Any:
        return data if code == _DATETIME_EXT else None

    data = b"".join([_ARRAY32, len(states).to_bytes(4, "big"), *states])
    try:
        return msgpack.unpackb(data, ext_hook=ext, raw=True, strict_map_key=False)  # type: ignore[no-any-return]
    except TypeError:  # a map with tuple keys
        return None


_DATETIME_EXT = 2  # events.codec's extension code for datetimes
_ARRAY32 = b"\xdd"  # msgpack: an array of up to 2**32 - 1 items, its length in 4 bytes


def _utc_text(iso: bytes) -> bytes:
    """`timestamp_text` of a stored `datetime.isoformat()` text, as bytes (UTC with
    microseconds, 32 characters, is already that text: the caller checks)."""
    t = datetime.fromisoformat(iso.decode())
    return timestamp_text(t if t.tzinfo else t.replace(tzinfo=timezone.utc)).encode()
