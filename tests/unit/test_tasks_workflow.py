"""Workflows in-process (no Ray) with scripted models: the director-evaluator example, the
dynamic CONTINUATION path, the Handler's resource limits, the memory system, passthrough,
and replay / resume from the log."""

from __future__ import annotations

import json

import pytest

from actors.runtime.perform import ReplayEffects
from actors.testing.model import ScriptedProvider
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.shell import ActorShell, rebuild
from actors.tasks.memory import ContextGenerationInput, MemorySystem, best, scores, shortlist
from actors.tasks.result import complete, failed
from actors.tasks.runner import needs_llm, prepare, serve, submit, task_result
from actors.tasks.workflow import WorkflowBehaviour, task_stream
from events.store import EventStore
from actors.runtime.replay import replay_run
from tests.support.task_scripts import EXAMPLE, director_evaluator_script, verdict


def execute(text, replies, run_id="w1", store=None, provider=None, **options):
    store = store or EventStore("memory://")
    start = prepare(text, **{"workspace": ".", **options})
    submit(store, run_id, start)
    provider = provider or ScriptedProvider(list(replies) or ["(no reply scripted)"])
    result = serve(store, run_id, start, provider)
    return result, store, provider


def types(store, run_id="w1"):
    return [e.type_name for e in store.read_stream(task_stream(run_id))]


# -- the director-evaluator example -------------------------------------------------------------


def test_director_evaluator_refines_until_the_evaluator_accepts_on_the_third_round():
    result, store, provider = execute(EXAMPLE.read_text(), director_evaluator_script(3), params={"goal": "a haiku"})
    assert result.status == "COMPLETE"
    assert result.content == {"draft": "Draft 3.", "rounds": 3, "feedback": "feedback 3"}
    assert provider.calls == 6
    # The feedback of each round reaches the next draft.
    directors = [r for r in provider.requests if "careful writer" in r.messages[0]["content"]]
    assert "Feedback on your previous draft: none yet" in directors[0].messages[-1]["content"]
    assert "Feedback on your previous draft: feedback 2" in directors[2].messages[-1]["content"]
    events = store.read_stream(task_stream("w1"))
    calls = [(e.task, e.params.get("feedback")) for e in events if e.type_name == "TaskCalled"]
    assert calls == [
        ("director", "none yet"), ("evaluator", None), ("director", "feedback 1"), ("evaluator", None),
        ("director", "feedback 2"), ("evaluator", None),
    ]  # fmt: skip
    finished = events[-1]
    assert finished.type_name == "WorkflowFinished" and finished.llm_calls == 6 and finished.steps > 0
    run = rebuild(RunLifecycle(), store.read_stream(run_stream("w1")))
    assert run.status == "completed" and run.kind == "task"


def test_director_evaluator_gives_up_after_max_rounds_with_the_last_feedback():
    result, _, provider = execute(
        EXAMPLE.read_text(), director_evaluator_script(99), params={"goal": "g", "max_rounds": 2}
    )
    assert result.status == "FAILED" and provider.calls == 4
    assert result.error.reason == "not_accepted"
    assert result.error.message == "no draft accepted after 2 round(s); last feedback: feedback 2"


# -- the dynamic path: CONTINUATION with a subtask_request ----------------------------------------

DRAFTER = """<task name="drafter">
  <params><param name="goal"/></params>
  <instructions>Draft {{goal}}; then ask for an evaluation by replying
{"status": "CONTINUATION", "content": DRAFT, "subtask_request": {"name": "evaluator", "params": {"goal": ..., "draft": DRAFT}}}</instructions>
  <output format="json"/>
</task>"""


def test_a_continuation_makes_the_evaluator_spawn_the_subtask_through_the_task_system():
    continuation = json.dumps(
        {
            "status": "CONTINUATION",
            "content": "A draft.",
            "subtask_request": {"name": "evaluator", "params": {"goal": "g", "draft": "A draft."}},
        }
    )
    result, store, provider = execute(
        "(call drafter :goal \"g\")", [continuation, verdict(True, "good")], templates={"drafter": DRAFTER}
    )
    assert result.status == "COMPLETE" and result.content == {"accepted": True, "feedback": "good"}
    assert result.notes["continued_via"] == ["evaluator"]
    assert "Draft:\nA draft." in provider.requests[1].messages[-1]["content"]
    events = store.read_stream(task_stream("w1"))
    returned = [(e.task, e.status) for e in events if e.type_name == "TaskReturned"]
    assert returned == [("drafter", "CONTINUATION"), ("evaluator", "COMPLETE")]
    assert [e.reason for e in events if e.type_name == "TaskCalled"] == ["call", "continuation"]


