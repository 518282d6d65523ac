"""Forking a workflow run at a global log position (Temporal's "reset").

A workflow is deterministic given its recorded inputs, so a fork does not copy events: it
is a new run that starts the same workflow again (the original `WorkflowStarted`), marks
itself with `WorkflowForked`, and is served the original's recorded LLM completions and
tool results for the calls that had finished by the position; the first call after them
runs live, with another model or other parameters if asked. Its log is an ordinary
workflow run, so replay, log, state and diff read it like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.runtime.effects import Effects
from actors.runtime.llm.types import LlmRequest
from actors.runtime.perform import ReplayEffects
from actors.tasks.workflow import ForkWorkflow, StartWorkflow, task_stream
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, ToolReturned
from events.store import EventStore, Recorded
from actors.tasks.events import WorkflowFinished, WorkflowForked, WorkflowStarted


def plan_fork(
    records: list[Recorded],
    run_id: str,
    at: int,
    *,
    model: str | None = None,
    params: dict[str, Any] | None = None,
) -> tuple[StartWorkflow, ForkWorkflow]:
    """How a fork of workflow run `run_id` at position `at` starts: the original start, and
    what it is served from the recording. ValueError if there is nothing to fork there."""
    stream = task_stream(run_id)
    mine = [r for r in records if r.event.stream_id == stream]
    if not mine or not isinstance(mine[0].event, WorkflowStarted):
        raise ValueError(f"run {run_id} has no workflow to fork")
    first, last = mine[0].position, mine[-1].position
    if not first <= at <= records[-1].position:
        raise ValueError(f"position {at} is outside run {run_id} (its workflow spans {first}..{last})")
    done = [r.event for r in mine if r.position <= at]
    if any(isinstance(e, WorkflowFinished) for e in done):
        raise ValueError(f"the workflow of run {run_id} had finished by position {at}; fork at an earlier position")
    llm_calls = sum(isinstance(e, (LlmCompleted, LlmFailed)) for e in done)
    # A fork of a fork keeps the model switches its calls so far were made with.
    earlier = next((r.event for r in mine if isinstance(r.event, WorkflowForked)), None)
    retargets = [r for r in (earlier.retargets if earlier else []) if r["after"] <= llm_calls]
    if model or params:
        last_rule = retargets[-1] if retargets else {}
        retargets.append(
            {
                "after": llm_calls,
                "model": model or last_rule.get("model"),
                "params": {**(last_rule.get("params") or {}), **(params or {})},
            }
        )
    forked = WorkflowForked(
        origin_run=run_id,
        origin_position=at,
        llm_calls=llm_calls,
        tool_calls=sum(isinstance(e, ToolReturned) for e in done),
        model=model,
        params=params,
        retargets=retargets,
    )
    return StartWorkflow.from_event(mine[0].event), ForkWorkflow(key="fork", forked=forked)  # type: ignore[arg-type]


def read_fork(store: EventStore, run_id: str, at: int, **options: Any) -> tuple[StartWorkflow, ForkWorkflow]:
    """`plan_fork` over the run's log as the store holds it (reads only)."""
    return plan_fork(list(store.read_all(run_id=run_id)), run_id, at, **options)


class ForkEffects:
    """The origin's recorded results for the calls a fork is served (checked like a replay:
    a request the recording does not hold fails closed); `live` for every call after them."""

    def __init__(self, recorded: list[Event], fork: Mapping[str, Any], live: Effects) -> None:
        self.recorded = ReplayEffects(recorded)
        self.llm_calls = int(fork["llm_calls"])
        self.tool_calls = int(fork["tool_calls"])
        self.live = live

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        if call_index <= self.llm_calls:
            return _now(self.recorded.llm(request, call_index))
        return self.live.llm(request, call_index)

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        if call_index <= self.tool_calls:
            return _now(self.recorded.tool(name, args, call_index))
        return self.live.tool(name, args, call_index)


def fork_effects(store: EventStore, fork: Mapping[str, Any], live: Effects) -> ForkEffects:
    return ForkEffects(store.read_stream(task_stream(fork["origin_run"])), fork, live)


def _now(events: list[Event]) -> list[Event]:
    """Recorded facts, stamped when this run appends them (not when the origin did)."""
    return [type(e).model_validate(e.payload()) for e in events]
