"""A run's lifecycle: a goal submitted by a client, started, then completed or failed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type


class Budget(BaseModel):
    """Limits on one run; None means unlimited."""

    model_config = ConfigDict(frozen=True)

    max_llm_calls: int | None = None
    max_tokens: int | None = None
    max_wall_seconds: float | None = None


@event_type("RunSubmitted")
class RunSubmitted(Event):
    goal: str
    agent: str = "react"
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    forked_from: str | None = None


@event_type("RunStarted")
class RunStarted(Event):
    lead_stream: str


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
