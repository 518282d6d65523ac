"""What a task workflow records (seed 001): its start, each evaluation step, each atomic task
call and its result, and how it finished.

LLM calls and tool calls (scripts, file reads) are the runtime's own `LlmRequested` /
`LlmCompleted` / `ToolCalled` / `ToolReturned` in the same stream. `WorkflowStarted` holds
every input that is not code: the S-expression or identifier, the parameters, the template
sources, the memory index and the conversation history, so a replay reads nothing but the log.
"""

from __future__ import annotations

from typing import Any, Literal

from events.base import Event
from events.registry import event_type

TaskStatus = Literal["COMPLETE", "FAILED", "CONTINUATION"]
WorkflowKind = Literal["sexp", "task", "query", "request"]  # request: plain words matched to a template


@event_type("WorkflowStarted")
class WorkflowStarted(Event):
    kind: WorkflowKind  # an S-expression, a task/tool identifier, or a plain question
    text: str
    params: dict[str, Any] = {}
    templates: dict[str, str] = {}  # name -> XML source, as registered
    tools: list[str] = []  # direct tools the Handler offered
    memory_index: dict[str, str] = {}  # path -> description
    history: list[dict[str, Any]] = []  # earlier turns of a conversation (passthrough)
    workspace: str = ""
    model: str = ""
    llm_params: dict[str, Any] = {}
    limits: dict[str, Any] = {}  # max_steps, max_depth, ...


@event_type("StepEvaluated")
class StepEvaluated(Event):
    """The evaluator began a compound form (a special form or an application)."""

    step: int
    depth: int
    form: str  # the form's source, shortened
    line: int = 0
    column: int = 0


@event_type("TaskCalled")
class TaskCalled(Event):
    call_id: int
    task: str
    params: dict[str, Any] = {}
    reason: str = "call"  # "call", "continuation", "dispatch", "context"


@event_type("TemplateMatched")
class TemplateMatched(Event):
    """A plain-language request was matched to an atomic task template: which, and why."""

    request: str
    template: str
    score: float
    why: str
    params: dict[str, Any] = {}
    candidates: list[dict[str, Any]] = []  # the best few: name, score, matched words


@event_type("TaskReturned")
class TaskReturned(Event):
    call_id: int
    task: str
    status: TaskStatus
    content: Any = None
    notes: dict[str, Any] = {}


@event_type("WorkflowFinished")
class WorkflowFinished(Event):
    status: TaskStatus
    content: Any = None
    notes: dict[str, Any] = {}
    steps: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0


@event_type("WorkflowForked")
class WorkflowForked(Event):
    """This workflow re-runs the workflow of `origin_run` from its start (Temporal's reset):
    its first `llm_calls` completions and `tool_calls` tool results were served from that
    run's log (what it had recorded by global position `origin_position`); later calls ran
    live. `model` / `params` are what the fork asked for; `retargets` say which model and
    parameters each LLM call used: from call `after + 1` on, the last entry that applies
    replaces the model (when given) and overrides the parameters it names."""

    origin_run: str
    origin_position: int
    llm_calls: int = 0
    tool_calls: int = 0
    model: str | None = None
    params: dict[str, Any] | None = None
    retargets: list[dict[str, Any]] = []
