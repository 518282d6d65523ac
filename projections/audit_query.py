"""Reading the audit trail: events by run, actor, type and time; the JSONL exports
(seed 002's append-only audit log and `llm_calls.jsonl`); token and cost totals.

The views are written by `projections.audit.AuditProjection`; see that module for the
tables. Every query pages by position in short read transactions, so an export of a long
trail neither holds a transaction open nor loads the trail into memory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from events.store import EventStore
from projections.columns import _timestamp
from projections.files import write_atomically
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
        from projections.audit import AuditProjection
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
