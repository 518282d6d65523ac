"""Forking a workflow run (Temporal's reset) in-process, no Ray: the plan, the served prefix,
the live rest, model switches (also for a fork of a fork), resume, replay and diff."""

from __future__ import annotations

import pytest

from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.shell import rebuild
from actors.tasks.fork import read_fork
from actors.tasks.journal import retarget
from actors.tasks.runner import prepare, serve, submit
from actors.tasks.workflow import ForkWorkflow, StartWorkflow, WorkflowBehaviour, task_stream
from events.store import EventStore
from actors.tasks.events import StepEvaluated, WorkflowForked, WorkflowStarted
from actors.runtime.replay import diff_runs
from actors.runtime.replay import replay_run
from tests.support.recording import record_run
from tests.support.task_scripts import EXAMPLE, director_evaluator_script, verdict


@pytest.fixture
def store():
    with EventStore("memory://") as s:
        yield s


def record(store, text=EXAMPLE.read_text(), replies=director_evaluator_script(3), run_id="orig", **options):
    start = prepare(text, **{"workspace": ".", "params": {"goal": "a haiku"}, "model": "m0", **options})
    submit(store, run_id, start)
    return serve(store, run_id, start, ScriptedProvider(replies))


def fork(store, origin, at, replies, new_id, provider=None, **options):
    start, plan = read_fork(store, origin, at, **options)
    submit(store, new_id, start, forked_from=f"{origin}@{at}")
    provider = provider or ScriptedProvider(replies)
    return serve(store, new_id, start, provider, fork=plan), provider


def position(store, run_id, type_name, nth):
    """Global position of the run's `nth` event of a type (1-based)."""
    found = [r.position for r in store.read_all(run_id=run_id) if r.event.type_name == type_name]
    return found[nth - 1]


def events(store, run_id, type_name=None):
    return [e for e in store.read_stream(task_stream(run_id)) if type_name in (None, e.type_name)]


# -- the live fork ------------------------------------------------------------------------------------


def test_a_fork_is_served_the_recorded_prefix_and_goes_live_after_it(store):
    record(store)
    before = [r.event.event_id for r in store.read_all(run_id="orig")]
    at = position(store, "orig", "LlmCompleted", 2)  # the evaluator turned down the first draft
    result, provider = fork(store, "orig", at, ["Draft B.", verdict(True, "fine")], "f1")

    assert result.content == {"draft": "Draft B.", "rounds": 2, "feedback": "fine"}
    # Two live calls, the script's first two replies: the first two were not asked again...
    assert provider.calls == 2
    # ...but served: the live director saw the recorded evaluator's feedback.
    assert "Feedback on your previous draft: feedback 1" in provider.requests[0].messages[-1]["content"]
    served = [e.content for e in events(store, "f1", "LlmCompleted")]
    assert served == ["Draft 1.", verdict(False, "feedback 1"), "Draft B.", verdict(True, "fine")]
    marker = events(store, "f1")[1]
    assert marker.type_name == "WorkflowForked"
    assert (marker.origin_run, marker.origin_position, marker.llm_calls, marker.tool_calls) == ("orig", at, 2, 0)
    run = rebuild(RunLifecycle(), store.read_stream(run_stream("f1")))
    assert (run.status, run.kind, run.forked_from) == ("completed", "task", f"orig@{at}")
    assert [r.event.event_id for r in store.read_all(run_id="orig")] == before  # untouched

    report = replay_run(store, "f1")
    assert report.ok, report.divergence.describe()
    assert (report.llm_calls, report.events) == (4, len(events(store, "f1")))

    diff = diff_runs(store, "orig", "f1")
    assert diff.kind == "workflow"
    assert (diff.first_a.type_name, diff.first_b.type_name) == ("LlmCompleted", "LlmCompleted")
    assert (diff.first_a.call_index, diff.first_a.content, diff.first_b.content) == (3, "Draft 2.", "Draft B.")
    assert diff.shared == diff.first_a.version - 1  # every event before it is the same fact
    text = "\n".join(diff.lines())
    assert "the workflows share their first" in text and "task calls" in text and f"a fork of orig@{at}" in text


def test_tool_results_before_the_position_are_served_not_run_again(store, tmp_path):
    count = "echo x >> count.txt; wc -l < count.txt"
    text = (
        f'(let ((n (system:run_script "{count}")))'
        '  (let ((d (call director :goal (str "count " (get n :content)))))'
        f'    (list (get d :content) (get (system:run_script "{count}") :content))))'
    )
    original = record(store, text, ["Draft."], workspace=tmp_path)
    assert original.content == ["Draft.", "2\n"]
    at = position(store, "orig", "LlmCompleted", 1)
    result, provider = fork(store, "orig", at, ["never asked"], "f1")
    # The first script is served (it would have counted 3), the second runs: it counts 3.
    assert result.content == ["Draft.", "3\n"] and provider.calls == 0
    assert (tmp_path / "count.txt").read_text() == "x\nx\nx\n"
    assert events(store, "f1")[1].tool_calls == 1
    diff = diff_runs(store, "orig", "f1")
    assert diff.first_a.type_name == diff.first_b.type_name == "ToolReturned"
    assert diff.first_a.call_index == diff.first_b.call_index == 2
    assert '"2\\n"' in diff.first_a.output and '"3\\n"' in diff.first_b.output
    assert replay_run(store, "f1").ok