def test_a_task_identifier_is_dispatched_the_same_way():
    continuation = json.dumps({"status": "CONTINUATION", "subtask_request": {"name": "summarize-nothing", "params": {}}})
    result, _, _ = execute("drafter", [continuation], params={"goal": "g"}, templates={"drafter": DRAFTER})
    assert result.status == "FAILED" and result.error.type == "task_not_found"


# -- the Handler's resource limits ------------------------------------------------------------------

JSON_TASK = """<task name="judge"><params><param name="x"/></params>
  <instructions>Judge {{x}}.</instructions><output format="json"/><limits turns="2" tokens="{tokens}"/></task>"""


def test_running_out_of_turns_is_a_resource_exhaustion_failure():
    result, store, provider = execute(
        "(judge :x 1)", ["not json", "still not json", '{"never": "reached"}'], templates={"judge": JSON_TASK.format(tokens=9999)}
    )
    assert result.status == "FAILED"
    assert (result.error.type, result.error.reason) == ("resource_exhaustion", "turns")
    assert result.error.details["turns"] == 2 and provider.calls == 2
    assert "not a JSON object" in provider.requests[1].messages[-1]["content"]


def test_going_over_the_token_limit_is_a_resource_exhaustion_failure():
    result, _, provider = execute("(judge :x 1)", ['{"ok": true}'], templates={"judge": JSON_TASK.format(tokens=5)})
    assert (result.status, result.error.type, result.error.reason) == ("FAILED", "resource_exhaustion", "tokens")
    assert result.error.details["tokens"] > 5 and provider.calls == 1


def test_limits_are_per_atomic_task_not_per_workflow():
    template = JSON_TASK.format(tokens=9999)
    result, _, provider = execute("(list (judge :x 1) (judge :x 2) (judge :x 3))", ['{"ok": true}'], templates={"judge": template})
    assert [r["status"] for r in result.content] == ["COMPLETE"] * 3 and provider.calls == 3


TOOL_TASK = """<task name="reader"><params><param name="path"/></params><tools><tool name="system:read_files"/></tools>
  <instructions>What is the first line of {{path}}?</instructions><limits turns="3"/></task>"""


def test_a_task_can_use_a_tool_and_each_use_costs_a_turn(tmp_path):
    (tmp_path / "notes.txt").write_text("the marker is ALPHA-7\n")
    replies = ['{"tool": "system:read_files", "args": {"paths": ["notes.txt"]}}', '{"result": "ALPHA-7"}']
    result, store, provider = execute("(reader :path \"notes.txt\")", replies, templates={"reader": TOOL_TASK}, workspace=tmp_path)
    assert result.ok and result.content == "ALPHA-7" and result.notes["turns"] == 2
    assert "ALPHA-7" in provider.requests[1].messages[-1]["content"]
    assert "ToolReturned" in types(store)


def test_a_failed_llm_call_is_a_failed_result(tmp_path):
    from actors.runtime.llm.types import LlmError

    class Down:
        def complete(self, request):
            raise LlmError("unreachable", "connection refused")

    result, store, _ = execute("(director :goal \"g\")", [], provider=Down())
    assert (result.status, result.error.type, result.error.reason) == ("FAILED", "llm_error", "unreachable")
    assert "LlmFailed" in types(store)


# -- the memory system --------------------------------------------------------------------------------


def test_matching_scores_come_from_the_task_and_the_highest_win():
    index = {"a.py": "replay of runs", "b.py": "event store", "c.py": "the CLI"}
    seen = {}

    def matcher(query, candidates):
        seen["query"], seen["candidates"] = query, candidates
        return complete({"matches": [{"path": "c.py", "score": 0.2}, {"path": "a.py", "score": 0.9}, {"path": "zzz", "score": 1}]})

    found = MemorySystem(index).get_relevant_context_for(ContextGenerationInput(query="how is replay done", max_results=2), matcher)
    assert found.paths == ["a.py", "c.py"] and found.error is None
    assert seen["candidates"] == "a.py: replay of runs\nb.py: event store\nc.py: the CLI"


