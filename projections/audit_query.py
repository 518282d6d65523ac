"""Reading the audit trail: events by run, actor, type and time; the JSONL exports
(seed 002's append-only audit log and `llm_calls.jsonl`); token and cost totals.

The views are written by `projections.audit_index.AuditProjection`, an index over the log (see
that module for the tables): a query finds in them which streams and positions hold what
it asks for, then reads those events from the log itself. Every query pages by position
in short read transactions, so an export of a long trail neither holds a transaction
open nor loads the trail into memory. The trail shows the events the view has indexed
(`AuditTrail.open` catches it up first).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import to_json

from events.base import Event
from events.store import EventStore
from projections.audit_index import AuditProjection
from projections.columns import clean, timestamp_text
from projections.files import write_atomically
from projections.log_reader import read_positions, read_stored
from projections.projection import StoredRecord
from projections.runner import caught_up
from projections.views import ViewStore


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


_EVENT_FIELDS = (
    "position", "event_id", "run_id", "stream_id", "version", "type", "type_version", "timestamp",
    "causation_id", "command_id",
)
_JSON_REQUEST_FIELDS = ("messages", "params", "response_schema")
# An `llm_calls.jsonl` line: these fields of the LlmCall (`content` as "response"), then
# the request and result times as the view holds them.
_CALL_RECORD = (
    "position", "run_id", "stream_id", "call_index", "status", "model", "response_model", "seed",
    "temperature", "params", "messages", "response_schema", "content", "parsed", "prompt_tokens",
    "completion_tokens", "latency_s", "cost_usd", "error", "request_hash",
)
_PAGE = 1000
_SQL_STREAMS = 500  # more streams than this are filtered in Python, not in the log's SQL


class AuditTrail:
    """Queries and exports over the audit views and the log they index. Run the
    projection first (a runner's `run_once`), or open with `AuditTrail.open(store)`,
    which catches it up.
    """

    def __init__(self, store: EventStore, views: ViewStore | None = None) -> None:
        self.store = store
        self.views = views if views is not None else ViewStore.for_store(store)

    @classmethod
    def open(cls, store: EventStore, *, catch_up: bool = True) -> AuditTrail:
        return cls(store, caught_up(store, AuditProjection(), catch_up=catch_up))

    def knows_run(self, run_id: str) -> bool:
        """Whether the trail holds any event of `run_id`."""
        return bool(self.views.query("SELECT 1 AS found FROM audit_streams WHERE run_id = ? LIMIT 1", (run_id,)))

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
    ) -> Iterator[tuple[Any, ...]]:
        """`event_row`s in log order: the spans of the view say which streams and which
        stretch of the log to read; the events there are filtered on what they hold."""
        wanted: tuple[str, ...] = ()
        if types is not None:
            wanted = (types,) if isinstance(types, str) else tuple(types)
            if not wanted:
                return
        begin = None if since is None else timestamp_text(since)
        end = None if until is None else timestamp_text(until)
        streams: set[str] | None = None
        position, last = after_position, self.views.position("audit")
        if (run_id, stream_id, since, until) != (None, None, None, None):
            spans = self._spans(run_id, stream_id, begin, end)
            if not spans:
                return
            streams = {s["stream_id"] for s in spans}
            position = max(position, min(s["first_position"] for s in spans) - 1)
            last = max(s["last_position"] for s in spans)
        in_sql = sorted(streams) if streams and len(streams) <= _SQL_STREAMS else ()
        if any("\ufffd" in s for s in in_sql):  # a cleaned id: the log holds another text
            in_sql = ()
        left = limit
        while left is None or left > 0:
            page = read_stored(self.store, position, last, _PAGE, wanted, in_sql)
            for r in page:
                row = event_row(r.position, r.event)
                if (
                    (streams is not None and row[3] not in streams)
                    or (run_id is not None and row[2] != run_id)
                    or (begin is not None and row[7] < begin)
                    or (end is not None and row[7] >= end)
                ):
                    continue
                yield row
                if left is not None:
                    left -= 1
                    if left == 0:
                        return
            if len(page) < _PAGE:
                return
            position = page[-1].position

    def _spans(
        self, run_id: str | None, stream_id: str | None, begin: str | None, end: str | None
    ) -> list[dict[str, Any]]:
        where, params = [], []
        for clause, value in (
            ("run_id = ?", run_id), ("stream_id = ?", stream_id), ("last_at >= ?", begin), ("first_at < ?", end),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        return self.views.query(
            "SELECT stream_id, first_position, last_position FROM audit_streams WHERE " + " AND ".join(where),
            params,
        )

    def export_jsonl(self, path: str | os.PathLike[str], run_id: str | None = None) -> int:
        """Write the trail (one run's, or all) as JSON lines, atomically. Returns the count."""

        def lines() -> Iterator[str]:
            for row in self._event_rows(run_id, None, None, None, None, 0, None):
                head = json.dumps(dict(zip(_EVENT_FIELDS, row)), ensure_ascii=False, separators=(",", ":"))
                yield f'{head[:-1]},"payload":{row[10]}}}\n'

        return write_atomically(path, lines())

    # -- LLM calls -------------------------------------------------------------------------

    def llm_calls(
        self, *, run_id: str | None = None, stream_id: str | None = None, limit: int | None = None
    ) -> list[LlmCall]:
        return [call for call, _ in self._calls(run_id, stream_id, limit)]

    def _calls(
        self, run_id: str | None, stream_id: str | None, limit: int | None
    ) -> Iterator[tuple[LlmCall, dict[str, Any]]]:
        """Each call of the view with its prompt and response read from the log (the
        request and result events at the row's positions), and the row itself."""
        where, params = [], []
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        if stream_id is not None:
            where.append("stream_id = ?")
            params.append(stream_id)
        for rows in self._pages("llm_calls", "*", where, params, limit):
            positions = {r["position"] for r in rows} | {r["result_position"] for r in rows}
            stored = read_positions(self.store, positions - {None})
            for row in rows:
                yield _llm_call(row, stored), row

    def _pages(
        self, table: str, columns: str, where: list[str], params: list[Any], limit: int | None
    ) -> Iterator[list[dict[str, Any]]]:
        """Pages of rows in position order, each in a short read transaction (keyset paging)."""
        position, left = 0, limit
        while left is None or left > 0:
            page = _PAGE if left is None else min(_PAGE, left)
            clauses = " AND ".join(["position > ?", *where])
            rows = self.views.query(
                f"SELECT {columns} FROM {table} WHERE {clauses} ORDER BY position LIMIT {page}",
                [position, *params],
            )
            if rows:
                yield rows
            if len(rows) < page:
                return
            position = rows[-1]["position"]
            if left is not None:
                left -= len(rows)

    def export_llm_calls(self, path: str | os.PathLike[str], run_id: str | None = None) -> int:
        """Write the LLM call log (seed 002's `llm_calls.jsonl`) atomically. Returns the count."""

        def lines() -> Iterator[str]:
            for call, row in self._calls(run_id, None, None):
                record = {("response" if k == "content" else k): getattr(call, k) for k in _CALL_RECORD}
                record.update(requested_at=row["requested_at"], completed_at=row["completed_at"])
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


def event_row(position: int, e: Event) -> tuple[Any, ...]:
    """An event as the trail shows it: position, event_id, run_id, stream_id, version,
    type, type_version, timestamp (`timestamp_text` text), causation_id, command_id, and
    the payload as JSON (pydantic's, NaN and infinities as null; NUL in the plain text
    fields becomes U+FFFD, as in the views)."""
    return (
        position, str(e.event_id), clean(e.run_id), clean(e.stream_id), e.version, e.type_name,
        type(e).schema_version, timestamp_text(e.timestamp), clean(e.causation_id), clean(e.command_id),
        _json(e.payload()),
    )


def _audit_event(row: tuple[Any, ...]) -> AuditEvent:
    fields = dict(zip(_EVENT_FIELDS, row))
    fields["timestamp"] = datetime.fromisoformat(fields["timestamp"])
    return AuditEvent(**fields, payload=json.loads(row[10]))


def _llm_call(row: dict[str, Any], stored: dict[int, StoredRecord]) -> LlmCall:
    """A row of `llm_calls` with the prompt from its request and the response (or the
    error) from its result, read from the log."""
    values = dict(row)
    request = stored.get(row["position"])
    result = stored.get(row["result_position"]) if row["result_position"] is not None else None
    asked = request.event.payload() if request is not None and request.type_name == "LlmRequested" else {}
    answered = result.event.payload() if result is not None else {}
    for field in _JSON_REQUEST_FIELDS:
        values[field] = _plain(asked.get(field))
    values["content"] = answered.get("content")
    values["parsed"] = _plain(answered.get("parsed"))
    values["error"] = _plain(answered.get("error"))
    for column in ("requested_at", "completed_at"):
        if values[column] is not None:
            values[column] = datetime.fromisoformat(values[column])
    for column in ("position", "call_index", "prompt_tokens", "completion_tokens"):
        values[column] = int(values[column])
    return LlmCall(**values)


def _json(value: Any) -> str:
    """JSON as pydantic writes it, NaN and infinities as null."""
    return to_json(value, inf_nan_mode="null").decode()


def _plain(value: Any) -> Any:
    """A payload value as JSON gives it back (models as objects, UUIDs and times as text)."""
    return None if value is None else json.loads(_json(value))
