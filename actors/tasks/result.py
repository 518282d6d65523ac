"""TaskResult and SubtaskRequest: what every component of the task system hands back and asks
for (seed 001). A FAILED result carries `notes["error"]` with `type`, `reason`, `message` and
optional `details` — the same shape as `events.errors.ErrorInfo` — rather than raising."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from events.errors import ErrorInfo

TaskStatus = Literal["COMPLETE", "FAILED", "CONTINUATION"]


class TaskResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: TaskStatus
    content: Any = None
    notes: dict[str, Any] = {}

    @property
    def ok(self) -> bool:
        return self.status == "COMPLETE"

    @property
    def error(self) -> ErrorInfo | None:
        raw = self.notes.get("error")
        return ErrorInfo.model_validate(raw) if isinstance(raw, dict) else None

    @property
    def subtask_request(self) -> SubtaskRequest | None:
        raw = self.notes.get("subtask_request")
        if not isinstance(raw, dict):
            return None
        name = raw.get("name") or raw.get("type") or raw.get("task")
        params = raw.get("params") or raw.get("inputs") or {}
        if not isinstance(name, str) or not isinstance(params, dict):
            return None
        return SubtaskRequest(name=name, params=params)

    def text(self) -> str:
        """The content as a person reads it."""
        if self.content is None:
            return ""
        return self.content if isinstance(self.content, str) else str(self.content)

    def line(self) -> str:
        err = self.error
        if err is not None:
            return f"{self.status}: {err.line()}"
        first = self.text().strip().splitlines()
        return f"{self.status}: {first[0] if first else ''}"


class SubtaskRequest(BaseModel):
    """A request to run an atomic task: its name, its params, and its context settings."""

    model_config = ConfigDict(frozen=True)

    name: str
    params: dict[str, Any] = {}
    inherited_context: str | None = None
    disable_context: bool = False


def complete(content: Any = None, **notes: Any) -> TaskResult:
    return TaskResult(status="COMPLETE", content=content, notes=notes)


def failed(
    type: str, reason: str, message: str, details: dict[str, Any] | None = None, **notes: Any
) -> TaskResult:  # noqa: A002 - seed 001's field name
    error = ErrorInfo(type=type, reason=reason, message=message, details=details)
    return TaskResult(status="FAILED", content=None, notes={**notes, "error": error.model_dump()})


def from_error(error: ErrorInfo, **notes: Any) -> TaskResult:
    return TaskResult(status="FAILED", content=None, notes={**notes, "error": error.model_dump()})