def test_disable_context_leaves_the_inherited_context_out_of_the_matching_query():
    queries = []

    def matcher(query, candidates):
        queries.append(query)
        return complete({"matches": []})

    memory = MemorySystem({"a.py": "x"})
    memory.get_relevant_context_for(ContextGenerationInput(query="q", inherited_context="EARLIER"), matcher)
    memory.get_relevant_context_for(ContextGenerationInput(query="q", inherited_context="EARLIER", disable_context=True), matcher)
    assert "EARLIER" in queries[0] and "EARLIER" not in queries[1]


def test_a_failed_matching_task_is_reported_not_raised():
    found = MemorySystem({"a": "x"}).get_relevant_context_for(
        ContextGenerationInput(query="q"), lambda q, c: failed("llm_error", "timeout", "slow")
    )
    assert found.paths == [] and found.error.reason == "timeout"


def test_scores_best_and_shortlist_are_pure_and_careful():
    assert scores({"matches": [{"path": "a", "score": True}, {"path": "b", "score": "1"}, "junk", {"path": "a", "score": 0.5}]}, ["a", "b"]) == [("a", 0.5)]
    assert best([("a", 0.1), ("b", 0.0), ("c", 0.7), ("d", 0.7)], 2) == [("c", 0.7), ("d", 0.7)]
    index = {f"f{i}.py": "nothing" for i in range(50)} | {"replay.py": "replay runs from the log"}
    assert "replay.py" in shortlist(index, "how do I replay a run", 5) and len(shortlist(index, "q", 5)) == 5


def test_get_context_runs_the_associative_matching_task_and_returns_the_best_paths():
    index = {"docs/replay.md": "how replay works", "src/cli.py": "the command line"}
    match = json.dumps({"matches": [{"path": "docs/replay.md", "score": 0.8}]})
    result, store, provider = execute('(get_context :query "replay")', [match], index=index)
    assert result.content == ["docs/replay.md"]
    assert [e.task for e in store.read_stream(task_stream("w1")) if e.type_name == "TaskCalled"] == ["associative-match"]
    assert "docs/replay.md: how replay works" in provider.requests[0].messages[-1]["content"]


def test_a_fresh_context_template_reads_the_matched_files(tmp_path):
    (tmp_path / "notes.txt").write_text("the marker is ALPHA-7\n")
    fresh = "<task name='ask'><params><param name='q'/></params><context fresh='true'/><instructions>{{q}}</instructions></task>"
    match = json.dumps({"matches": [{"path": "notes.txt", "score": 1.0}]})
    result, _, provider = execute(
        '(ask :q "what is the marker?")', [match, "ALPHA-7"], templates={"ask": fresh},
        index={"notes.txt": "notes", "other.txt": "other"}, workspace=tmp_path,
    )  # fmt: skip
    assert result.ok and result.content == "ALPHA-7"
    assert "the marker is ALPHA-7" in provider.requests[1].messages[-1]["content"]


# -- passthrough (flow 1) -------------------------------------------------------------------------------


def test_a_question_gets_relevant_files_and_the_conversation_so_far(tmp_path):
    (tmp_path / "notes.txt").write_text("the marker is ALPHA-7\n")
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    match = json.dumps({"matches": [{"path": "notes.txt", "score": 0.9}]})
    result, _, provider = execute(
        "What is the marker?", [match, "It is ALPHA-7."], kind="query", history=history,
        index={"notes.txt": "notes for the test"}, workspace=tmp_path,
    )  # fmt: skip
    assert result.ok and result.content == "It is ALPHA-7." and result.notes["files"] == ["notes.txt"]
    assert "Context so far:\nuser: hi\nassistant: hello" in provider.requests[0].messages[-1]["content"]
    messages = provider.requests[1].messages
    assert "the marker is ALPHA-7" in messages[0]["content"]
    assert messages[1:] == [*history, {"role": "user", "content": "What is the marker?"}]


# -- replay and resume ----------------------------------------------------------------------------------


def test_a_recorded_workflow_replays_identically_with_no_live_calls():
    _, store, provider = execute(EXAMPLE.read_text(), director_evaluator_script(3), params={"goal": "g"})
    report = replay_run(store, "w1")
    assert report.ok, report.divergence.describe()
    assert (report.llm_calls, report.streams) == (6, [task_stream("w1")])
    assert report.events == len(store.read_stream(task_stream("w1")))


