"""A workflow as an event-sourced actor: stream `task:{run_id}`, a pure decide/evolve core,
and `execute_workflow`, which wires the components from what `WorkflowStarted` recorded
and runs the Dispatcher through a Journal.

Everything a workflow depends on besides code is in its `WorkflowStarted` event (text,
params, template sources, tool names, memory index, history, model, limits), so the same
function runs it live (LiveEffects), resumes it after a crash, and replays it from a log
(ReplayEffects) with no model, no scripts and no file reads.

The wall-time limit (`max_seconds`) is decided from recorded time only: every few steps the
evaluator asks `elapsed`, which appends the steps noted so far and measures from the
`WorkflowStarted` timestamp to the timestamp of the last event appended. A replay re-appends
the same events with the recorded timestamps (the shell's recorded clock), so it stops at
the same step with the same result, however much faster it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.effects import Effects
from actors.tasks.dispatcher import Dispatcher
from actors.tasks.handler import Handler
from actors.tasks.journal import Journal, Record
from actors.tasks.memory import MemorySystem
from actors.tasks.result import TaskResult
from actors.tasks.sexp.evaluator import EvalLimits, plain
from actors.tasks.task_system import TaskSystem
from actors.tasks.templates import AtomicTemplate
from events.base import Event, State
from events.effects import LlmCompleted, LlmFailed, ToolCalled
from actors.tasks.events import (
    StepEvaluated,
    TaskCalled,
    WorkflowFinished,
    WorkflowForked,
    WorkflowStarted,
)

if TYPE_CHECKING:  # the shell is the runtime's: it brings the store, which a pure core must not
    from actors.runtime.shell import ActorShell

WorkflowStatus = Literal["new", "running", "completed", "failed"]
QUERY_LIMITS = {"max_turns": 1, "max_tokens": 16000}


def task_stream(run_id: str) -> str:
    return f"task:{run_id}"


class WorkflowState(State):
    status: WorkflowStatus = "new"
    kind: str = "sexp"
    text: str = ""
    params: dict[str, Any] = {}
    templates: dict[str, str] = {}
    tools: list[str] = []
    memory_index: dict[str, str] = {}
    history: list[dict[str, Any]] = []
    workspace: str = ""
    model: str = ""
    llm_params: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    steps: int = 0
    task_calls: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0
    result: TaskResult | None = None
    fork: dict[str, Any] = {}  # WorkflowForked's payload, when this run is a fork
    started_at: datetime | None = None  # WorkflowStarted's (recorded) timestamp: the wall-time limit's zero


class StartWorkflow(Command):
    kind: Literal["sexp", "task", "query", "request"]
    text: str
    params: dict[str, Any] = {}
    templates: dict[str, str] = {}
    tools: list[str] = []
    memory_index: dict[str, str] = {}
    history: list[dict[str, Any]] = []
    workspace: str = ""
    model: str = ""
    llm_params: dict[str, Any] = {}
    limits: dict[str, Any] = {}

    @classmethod
    def from_event(cls, started: WorkflowStarted, key: str = "start") -> StartWorkflow:
        return cls(key=key, **started.payload())


class ForkWorkflow(Command):
    """Mark a just-started workflow as a fork, before its first step (see `actors.tasks.fork`)."""

    forked: WorkflowForked

    @classmethod
    def from_event(cls, forked: WorkflowForked, key: str = "fork") -> ForkWorkflow:
        return cls(key=key, forked=WorkflowForked(**forked.payload()))


class FinishWorkflow(Command):
    result: TaskResult


class WorkflowBehaviour(Behaviour[WorkflowState]):
    name = "task"
    state_type = WorkflowState

    def decide(self, state: WorkflowState, command: Command) -> list[Event]:
        if isinstance(command, StartWorkflow):
            if state.status != "new":
                return []
            return [WorkflowStarted(**command.model_dump(exclude={"key"}))]
        if state.status != "running":
            return []
        if isinstance(command, ForkWorkflow):
            if state.fork or state.steps or state.llm_calls or state.tool_calls:
                return []  # forked already, or too late: a fork starts before the first step
            return [WorkflowForked(**command.forked.payload())]
        if isinstance(command, Record):
            return list(command.events)
        if isinstance(command, FinishWorkflow):
            r = command.result
            return [
                WorkflowFinished(
                    status=r.status,
                    content=plain(r.content),
                    notes=plain(r.notes),
                    steps=state.steps,
                    llm_calls=state.llm_calls,
                    tool_calls=state.tool_calls,
                    tokens=state.tokens,
                )
            ]
        raise TypeError(f"a workflow cannot handle {type(command).__name__}")

    def evolve(self, state: WorkflowState, event: Event) -> WorkflowState:
        if isinstance(event, WorkflowStarted):
            return state.model_copy(update={**event.payload(), "status": "running", "started_at": event.timestamp})
        if isinstance(event, WorkflowForked):
            return state.model_copy(update={"fork": event.payload()})
        if isinstance(event, StepEvaluated):
            return state.model_copy(update={"steps": max(state.steps, event.step)})
        if isinstance(event, TaskCalled):
            return state.model_copy(update={"task_calls": state.task_calls + 1})
        if isinstance(event, (LlmCompleted, LlmFailed)):
            used = event.prompt_tokens + event.completion_tokens if isinstance(event, LlmCompleted) else 0
            return state.model_copy(update={"llm_calls": state.llm_calls + 1, "tokens": state.tokens + used})
        if isinstance(event, ToolCalled):
            return state.model_copy(update={"tool_calls": state.tool_calls + 1})
        if isinstance(event, WorkflowFinished):
            result = TaskResult(status=event.status, content=event.content, notes=event.notes)
            status = "failed" if event.status == "FAILED" else "completed"
            return state.model_copy(update={"status": status, "result": result})
        return state


def eval_limits(limits: dict[str, Any]) -> EvalLimits:
    """The evaluator's limits among a workflow's `limits` (ValueError for a bad one)."""
    known = EvalLimits.__dataclass_fields__
    return EvalLimits(**{k: int(v) for k, v in limits.items() if k in known and v is not None})


def build_dispatcher(
    state: WorkflowState, journal: Journal, elapsed: Callable[[], float] | None = None
) -> Dispatcher:
    """The components of seed 001, configured from the recorded start of a workflow."""

    def handler(max_turns: int, max_tokens: int) -> Handler:
        return Handler(
            journal,
            model=state.model,
            llm_params=state.llm_params,
            tools=state.tools,
            max_turns=max_turns,
            max_tokens=max_tokens,
        )

    def for_template(template: AtomicTemplate) -> Handler:
        return handler(template.max_turns, template.max_tokens)

    tasks = TaskSystem(for_template, MemorySystem(state.memory_index), note=journal.note)
    for name, source in state.templates.items():
        tasks.register_template(source, f"template {name}")
    query = {**QUERY_LIMITS, **{k: state.limits[k] for k in QUERY_LIMITS if k in state.limits}}
    return Dispatcher(
        tasks,
        handler(1, 1),  # the direct-tool hand: tools only, never an LLM call
        journal.note,
        eval_limits(state.limits),
        query_handler=lambda: handler(int(query["max_turns"]), int(query["max_tokens"])),
        elapsed=elapsed,
    )


def execute_workflow(
    shell: ActorShell[WorkflowState],
    effects: Effects,
    on_events: Callable[[list[Event]], None] | None = None,
) -> TaskResult:
    """Run (or resume, or replay) the workflow the shell's stream started; returns its result."""
    state = shell.state
    if state.status in ("completed", "failed") and state.result is not None:
        return state.result
    if state.status != "running":
        raise RuntimeError(f"{shell.stream_id} has not started")
    appended_at: list[datetime] = []  # the recorded timestamp of the last event appended

    def track(events: list[Event]) -> None:
        if events:
            appended_at[:] = [events[-1].timestamp]
        if on_events is not None:
            on_events(events)

    journal = Journal(shell, effects, track)

    def elapsed() -> float:
        """Seconds from the start to the last event appended, by recorded timestamps."""
        journal.flush()  # the steps noted so far are appended now, and their time recorded
        if journal.resuming or not appended_at or state.started_at is None:
            return 0.0  # re-running what the log holds: the log goes on, so the limit was not hit here
        return (appended_at[0] - state.started_at).total_seconds()

    dispatcher = build_dispatcher(state, journal, elapsed)
    if state.kind == "query":
        result = dispatcher.handle_query(state.text, state.history)
    elif state.kind == "request":
        result = dispatcher.execute_request(state.text, state.params)
    else:
        result = dispatcher.execute_programmatic_task(state.text, state.params)
    journal.flush()
    appended = shell.handle(FinishWorkflow(key="finish", result=result), causation_id=shell.last_event_id)
    if on_events is not None:
        on_events(appended)
    return shell.state.result or result
