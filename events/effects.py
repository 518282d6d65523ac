"""Recorded non-deterministic inputs: LLM calls and tool calls (rule 2 of the design).

Each is two facts: the request (recorded with a hash so replay can match it) and the
result. Replay serves the result for a matching request and never calls out.
"""

from __future__ import annotations

from typing import Any

from events.base import Event
from events.codec import register_payload_codec
from events.errors import ErrorInfo
from events.registry import event_type, upcaster
from events.requests import RequestDeltas


@event_type("LlmRequested")
class LlmRequested(Event):
    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any] = {}
    response_schema: dict[str, Any] | None = None
    request_hash: str
    call_index: int  # 1-based count of LLM calls in this stream


# Stored as a delta against the stream's previous request (events/requests.py).
register_payload_codec("LlmRequested", RequestDeltas)


@event_type("LlmCompleted", version=2)  # v2: the retries before the answer are recorded
class LlmCompleted(Event):
    request_hash: str
    call_index: int
    content: str
    parsed: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    cost_usd: float | None = None
    # The real failures (refused connection, 5xx, 429, a stream broken off) retried before
    # this answer, in order: the call took len(retries) + 1 attempts.
    retries: list[ErrorInfo] = []


@upcaster("LlmCompleted", from_version=1)
def _llmcompleted_v1(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "retries": []}  # v1 did not record its retries


@event_type("LlmFailed")
class LlmFailed(Event):
    request_hash: str
    call_index: int
    error: ErrorInfo


@event_type("ToolCalled")
class ToolCalled(Event):
    tool: str
    args: dict[str, Any]
    call_index: int


@event_type("ToolReturned")
class ToolReturned(Event):
    tool: str
    call_index: int
    ok: bool
    output: str
    latency_s: float = 0.0
    error: ErrorInfo | None = None
