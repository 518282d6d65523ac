"""The structured error every FAILED result carries (seed 001's error philosophy)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ErrorInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: str  # e.g. "budget_exceeded", "llm_error", "tool_error", "replay_divergence"
    reason: str  # machine-readable detail, e.g. "llm_calls", "timeout"
    message: str  # one line for a person
    details: dict[str, Any] | None = None

    def line(self) -> str:
        return f"{self.type} ({self.reason}): {self.message}"
