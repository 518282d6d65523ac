"""The audit trail: every event of every run, the LLM call log, and token and cost totals.

Seed 002 keeps an append-only JSONL audit log and `llm_calls.jsonl` (full prompt, model,
seed, temperature, response of every call) plus a token/cost summary. Here they are
views of the log, rebuilt at will, and the JSONL files are exports of those views.

Tables (portable SQL; timestamps are UTC ISO-8601 text with microseconds, so text order
is time order; `payload` is the payload as pydantic writes JSON (field order), the other
JSON columns are compact JSON with sorted keys; NUL in plain text columns becomes U+FFFD,
because PostgreSQL text cannot hold it, while JSON columns keep it escaped):

    audit_events  position PK, event_id, run_id, stream_id, version, type, type_version,
                  timestamp, causation_id, command_id, payload
    llm_calls     position PK (of the request; of the result for a result with no request),
                  run_id, stream_id, call_index, request_hash, status (pending | completed |
                  failed), model, response_model, messages, params, seed, temperature,
                  response_schema, content, parsed, prompt_tokens, completion_tokens,
                  latency_s, cost_usd, error, requested_at, completed_at, result_position
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import msgpack
from pydantic_core import to_json, to_jsonable_python

from events.base import Event
from events.codec import _ext_hook
from events.registry import resolve
from events.store import EventStore, Recorded
from projections.columns import _clean, _json, _timestamp
from projections.files import write_atomically
from projections.projection import Projection, StoredRecord, register_projection
from projections.views import ViewCursor, ViewStore

_LLM_TYPES = frozenset({"LlmRequested", "LlmCompleted", "LlmFailed"})


@register_projection
class AuditProjection(Projection):
    name = "audit"
    schema_version = 1
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
        calls: dict[int, dict[str, Any]] = {}
        pending: dict[tuple[Any, ...], list[int]] = {}
        rows = []
        for row, payload in _event_rows(records):
            rows.append(row)
            if row[5] in _LLM_TYPES:
                self._llm(c, row, payload, calls, pending)
        c.insert_rows("audit_events", _EVENT_COLUMN_NAMES, rows)
        c.insert_rows("llm_calls", _CALL_COLUMNS, [tuple(call[k] for k in _CALL_COLUMNS) for call in calls.values()])

    def _llm(
        self,
        c: ViewCursor,
        row: tuple[Any, ...],
        payload: dict[str, Any],
        calls: dict[int, dict[str, Any]],
        pending: dict[tuple[Any, ...], list[int]],
    ) -> None:
        position, stream_id, type_name = row[0], row[3], row[5]
        key = (stream_id, payload["call_index"], _clean(payload["request_hash"]))
        if type_name == "LlmRequested":
            calls[position] = _new_call(row, payload, _request_fields(payload, row[7]))
            pending.setdefault(key, []).append(position)
            return
        result = _result_fields(position, type_name, payload, row[7])
        # A result pairs with the latest pending request of its stream, call and hash.
        waiting = pending.get(key)
        if waiting:
            calls[waiting.pop()].update(result)
            return
        found = c.execute(
            "SELECT position FROM llm_calls WHERE stream_id = ? AND call_index = ? "
            "AND request_hash = ? AND status = 'pending' ORDER BY position DESC LIMIT 1",
            key,
        ).fetchone()
        if found is None:  # a result with no request (a log cut short): keep it anyway
            calls[position] = _new_call(row, payload, result)
            return
        columns = ", ".join(f"{k} = ?" for k in result)
        c.execute(
            f"UPDATE llm_calls SET {columns} WHERE position = ?", (*result.values(), found["position"])
        )


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


def _new_call(row: tuple[Any, ...], payload: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = dict.fromkeys(_CALL_COLUMNS)
    call.update(
        position=row[0], run_id=row[2], stream_id=row[3],
        call_index=payload["call_index"], request_hash=_clean(payload["request_hash"]),
        status="pending", prompt_tokens=0, completion_tokens=0,
    )
    call.update(fields)
    return call


# The LLM fields come from the payload dict (python-mode values, as `Event.payload()`
# gives them and the log stores them), so typed and stored records give the same rows.


def _request_fields(p: dict[str, Any], at: str) -> dict[str, Any]:
    params = dict(p.get("params") or {})
    seed, temperature = params.get("seed"), params.get("temperature")
    schema = p.get("response_schema")
    return {
        "model": _clean(p["model"]),
        "messages": _json(p["messages"]),
        "params": _json(params),
        "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        "temperature": float(temperature) if _is_number(temperature) else None,
        "response_schema": None if schema is None else _json(schema),
        "requested_at": at,
    }


def _result_fields(position: int, type_name: str, p: dict[str, Any], at: str) -> dict[str, Any]:
    if type_name == "LlmCompleted":
        parsed = p.get("parsed")
        return {
            "status": "completed",
            "response_model": _clean(p.get("model", "")) or None,
            "content": _clean(p["content"]),
            "parsed": None if parsed is None else _json(parsed),
            "prompt_tokens": p.get("prompt_tokens", 0),
            "completion_tokens": p.get("completion_tokens", 0),
            "latency_s": p.get("latency_s", 0.0),
            "cost_usd": p.get("cost_usd"),
            "completed_at": at,
            "result_position": position,
        }
    return {  # LlmFailed
        "status": "failed",
        "error": _json(to_jsonable_python(p["error"])),  # as model_dump(mode="json") gives it
        "completed_at": at,
        "result_position": position,
    }


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- reading the views ---------------------------------------------------------------------


@dataclass(frozen=True)
class AuditEvent:
    position: int
    event_id: str
    run_id: str
    stream_id: str
    version: int
    type: str
    type_version: int
    timestamp: datetime
    causation_id: str | None
    command_id: str | None
    payload: dict[str, Any]


@dataclass(frozen=True)
class LlmCall:
    position: int
    run_id: str
    stream_id: str
    call_index: int
    request_hash: str
    status: str  # pending | completed | failed
    model: str | None  # requested
    response_model: str | None  # what the endpoint said it used
    messages: list[dict[str, Any]] | None  # the prompt
    params: dict[str, Any] | None
    seed: int | None
    temperature: float | None
    response_schema: dict[str, Any] | None
    content: str | None  # the response
    parsed: dict[str, Any] | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float | None
    cost_usd: float | None
    error: dict[str, Any] | None
    requested_at: datetime | None
    completed_at: datetime | None
    result_position: int | None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Usage:
    """LLM usage of one run or one actor (stream)."""

    key: str  # the run id or the stream id
    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # sum over calls with a known cost; None when none had one
    priced_calls: int  # how many calls the cost covers
    latency_s: float

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


_EVENT_COLUMNS = (
    "position, event_id, run_id, stream_id, version, type, type_version, timestamp, "
    "causation_id, command_id, payload"
)
_JSON_CALL_COLUMNS = ("messages", "params", "response_schema", "parsed", "error")
_PAGE = 1000


class AuditTrail:
    """Queries and exports over the audit views. Run the projection first (a runner's
    `run_once`), or open with `AuditTrail.open(store)`, which catches it up.
    """

    def __init__(self, views: ViewStore) -> None:
        self.views = views

    @classmethod
    def open(cls, store: EventStore, *, catch_up: bool = True) -> AuditTrail:
        from projections.runner import ProjectionRunner

        runner = ProjectionRunner(store, [AuditProjection()])
        if catch_up:
            runner.run_once()
        return cls(runner.views)

    # -- events ------------------------------------------------------------------------------

    def events(
        self,
        *,
        run_id: str | None = None,
        stream_id: str | None = None,
        types: str | Iterable[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_position: int = 0,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """Events in log order, filtered by run, actor (stream), type and time
        (`since` inclusive, `until` exclusive; naive datetimes are taken as UTC)."""
        return list(
            self.iter_events(
                run_id=run_id, stream_id=stream_id, types=types, since=since, until=until,
                after_position=after_position, limit=limit,
            )
        )

    def iter_events(
        self,
        *,
        run_id: str | None = None,
        stream_id: str | None = None,
        types: str | Iterable[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_position: int = 0,
        limit: int | None = None,
    ) -> Iterator[AuditEvent]:
        for row in self._event_rows(run_id, stream_id, types, since, until, after_position, limit):
            yield _audit_event(row)

    def _event_rows(
        self,
        run_id: str | None,
        stream_id: str | None,
        types: str | Iterable[str] | None,
        since: datetime | None,
        until: datetime | None,
        after_position: int,
        limit: int | None,
    ) -> Iterator[dict[str, Any]]:
        where, params = [], []
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if stream_id is not None:
            where.append("stream_id = ?")
            params.append(stream_id)
        if types is not None:
            wanted = [types] if isinstance(types, str) else list(types)
            if not wanted:
                return
            where.append(f"type IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        if since is not None:
            where.append("timestamp >= ?")
            params.append(_timestamp(since))
        if until is not None:
            where.append("timestamp < ?")
            params.append(_timestamp(until))
        yield from self._pages("audit_events", _EVENT_COLUMNS, where, params, after_position, limit)

    def _pages(
        self,
        table: str,
        columns: str,
        where: list[str],
        params: list[Any],
        after_position: int,
        limit: int | None,
    ) -> Iterator[dict[str, Any]]:
        """Rows in position order, a page per short read transaction (keyset paging)."""
        position, left = after_position, limit
        while left is None or left > 0:
            page = _PAGE if left is None else min(_PAGE, left)
            clauses = " AND ".join(["position > ?", *where])
            rows = self.views.query(
                f"SELECT {columns} FROM {table} WHERE {clauses} ORDER BY position LIMIT {page}",
                [position, *params],
            )
            yield from rows
            if len(rows) < page:
                return
            position = rows[-1]["position"]
            if left is not None:
                left -= len(rows)

    def export_jsonl(self, path: str | os.PathLike[str], run_id: str | None = None) -> int:
        """Write the trail (one run's, or all) as JSON lines, atomically. Returns the count."""

        def lines() -> Iterator[str]:
            for row in self._event_rows(run_id, None, None, None, None, 0, None):
                payload = row.pop("payload")
                head = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
                yield f'{head[:-1]},"payload":{payload}}}\n'

        return write_atomically(path, lines())

    # -- LLM calls -------------------------------------------------------------------------

    def llm_calls(
        self, *, run_id: str | None = None, stream_id: str | None = None, limit: int | None = None
    ) -> list[LlmCall]:
        return [_llm_call(row) for row in self._call_rows(run_id, stream_id, limit)]

    def _call_rows(
        self, run_id: str | None, stream_id: str | None, limit: int | None
    ) -> Iterator[dict[str, Any]]:
        where, params = [], []
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if stream_id is not None:
            where.append("stream_id = ?")
            params.append(stream_id)
        yield from self._pages("llm_calls", "*", where, params, 0, limit)

    def export_llm_calls(self, path: str | os.PathLike[str], run_id: str | None = None) -> int:
        """Write the LLM call log (seed 002's `llm_calls.jsonl`) atomically. Returns the count."""

        def lines() -> Iterator[str]:
            for row in self._call_rows(run_id, None, None):
                call = _llm_call(row)
                record = {
                    "position": call.position,
                    "run_id": call.run_id,
                    "stream_id": call.stream_id,
                    "call_index": call.call_index,
                    "status": call.status,
                    "model": call.model,
                    "response_model": call.response_model,
                    "seed": call.seed,
                    "temperature": call.temperature,
                    "params": call.params,
                    "messages": call.messages,
                    "response_schema": call.response_schema,
                    "response": call.content,
                    "parsed": call.parsed,
                    "prompt_tokens": call.prompt_tokens,
                    "completion_tokens": call.completion_tokens,
                    "latency_s": call.latency_s,
                    "cost_usd": call.cost_usd,
                    "error": call.error,
                    "request_hash": call.request_hash,
                    "requested_at": row["requested_at"],
                    "completed_at": row["completed_at"],
                }
                yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"

        return write_atomically(path, lines())

    # -- usage -----------------------------------------------------------------------------

    def usage_by_run(self, run_id: str | None = None) -> list[Usage]:
        """Token and cost totals per run (one run, or every run), by run id."""
        return self._usage("run_id", run_id)

    def usage_by_actor(self, run_id: str | None = None) -> list[Usage]:
        """Token and cost totals per actor stream (of one run, or over all runs)."""
        return self._usage("stream_id", run_id)

    def _usage(self, key: str, run_id: str | None) -> list[Usage]:
        where = "" if run_id is None else "WHERE run_id = ?"
        rows = self.views.query(
            f"SELECT {key} AS key, COUNT(*) AS calls, "
            "SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed, "
            "SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens, "
            "SUM(cost_usd) AS cost_usd, COUNT(cost_usd) AS priced_calls, "
            "SUM(latency_s) AS latency_s "
            f"FROM llm_calls {where} GROUP BY {key} ORDER BY {key}",
            () if run_id is None else (run_id,),
        )
        return [
            Usage(
                key=r["key"],
                calls=int(r["calls"]),
                failed=int(r["failed"] or 0),
                prompt_tokens=int(r["prompt_tokens"] or 0),
                completion_tokens=int(r["completion_tokens"] or 0),
                cost_usd=None if r["cost_usd"] is None else float(r["cost_usd"]),
                priced_calls=int(r["priced_calls"]),
                latency_s=float(r["latency_s"] or 0.0),
            )
            for r in rows
        ]


# -- encoding --------------------------------------------------------------------------------




def _event_rows(
    records: Sequence[Recorded | StoredRecord],
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Each event's audit_events row, and its payload (python-mode values, except that
    UUIDs may come as their text: the same JSON either way).

    A stored record is read from its msgpack without pydantic (`_RowDecoder`), unless
    it was written at an older schema version (then it is upcast and validated, as a
    read would). The payload column is `pydantic_core.to_json` of the payload, in field
    order: the same text as `model_dump_json` of the payload fields, from either kind
    of record. This loop is most of a rebuild's time, hence the inlining.
    """
    decode = _ROWS.decoder.decode
    versions: dict[str, int] = {}
    for r in records:
        if r.__class__ is StoredRecord:
            fields = decode(r.state)  # type: ignore[union-attr]
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
        _clean(e.command_id), _payload_json(payload),
    )
    return row, payload


class _RowDecoder:
    """msgpack of a stored event to its fields, with the envelope's event id and time
    left as text: formatting a UUID and a datetime back to text costs more than the
    rest of the row. Payload UUIDs come as text too (their JSON is that text); a
    payload that holds datetimes (their JSON differs from their stored text) or tuple
    keys is decoded by `events.codec.unpackb` instead: `decode` returns None then.
    Not thread-safe: one per thread (see `_ROWS`).
    """

    def __init__(self) -> None:
        self.datetimes = 0

    def decode(self, data: bytes) -> list[Any] | None:
        self.datetimes = 0
        try:
            fields = msgpack.unpackb(data, ext_hook=self._ext, raw=False, strict_map_key=False)
        except TypeError:  # a map with tuple keys
            return None
        return fields if self.datetimes == 1 else None

    def _ext(self, code: int, data: bytes) -> Any:
        if code == _UUID_EXT:
            h = data.hex()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        if code == _DATETIME_EXT:
            self.datetimes += 1
            return data.decode()
        return _ext_hook(code, data)


class _Rows(threading.local):
    def __init__(self) -> None:
        self.decoder = _RowDecoder()

    def decode(self, data: bytes) -> list[Any] | None:
        return self.decoder.decode(data)


_ROWS = _Rows()
_UUID_EXT, _DATETIME_EXT = 1, 2  # events.codec's extension codes


def _utc_text(iso: str) -> str:
    """`_timestamp` of a stored `datetime.isoformat()` text (UTC with microseconds,
    32 characters, is already that text: the caller checks)."""
    t = datetime.fromisoformat(iso)
    return _timestamp(t if t.tzinfo else t.replace(tzinfo=timezone.utc))


def _payload_json(payload: dict[str, Any]) -> str:
    return to_json(payload, inf_nan_mode="null").decode()  # pydantic's default for models


def _audit_event(row: dict[str, Any]) -> AuditEvent:
    return AuditEvent(
        position=int(row["position"]),
        event_id=row["event_id"],
        run_id=row["run_id"],
        stream_id=row["stream_id"],
        version=int(row["version"]),
        type=row["type"],
        type_version=int(row["type_version"]),
        timestamp=datetime.fromisoformat(row["timestamp"]),
        causation_id=row["causation_id"],
        command_id=row["command_id"],
        payload=json.loads(row["payload"]),
    )


def _llm_call(row: dict[str, Any]) -> LlmCall:
    values = dict(row)
    for column in _JSON_CALL_COLUMNS:
        if values[column] is not None:
            values[column] = json.loads(values[column])
    for column in ("requested_at", "completed_at"):
        if values[column] is not None:
            values[column] = datetime.fromisoformat(values[column])
    for column in ("position", "call_index", "prompt_tokens", "completion_tokens"):
        values[column] = int(values[column])
    return LlmCall(**values)
