"""A run's lifecycle: a goal submitted by a client, started, then completed or failed; a run
whose agent function waits (for a signal, or a durable timer) records that it waits and,
served again, starts again.

`Budget()` is finite: `DEFAULT_MAX_LLM_CALLS` LLM calls, so a runaway loop stops with a
`budget_exhausted` error instead of calling the model forever. Raise it
(`Budget(max_llm_calls=5000)`, `chorus run --max-llm-calls N`, `Client.submit(budget=...)`) or
lift it in Python (`Budget.unlimited()`). Logs written before the default was finite
recorded "unlimited" as `None` or by leaving the key out (`budget: {}`); RunSubmitted v1
payloads are upcast to v2 with every missing limit made an explicit None, so such a run
still reads back unlimited and replays as it ran.

A run names its kind (the `RunKind` that runs, reads and replays it) in `RunSubmitted.kind`.
Up to v2 the field was called `agent`; a v2 payload is upcast to v3 by renaming it, so every
old log loads and replays unchanged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type, upcaster

DEFAULT_MAX_LLM_CALLS = 500
LIMITS = ("max_llm_calls", "max_tokens", "max_wall_seconds")


class Budget(BaseModel):
    """Limits on one run; None means unlimited. By default, `DEFAULT_MAX_LLM_CALLS` LLM
    calls and no token or time limit."""

    model_config = ConfigDict(frozen=True)

    max_llm_calls: int | None = DEFAULT_MAX_LLM_CALLS
    max_tokens: int | None = None
    max_wall_seconds: float | None = None

    @classmethod
    def unlimited(cls) -> Budget:
        """No limit at all (what `Budget()` meant before its default was finite)."""
        return cls(max_llm_calls=None)


def explicit_budget(payload: dict[str, Any], key: str = "budget") -> dict[str, Any]:
    """An old payload's budget with every limit it left out made an explicit None: written
    when `Budget()` was unlimited, it keeps that meaning under today's finite default."""
    budget = payload.get(key)
    return {**payload, key: {**dict.fromkeys(LIMITS), **(budget if isinstance(budget, dict) else {})}}


@event_type("RunSubmitted", version=3)
class RunSubmitted(Event):
    goal: str
    kind: str = "react"  # the run's kind: the name of a registered RunKind
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    forked_from: str | None = None


@upcaster("RunSubmitted", from_version=1)
def _run_submitted_v1(payload: dict[str, Any]) -> dict[str, Any]:
    return explicit_budget(payload)


@upcaster("RunSubmitted", from_version=2)
def _run_submitted_v2(payload: dict[str, Any]) -> dict[str, Any]:
    return kind_named(payload)


def kind_named(payload: dict[str, Any]) -> dict[str, Any]:
    """A v1/v2 payload named the run's kind `agent`; v3 calls it `kind` (an `agent` is what
    a run of kind "function" runs, in its params). A payload that left it out keeps the
    default ("react")."""
    out = dict(payload)
    if "agent" in out:
        out["kind"] = out.pop("agent")
    return out


@event_type("RunStarted")
class RunStarted(Event):
    lead_stream: str


@event_type("RunWaiting")
class RunWaiting(Event):
    """The run's agent function is suspended: nothing serves it until a signal named
    `waiting_for` comes or, for a durable timer, until `until`."""

    waiting_for: str
    until: datetime | None = None


@event_type("RunCompleted")
class RunCompleted(Event):
    result: str
    llm_calls: int = 0
    tokens: int = 0


@event_type("RunFailed")
class RunFailed(Event):
    error: ErrorInfo


@event_type("BudgetExceeded")
class BudgetExceeded(Event):
    error: ErrorInfo
