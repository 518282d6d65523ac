"""One budget for a whole run: every LLM call of the run draws on its ledger first.

A run's budget (`RunSubmitted.budget`: `max_llm_calls`, `max_tokens`) covers every model call
made for it, whichever actor or tool makes it on whichever node: the lead agent's steps, the
researcher's plan and report, a task workflow's atomic tasks, and the calls tools make inside
(`semantic_file_search`'s HyDE and keyword calls, `repository_search`'s map-reduce). Each call
is *reserved* before it is sent and *settled* with the tokens it actually used after; a call
the budget cannot cover is refused with `BudgetExhausted` (an `ErrorInfo` of type
`budget_exhausted` naming the limit) and never sent. Reservations are atomic, so parallel
map-reduce workers cannot overshoot together.

A call's tokens are not known before it is sent: the reservation holds an estimate (the
prompt's characters / 4, plus the request's `max_tokens` cap), and a call is refused when the
tokens spent plus those held by calls in flight plus its estimate would pass the limit.

The ledger is events, like everything else: it starts from the run's recorded calls
(`usage_of`, counted as the audit view counts them), so after a crash it goes on from the log.
This module is the pure part (no store, no Ray: pure cores may import it); a run's ledger in
the store, in-process or on Ray, is `actors.runtime.budget`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from actors.runtime.llm.types import LlmError, LlmRequest
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from events.errors import ErrorInfo
from events.runs import Budget

BUDGET_EXHAUSTED = "budget_exhausted"


class BudgetExhausted(LlmError):
    """A call the run's budget cannot cover; it was not sent. `error` names the limit."""

    def __init__(self, error: ErrorInfo) -> None:  # noqa: D107 - LlmError's reasons are the model's, not ours
        self.error = error
        Exception.__init__(self, error.line())

    def __reduce__(self) -> tuple[Any, ...]:  # crosses Ray's process boundaries intact
        return (BudgetExhausted, (self.error,))


@dataclass(frozen=True)
class Usage:
    calls: int = 0
    tokens: int = 0


def usage_of(events: Iterable[Event]) -> Usage:
    """LLM calls and tokens recorded in `events` (one run's), counted as the audit view
    counts them: a call per request, and per result that answers no recorded request."""
    calls = tokens = 0
    open_requests: dict[tuple[str, int], int] = {}
    for e in events:
        if isinstance(e, LlmRequested):
            calls += 1
            key = (e.stream_id, e.call_index)
            open_requests[key] = open_requests.get(key, 0) + 1
        elif isinstance(e, (LlmCompleted, LlmFailed)):
            key = (e.stream_id, e.call_index)
            if open_requests.get(key):
                open_requests[key] -= 1
            else:
                calls += 1
            if isinstance(e, LlmCompleted):
                tokens += e.prompt_tokens + e.completion_tokens
    return Usage(calls, tokens)


def estimate_tokens(request: LlmRequest) -> int:
    """What a call may use, before it is sent: its prompt (characters / 4) and its cap on
    the completion (`max_tokens`, if the request sets one)."""
    prompt = sum(len(str(m.get("content", ""))) for m in request.messages)
    cap = request.params.get("max_tokens")
    return prompt // 4 + (int(cap) if isinstance(cap, (int, float)) and cap > 0 else 0)


def limited(budget: Budget | None) -> bool:
    return budget is not None and (budget.max_llm_calls is not None or budget.max_tokens is not None)


def exhausted(limit: str, message: str, **details: Any) -> ErrorInfo:
    return ErrorInfo(type=BUDGET_EXHAUSTED, reason=limit, message=message, details={"limit": limit, **details})


class Ledger:
    """A run's budget and what has been spent of it; thread-safe. Pure: no I/O."""

    def __init__(self, budget: Budget, spent: Usage = Usage()) -> None:
        self.budget = budget
        self.calls = spent.calls
        self.tokens = spent.tokens
        self.in_flight = 0
        self.held_tokens = 0
        self._lock = threading.Lock()

    def reserve(self, estimate: int = 0) -> int:
        """Hold one call (and `estimate` tokens) for a call about to be sent; returns the hold
        to settle. Raises `BudgetExhausted` (nothing held) when the budget cannot cover it."""
        b = self.budget
        with self._lock:
            if b.max_llm_calls is not None and self.calls + self.in_flight >= b.max_llm_calls:
                raise BudgetExhausted(
                    exhausted(
                        "llm_calls",
                        f"the run has made {self.calls + self.in_flight} LLM calls, its budget allows {b.max_llm_calls}",
                        allowed=b.max_llm_calls,
                    )
                )
            if b.max_tokens is not None and self.tokens + self.held_tokens + max(estimate, 1) > b.max_tokens:
                raise BudgetExhausted(
                    exhausted(
                        "tokens",
                        f"the run has used {self.tokens} tokens of its {b.max_tokens}; "
                        "the next call could take it past the budget",
                        allowed=b.max_tokens,
                    )
                )
            self.in_flight += 1
            self.held_tokens += estimate
            return estimate

    def settle(self, hold: int, usage: Usage) -> None:
        """A held call is over: `usage` is what it recorded (Usage() if it was never sent)."""
        with self._lock:
            self.in_flight -= 1
            self.held_tokens -= hold
            self.calls += usage.calls
            self.tokens += usage.tokens

    def spent(self) -> Usage:
        with self._lock:
            return Usage(self.calls, self.tokens)


def charged(ledger: Any, request: LlmRequest, call: Any) -> list[Event]:
    """`call()` (which records one model call and returns its events), drawn on `ledger`
    (None: unlimited). Raises `BudgetExhausted` before calling when the budget cannot
    cover it."""
    if ledger is None:
        return list(call())
    hold = ledger.reserve(estimate_tokens(request))
    used = Usage()
    try:
        events = list(call())
        used = usage_of(events)
        return events
    finally:
        ledger.settle(hold, used)
