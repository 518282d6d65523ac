"""The one door to models: every call comes back as the events that record it.

The gateway performs the call and hands back `LlmRequested` + `LlmCompleted` (or `LlmFailed`)
with payload only; the actor shell stamps the envelope, appends them, and only then uses the
result (rule 2). A `ReplayDivergence` is not a failed call but a broken replay: it propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.runtime.llm.providers import LlmProvider
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from events.errors import ErrorInfo


@dataclass(frozen=True)
class LlmOutcome:
    events: list[Event] = field(default_factory=list)
    result: LlmResult | None = None
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def requested_event(request: LlmRequest, call_index: int) -> LlmRequested:
    """The fact "we asked this": for shells that append the request before calling out."""
    return LlmRequested(
        model=request.model,
        messages=list(request.messages),
        params=dict(request.params),
        response_schema=request.response_schema,
        request_hash=request.hash(),
        call_index=call_index,
    )


class LlmGateway:
    def __init__(self, provider: LlmProvider) -> None:
        self.provider = provider

    def call(self, request: LlmRequest, call_index: int) -> LlmOutcome:
        requested = requested_event(request, call_index)
        try:
            result = self.provider.complete(request)
        except LlmError as e:
            failed = LlmFailed(request_hash=requested.request_hash, call_index=call_index, error=e.error)
            return LlmOutcome(events=[requested, failed], error=e.error)
        completed = LlmCompleted(
            request_hash=requested.request_hash,
            call_index=call_index,
            content=result.content,
            parsed=result.parsed,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            latency_s=result.latency_s,
            model=result.model,
            cost_usd=result.cost_usd,
            retries=list(result.retries),
        )
        return LlmOutcome(events=[requested, completed], result=result)
