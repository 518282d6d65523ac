"""What a ReAct agent decides: it starts, chooses steps, has steps rejected, answers or fails."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type, upcaster
from events.runs import Budget, explicit_budget


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    signature: str
    description: str
    topic: str = ""  # "module:Class" of the implementation, so any process can import it


@event_type("AgentStarted", version=2)  # v2: Budget() became finite (events/runs.py)
class AgentStarted(Event):
    goal: str
    root: str
    tools: list[ToolSpec]
    max_iterations: int
    model: str
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    # Answers must quote a line the tools showed, and pass the verify step (actors/agent/verify.py).
    # False for runs recorded before grounding existed, so they replay as they ran.
    grounded: bool = False
    # The agent reads the definitions the question names before its first model call, and after a
    # refused answer, and shows them as its own notes (not as the model's steps); the model's own
    # lookups are capped. False for runs recorded before, so they replay as they ran.
    lookups: bool = False
    # The revision of the grounded agent's rules the run started with (0 for runs recorded
    # before revisions existed, so they replay as they ran). 1: after an opening lookup that
    # found the named definition, the model's first step may only be the answer (a "not found"
    # there sends it on searching).
    rules: int = 0


@upcaster("AgentStarted", from_version=1)
def _agentstarted_v1(payload: dict[str, Any]) -> dict[str, Any]:
    return explicit_budget(payload)  # written when Budget() was unlimited: it stays so


@event_type("StepDecided")
class StepDecided(Event):
    """The model chose a tool call; the tool result follows as ToolCalled/ToolReturned."""

    iteration: int
    thought: str
    action: str
    args: dict[str, Any]
    # Decided by the agent itself (a lookup of a name), not by the model: shown as a note.
    auto: bool = False


@event_type("StepRejected")
class StepRejected(Event):
    """The model's step was not run (unparseable, unknown tool, a repeat): the observation says why."""

    iteration: int
    thought: str
    action: str
    args: dict[str, Any]
    reason: str
    observation: str


@event_type("AnswerGiven")
class AnswerGiven(Event):
    iteration: int
    thought: str
    answer: str  # wrapped in <answer> tags


@event_type("AgentFailed")
class AgentFailed(Event):
    error: ErrorInfo


@event_type("AgentForked")
class AgentForked(Event):
    """This stream's earlier events were copied from another run; from here on it runs live,
    optionally with another model or parameters."""

    origin_run: str
    origin_position: int
    model: str | None = None
    params: dict[str, Any] | None = None
