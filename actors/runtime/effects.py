"""What a behaviour can ask of the world, and the commands that bring the recorded answers
back (Temporal's workflow/activity split, the pure side of it).

An agent behaviour says what it needs next (`CallLlm`, `CallTool`, `Stop`); the runtime's
performer (`actors.runtime.perform`) does it, records the result as events, and hands them
back in `LlmReturned` / `ToolFinished` / `StopAgent`. Nothing here performs anything, so a
pure core imports it without the store or Ray.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from actors.runtime.behaviour import Command
from actors.runtime.llm.types import LlmRequest
from events.base import Event
from events.errors import ErrorInfo

# -- what a behaviour can ask for ------------------------------------------------------------


class CallLlm(BaseModel):
    request: LlmRequest
    call_index: int


class CallTool(BaseModel):
    tool: str
    args: dict[str, Any]
    call_index: int


class Stop(BaseModel):
    error: ErrorInfo


# -- the commands that bring recorded results back ---------------------------------------------


class LlmReturned(Command):
    """Recorded LlmRequested + LlmCompleted (or LlmFailed), to decide on."""

    events: list[Event]


class ToolFinished(Command):
    """Recorded ToolCalled + ToolReturned."""

    events: list[Event]


class StopAgent(Command):
    error: ErrorInfo


# -- who performs them ------------------------------------------------------------------------


class Effects(Protocol):
    def llm(self, request: LlmRequest, call_index: int) -> list[Event]: ...

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]: ...
