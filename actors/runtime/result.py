"""A finished (or still running) run's outcome as a client reports it, local or remote."""

from __future__ import annotations

from dataclasses import dataclass

from events.errors import ErrorInfo


@dataclass(frozen=True)
class RunResult:
    run_id: str
    status: str  # completed | failed | submitted | running
    answer: str | None
    error: ErrorInfo | None

    @property
    def ok(self) -> bool:
        return self.status == "completed"
