"""What the routes take and give, as pydantic models (they make the OpenAPI document), and
an event as JSON: one element of `GET /v1/runs/{id}/events`, and the `data:` of an SSE frame."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json
from starlette.responses import JSONResponse

from actors.runtime.console import event_json
from events.runs import Budget
from events.store import Recorded
from projections.audit_query import LlmCall, Usage

# A run's or a session's id in a path: no `/`, no leading dot, at most 128 characters.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
# An object's id or name in a path (names have spaces): no `/`, `\`, control characters or
# leading dot, at most 200 characters.
REF_PATTERN = r"^[^./\\\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]{0,199}$"


class ErrorOut(BaseModel):
    detail: str = Field(description="one line saying what was wrong")


class EventOut(BaseModel):
    position: int = Field(description="the event's global position in the log (the SSE `id:`)")
    stream_id: str
    version: int
    type: str
    run_id: str
    timestamp: datetime
    event_id: str
    causation_id: str | None
    command_id: str | None
    data: dict[str, Any] = Field(description="the event's payload (its fields beyond the envelope)")


class EventsPage(BaseModel):
    events: list[EventOut]
    last_position: int = Field(description="pass it as `after` to read on; `after` itself when there was nothing")


class SubmitIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str | None = Field(None, description="the run's kind (a registered RunKind's name); the default kind when left out")
    agent: str | None = Field(
        None, json_schema_extra={"deprecated": True},  # not pydantic's deprecated=: it warns on every read
        description="deprecated, the old name of `kind` (taken until 0.2.0, answered with a `Deprecation` header); "
        "giving both is a 400",
    )  # fmt: skip
    goal: str = Field(min_length=1, description="the goal, question, workflow, roadmap goal or content pack")
    params: dict[str, Any] = Field(default_factory=dict, description="the kind's options, as `Client.submit` takes them")
    budget: Budget | None = None


class Submitted(BaseModel):
    run_id: str
    kind: str
    status: str
    forked_from: str | None = None


class RunSummary(BaseModel):
    run_id: str
    status: str
    goal: str
    kind: str
    forked_from: str | None
    submitted_at: datetime
    ended_at: datetime | None
    waiting_for: str | None = Field(None, description="a waiting run: the signal it waits for, or \"sleep\"")
    wake_at: datetime | None = Field(None, description="a run waiting on a durable timer: when it is due")


class RunsPage(BaseModel):
    runs: list[RunSummary]
    total: int


class RunDetail(BaseModel):
    run_id: str
    status: str
    goal: str
    kind: str
    params: dict[str, Any]
    budget: Budget
    lead_stream: str | None
    result: str | None
    error: dict[str, Any] | None
    forked_from: str | None
    requested_by: str | None = Field(description="the principal that submitted it over HTTP, if one did")
    submitted_at: datetime | None
    ended_at: datetime | None
    waiting_for: str | None = Field(None, description="a waiting run: the signal it waits for, or \"sleep\"")
    wake_at: datetime | None = Field(None, description="a run waiting on a durable timer: when it is due")


class CancelIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=500, description="recorded with the cancellation")


class RunOutcome(BaseModel):
    run_id: str
    status: str
    result: str | None
    error: dict[str, Any] | None


class ForkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: int = Field(description="the global position to fork at (a simulation: a cycle; a relay: a builder turn)")
    model: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)


class DivergenceOut(BaseModel):
    stream_id: str
    version: int
    reason: str
    description: str


class ReplayOut(BaseModel):
    run_id: str
    ok: bool
    events: int
    streams: list[str]
    llm_calls: int
    tool_calls: int
    original_s: float
    replay_s: float
    divergence: DivergenceOut | None
    notes: list[str]


class LlmLog(BaseModel):
    run_id: str
    calls: list[LlmCall] = Field(description="every LLM call: prompt, model, response, tokens, latency (the audit view's)")
    usage: Usage | None = Field(description="the run's totals")
    by_actor: list[Usage]


class OpenCall(BaseModel):
    stream_id: str
    call_index: int
    position: int = Field(description="the call's LlmRequested in the log")
    tokens: int | None = Field(description="tokens streamed so far; null when no progress note is seen (another machine, not streamed)")
    elapsed_s: float = Field(description="seconds since the call was asked (the provider's count when its note is seen)")


class OpenCalls(BaseModel):
    run_id: str
    calls: list[OpenCall] = Field(description="the run's LLM calls asked and not yet answered, in log order")


class StateOut(BaseModel):
    stream: str
    version: int
    state: dict[str, Any]


class EventBrief(BaseModel):
    stream_id: str
    version: int
    type: str
    data: dict[str, Any]


class DiffOut(BaseModel):
    a: str
    b: str
    shared: int
    first_a: EventBrief | None
    first_b: EventBrief | None
    end_a: str
    end_b: str
    lines: list[str]


class Check(BaseModel):
    ok: bool
    detail: str


class AuthInfo(BaseModel):
    enabled: bool
    tokens: int
    detail: str


class HealthOut(BaseModel):
    status: str = Field(description="ok, or degraded when the store or the LLM endpoint does not answer")
    auth: AuthInfo
    store: Check
    ray: Check
    llm: Check


# -- JSON -------------------------------------------------------------------------------------


def json_bytes(value: Any) -> bytes:
    """JSON the way pydantic writes it: datetimes ISO-8601, NaN and infinities as null,
    bytes as base64, anything else by its str."""
    return to_json(value, inf_nan_mode="null", bytes_mode="base64", fallback=str)


class JsonBytes(JSONResponse):
    """A JSON response rendered by pydantic-core (the route's model documents it)."""

    def render(self, content: Any) -> bytes:
        return content if isinstance(content, bytes) else json_bytes(content)


def event_dict(rec: Recorded) -> dict[str, Any]:
    """The one JSON shape of an event (`chorus events --json` prints the same)."""
    return event_json(rec)


def sse_frame(rec: Recorded) -> bytes:
    """One Server-Sent Event: `id:` the global position, `event:` the type, `data:` the JSON."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (rec.position, rec.event.type_name.encode(), json_bytes(event_dict(rec)))