def test_a_fork_at_the_start_runs_everything_live(store):
    record(store)
    at = position(store, "orig", "WorkflowStarted", 1)
    result, provider = fork(store, "orig", at, director_evaluator_script(1), "f1")
    assert result.content["rounds"] == 1 and provider.calls == 2
    assert replay_run(store, "f1").ok


def test_another_model_and_temperature_apply_after_the_fork_point_and_to_a_fork_of_the_fork(store):
    record(store)
    at = position(store, "orig", "LlmCompleted", 2)
    replies = ["Draft B.", verdict(False, "again"), "Draft C.", verdict(True, "ok")]
    fork(store, "orig", at, replies, "f1", model="m1", params={"temperature": 0.7})
    asked = events(store, "f1", "LlmRequested")
    assert [e.model for e in asked] == ["m0", "m0", "m1", "m1", "m1", "m1"]
    assert asked[1].params == {"temperature": 0.0, "max_tokens": 512}
    assert asked[2].params == {"temperature": 0.7, "max_tokens": 512}
    assert replay_run(store, "f1").ok

    # Forked again after one live call of f1: that call (m1) is served; the rest stays on m1.
    again = position(store, "f1", "LlmCompleted", 3)
    result, provider = fork(store, "f1", again, [verdict(True, "good")], "f2", params={"max_tokens": 64})
    assert result.content == {"draft": "Draft B.", "rounds": 2, "feedback": "good"} and provider.calls == 1
    asked = events(store, "f2", "LlmRequested")
    assert [e.model for e in asked] == ["m0", "m0", "m1", "m1"]
    assert asked[3].params == {"temperature": 0.7, "max_tokens": 64}
    assert replay_run(store, "f2").ok


def test_a_fork_that_crashes_resumes_from_its_own_log(store):
    class Crash(Exception):
        pass

    class CrashesOnSecondLiveCall(ScriptedProvider):
        def complete(self, request):
            if self.calls == 1:
                raise Crash("the actor died")
            return super().complete(request)

    record(store)
    at = position(store, "orig", "LlmCompleted", 2)
    replies = ["Draft B.", verdict(True, "fine")]
    with pytest.raises(Crash):
        fork(store, "orig", at, replies, "f1", provider=CrashesOnSecondLiveCall(replies))
    start, plan = read_fork(store, "orig", at)
    rest = ScriptedProvider(replies[1:])
    result = serve(store, "f1", start, rest, fork=plan)  # what Ray's retry does
    assert result.content["draft"] == "Draft B." and rest.calls == 1
    stream = events(store, "f1")
    assert [e.version for e in stream] == list(range(1, len(stream) + 1))
    assert sum(e.type_name == "WorkflowForked" for e in stream) == 1
    assert replay_run(store, "f1").ok


# -- refusing ----------------------------------------------------------------------------------------


def test_positions_outside_the_workflow_or_after_it_finished_are_refused(store, tmp_path):
    record(store)
    last = store.max_position()
    for at, message in [
        (0, "outside run orig"),
        (position(store, "orig", "RunSubmitted", 1), "outside run orig"),
        (last + 1, "outside run orig"),
        (position(store, "orig", "WorkflowFinished", 1), "had finished by position"),
        (position(store, "orig", "RunCompleted", 1), "had finished by position"),
    ]:
        with pytest.raises(ValueError, match=message):
            read_fork(store, "orig", at)
    record_run(store, tmp_path, run_id="agent")
    with pytest.raises(ValueError, match="run agent has no workflow to fork"):
        read_fork(store, "agent", store.max_position())
    assert store.max_position() == last + len(list(store.read_all(run_id="agent")))


def test_diff_refuses_a_task_run_against_an_agent_run(store, tmp_path):
    record(store)
    record_run(store, tmp_path, run_id="agent")
    with pytest.raises(ValueError, match="run orig is a task workflow run and run agent an agent run"):
        diff_runs(store, "orig", "agent")
    same = diff_runs(store, "orig", "orig")
    assert same.first_a is None and same.shared == len(events(store, "orig"))


# -- the pure parts ----------------------------------------------------------------------------------


def test_retarget_applies_the_last_rule_that_covers_the_call():
    asked = [{"role": "user", "content": "hi"}]
    request = LlmRequest(model="m0", messages=asked, params={"temperature": 0, "max_tokens": 9})
    rules = [{"after": 2, "model": "m1", "params": {"temperature": 0.5}}, {"after": 4, "model": None, "params": {}}]
    assert retarget(request, rules, 2) == request
    third = retarget(request, rules, 3)
    assert (third.model, third.params) == ("m1", {"temperature": 0.5, "max_tokens": 9})
    assert third.hash() != request.hash()
    assert retarget(request, rules, 5) == request  # the later rule keeps the workflow's own model


def test_a_workflow_is_forked_once_and_only_before_its_first_step():
    behaviour = WorkflowBehaviour()
    started = WorkflowStarted(kind="sexp", text="(+ 1 2)", model="m0")
    state = behaviour.fold(behaviour.initial(), [started])
    command = ForkWorkflow(key="fork", forked=WorkflowForked(origin_run="o", origin_position=7, llm_calls=1))
    (marker,) = behaviour.decide(state, command)
    forked = behaviour.evolve(state, marker)
    assert forked.fork["origin_run"] == "o" and forked.fork["llm_calls"] == 1
    assert behaviour.decide(forked, command) == []
    stepped = behaviour.evolve(state, StepEvaluated(step=1, depth=1, form="(+ 1 2)"))
    assert behaviour.decide(stepped, command) == []
    assert StartWorkflow.from_event(started).model == "m0"
