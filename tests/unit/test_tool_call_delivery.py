"""A workflow's tool calls across a crash: the start of a call is durable before the tool
runs, and a call cut off by a crash is run again (at-least-once, the default) or reported
FAILED as `interrupted` (at-most-once, the workflow limit `at_most_once=1`)."""

from __future__ import annotations

import json

import pytest

from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.perform import LiveEffects, local_invoker
from actors.runtime.shell import ActorShell
from actors.tasks.journal import AT_MOST_ONCE
from actors.tasks.runner import prepare, serve, submit
from actors.tasks.workflow import WorkflowBehaviour, execute_workflow, task_stream
from events.store import EventStore

SCRIPT = '(system:run_script "touch side-effect")'


class Killed(BaseException):
    """The actor's process dying mid-call: nothing after it runs, nothing catches it."""


class Script:
    """`system:run_script` as a test double: counts its runs; can die while running."""

    def __init__(self, store: EventStore | None = None, die: bool = False) -> None:
        self.store, self.die, self.runs, self.seen = store, die, 0, []

    def execute(self, command: str, **_: object) -> str:
        self.runs += 1
        if self.store is not None:
            self.seen = [e.type_name for e in self.store.read_stream(task_stream("w1"))]
        if self.die:
            raise Killed()
        return json.dumps({"exit_code": 0, "stdout": "done", "stderr": ""})


def crashed_mid_script(**limits: int) -> tuple[EventStore, Script]:
    store = EventStore("memory://")
    start = prepare(SCRIPT, workspace=".", limits=limits)
    submit(store, "w1", start)
    first = Script(store, die=True)
    with pytest.raises(Killed):
        serve(store, "w1", start, ScriptedProvider(["(no model call expected)"]), tools={"system:run_script": first})
    assert first.runs == 1
    return store, first


def resume(store: EventStore) -> tuple[object, Script]:
    """What Ray's restart does: a new journal over the log, the workflow re-run from the top."""
    again = Script()
    shell = ActorShell(WorkflowBehaviour(), task_stream("w1"), store, run_id="w1").load()
    result = execute_workflow(shell, LiveEffects(LlmGateway(ScriptedProvider(["(no model call expected)"])), local_invoker({"system:run_script": again})))
    return result, again


def tool_events(store: EventStore) -> list[str]:
    return [e.type_name for e in store.read_stream(task_stream("w1")) if e.type_name.startswith("Tool")]


def test_a_tool_call_is_recorded_as_started_before_the_tool_runs():
    store, first = crashed_mid_script()
    assert first.seen.count("ToolCalled") == 1 and "ToolReturned" not in first.seen
    assert tool_events(store) == ["ToolCalled"]  # the crash left the start, and no result


def test_by_default_a_call_cut_off_by_a_crash_runs_again_on_resume():
    store, _ = crashed_mid_script()
    result, again = resume(store)
    assert again.runs == 1  # at-least-once: the side effect may have happened twice
    assert result.ok and result.content == "done"
    assert tool_events(store) == ["ToolCalled", "ToolReturned"]  # one start, not two
    events = store.read_stream(task_stream("w1"))
    assert [e.version for e in events] == list(range(1, len(events) + 1))


def test_an_at_most_once_workflow_reports_the_cut_off_call_as_interrupted():
    store, _ = crashed_mid_script(**{AT_MOST_ONCE: 1})
    result, again = resume(store)
    assert again.runs == 0  # at-most-once: not run again
    assert result.status == "FAILED" and result.error.type == "interrupted"
    returned = [e for e in store.read_stream(task_stream("w1")) if e.type_name == "ToolReturned"]
    assert len(returned) == 1 and not returned[0].ok and returned[0].error.type == "interrupted"


def test_an_at_most_once_workflow_still_runs_calls_nothing_cut_off():
    store = EventStore("memory://")
    start = prepare(SCRIPT, workspace=".", limits={AT_MOST_ONCE: 1})
    submit(store, "w1", start)
    script = Script()
    result = serve(store, "w1", start, ScriptedProvider(["(no model call expected)"]), tools={"system:run_script": script})
    assert result.ok and script.runs == 1
    # ...and a resume of the finished workflow serves the recorded result, running nothing.
    served, again = resume(store)
    assert served == result and again.runs == 0