def test_replay_fails_closed_when_the_workflow_now_asks_something_else():
    _, store, _ = execute("(director :goal \"g\")", ["Draft."])
    started = store.read_stream(task_stream("w1"))[0]
    changed = {**started.templates, "director": started.templates["director"].replace("careful writer", "sloppy writer")}
    shell = ActorShell(WorkflowBehaviour(), "task:copy", EventStore("memory://"), run_id="copy").load()
    from actors.tasks.workflow import StartWorkflow, execute_workflow
    from actors.runtime.llm.types import ReplayDivergence

    shell.handle(StartWorkflow.from_event(started).model_copy(update={"templates": changed}))
    with pytest.raises(ReplayDivergence, match="replay diverged at LLM call 1"):
        execute_workflow(shell, ReplayEffects(store.read_stream(task_stream("w1"))))


def test_a_workflow_interrupted_mid_run_resumes_from_its_log_without_repeating_calls():
    class Crash(Exception):
        pass

    replies = director_evaluator_script(3)

    class CrashesAtCall4:
        def __init__(self):
            self.inner = ScriptedProvider(replies)

        def complete(self, request):
            if self.inner.calls == 3:
                raise Crash("the actor died")
            return self.inner.complete(request)

    store = EventStore("memory://")
    start = prepare(EXAMPLE.read_text(), params={"goal": "g"}, workspace=".")
    submit(store, "w1", start)
    with pytest.raises(Crash):
        serve(store, "w1", start, CrashesAtCall4())
    before = store.read_stream(task_stream("w1"))
    assert sum(e.type_name == "LlmCompleted" for e in before) == 3

    # Ray restarts the actor and re-sends serve: the log's three calls are served, not redone.
    rest = ScriptedProvider(replies[3:])
    run = ActorShell(RunLifecycle(), run_stream("w1"), store, run_id="w1").load()
    assert run.state.status == "failed"  # the crash was recorded on the run...
    shell = ActorShell(WorkflowBehaviour(), task_stream("w1"), store, run_id="w1").load()
    from actors.runtime.perform import LiveEffects, local_invoker
    from actors.runtime.llm.gateway import LlmGateway
    from actors.tasks.workflow import execute_workflow

    result = execute_workflow(shell, LiveEffects(LlmGateway(rest), local_invoker({})))  # ...the workflow resumes
    assert result.ok and result.content["rounds"] == 3 and rest.calls == 3
    after = store.read_stream(task_stream("w1"))
    assert after[: len(before)] == before
    assert sum(e.type_name == "LlmCompleted" for e in after) == 6
    assert [e.version for e in after] == list(range(1, len(after) + 1))
    assert task_result(store, "w1") == result


def test_only_workflows_that_can_call_a_model_need_one():
    assert not needs_llm(prepare('(system:run_script "ls")', workspace="."))
    assert not needs_llm(prepare("(+ 1 2)", workspace="."))
    assert needs_llm(prepare('(summarize-file :path "a")', workspace="."))
    assert needs_llm(prepare('(call "x")', workspace="."))
    assert needs_llm(prepare("summarize-file", workspace="."))
    assert not needs_llm(prepare("system:run_script", workspace="."))
    assert needs_llm(prepare("hello?", kind="query", workspace="."))


@pytest.mark.parametrize(
    "text, message",
    [
        ("(+ 1", r"line 1, column 1: the '\(' at line 1, column 1 is never closed"),
        ("   ", "nothing to run"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(text, message):
    with pytest.raises(ValueError, match=message):
        prepare(text, workspace=".")
    with pytest.raises(ValueError, match="neither an S-expression"):
        prepare("two words", kind="task", workspace=".")  # plain words are a request, not a task name


def test_bad_options_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="workspace folder"):
        prepare("(+ 1 2)", workspace=tmp_path / "missing")
    with pytest.raises(ValueError, match="limit max_steps must be a positive integer"):
        prepare("(+ 1 2)", workspace=".", limits={"max_steps": 0})
    (tmp_path / "index.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="must be a JSON object"):
        prepare("(+ 1 2)", workspace=".", index=tmp_path / "index.json")


def test_limits_from_the_start_apply_to_the_evaluator():
    result, _, _ = execute("(loop ((i 0)) (recur (+ i 1)))", [], limits={"max_steps": 50})
    assert result.error.reason == "step_limit" and "more than 50 steps" in result.error.message
