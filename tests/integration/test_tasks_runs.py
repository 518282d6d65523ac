"""Task workflows (seed 001) as runs: on a real local Ray through the Client, through the
command line (exit codes, one-line errors, nothing written for bad input), in the REPL, and
replayed from a recorded fixture; forked at a position and diffed against the original."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from actors import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.tasks.cli import repl
from actors.tasks.client import run_task, submit_task
from actors.tasks.workflow import task_stream
from events.store import EventStore
from actors.runtime.replay import diff_runs
from actors.runtime.replay import load_fixture
from actors.runtime.replay import replay_run
from tests.support import recording
from tests.support.cli import chorus
from tests.support.task_scripts import EXAMPLE, verdict

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_task_director_evaluator.jsonl"


# -- through the Client on Ray -------------------------------------------------------------------


@pytest.fixture
def client(ray_local, tmp_path):
    def make(replies):
        settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
        return Client(settings=settings, llm=ScriptedProvider(replies))

    return make


@pytest.mark.ray
def test_the_director_evaluator_example_runs_as_a_run_on_ray(client, tmp_path):
    replies = ["Draft 1.", verdict(False, "more"), "Draft 2.", verdict(False, "less"), "Draft 3.", verdict(True, "good")]
    with client(replies) as c:
        run = submit_task(c, EXAMPLE.read_text(), params={"goal": "a haiku"}, workspace=tmp_path)
        seen = [rec.event.type_name for rec in run.events()]  # live, until the run ends
        outcome = run.wait(timeout=120)
        records = c.events(run.run_id)
        rows = c.runs()
    assert outcome.ok and json.loads(outcome.answer)["rounds"] == 3
    assert seen[0] == "RunSubmitted" and seen[-1] == "RunCompleted"
    assert {r.event.stream_id for r in records} == {f"run:{run.run_id}", task_stream(run.run_id)}
    assert sum(t == "LlmCompleted" for t in seen) == 6 and "StepEvaluated" in seen
    assert rows[0]["run_id"] == run.run_id and rows[0]["status"] == "completed"
    with EventStore(c.settings.store_url) as store:
        report = replay_run(store, run.run_id)
    assert report.ok and report.llm_calls == 6


@pytest.mark.ray
def test_run_task_returns_the_task_result(client, tmp_path):
    (tmp_path / "notes.txt").write_text("the marker is ALPHA-7\n")
    with client(["A file with a marker."]) as c:
        result = run_task(c, "summarize-file", params={"path": "notes.txt"}, workspace=tmp_path, timeout=120)
        failed = run_task(c, "summarize-file", params={"path": "missing.txt"}, workspace=tmp_path, timeout=120)
    assert result.ok and result.content == "A file with a marker."
    assert failed.status == "FAILED" and failed.error.reason == "read_failed" and "missing.txt" in failed.error.message


@pytest.mark.ray
def test_the_repl_runs_tasks_and_keeps_the_conversation(client, tmp_path):
    (tmp_path / "notes.txt").write_text("the marker is ALPHA-7\n")
    stdin = io.StringIO(
        "/task (+ 1\n  2)\n"  # a workflow over two lines
        "/task system:run_script command=\"echo hi\"\n"
        "What is the marker?\n"
        "And again?\n"
        "/task (+ 1 2))\n"
        "/nope\n"
        "/history\n"
        "/exit\n"
    )
    stdout = io.StringIO()
    with client(["It is ALPHA-7."]) as c:  # each run's actor gets its own copy of the script
        code = repl(c, {"workspace": tmp_path}, stdin, stdout, quiet=True)
        newest = c.runs()[0]["run_id"]
        asked = [r.event for r in c.events(newest) if r.event.type_name == "LlmRequested"][-1]
    out = stdout.getvalue()
    assert code == 0
    assert "content: 3" in out and "content: hi" in out
    assert "error: line 1, column 8: unexpected ')'" in out
    assert "error: unknown command /nope" in out
    assert "user: What is the marker?\nassistant: It is ALPHA-7.\nuser: And again?" in out
    # The second question carried the first exchange as conversation history.
    assert [m["content"] for m in asked.messages[1:]] == ["What is the marker?", "It is ALPHA-7.", "And again?"]


# -- the command line -------------------------------------------------------------------------------




runtime = chorus  # the runtime commands (replay, log, events) on task runs


@pytest.fixture
def env(tmp_path):
    # No model is configured: none of these workflows can call one, so none is started.
    return {
        "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'chorus.db'}",
        "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    }


def positions(env) -> int:
    with EventStore(env["CHORUS_STORE_URL"]) as store:
        return store.max_position()


@pytest.mark.ray
def test_cli_runs_a_workflow_shows_its_steps_and_prints_the_result(env, tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    out = chorus(
        "task", '(let ((n (system:run_script "wc -l < notes.txt"))) (if (ok? n) (int (get n :content)) n))',
        "--workspace", str(tmp_path), env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    run_line, *result = out.stdout.splitlines()
    assert run_line.startswith("run ") and result == ["status:  COMPLETE", "content: 2"]
    assert "· (let ((n" in out.stderr and "tool system:run_script" in out.stderr and "finished COMPLETE" in out.stderr
    run_id = run_line.split()[1]
    replayed = runtime("replay", run_id, env=env)
    assert replayed.returncode == 0 and "identical" in replayed.stdout and "0 live calls" in replayed.stdout
    log = runtime("log", run_id, env=env)
    assert log.returncode == 0 and "tool call 1: system:run_script" in log.stdout
    events = runtime("events", run_id, "--json", env=env)
    kinds = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    assert kinds[0] == "RunSubmitted" and "WorkflowStarted" in kinds and kinds[-1] == "RunCompleted"


@pytest.mark.ray
@pytest.mark.parametrize(
    "workflow, reason, where",
    [
        ("(frobnicate 1 2)", "unknown_symbol", "line 1, column 2: unknown symbol 'frobnicate'"),
        ("(list 1\n  ((lambda (a b) a) 1))", "arity", "line 2, column 3: lambda takes 2 argument(s)"),
        ("(defn f (x) (f x)) (f 1)", "depth_limit", "nested deeper than"),
    ],
)
def test_cli_workflow_mistakes_fail_the_run_with_where_and_why(env, workflow, reason, where):
    out = chorus("task", workflow, "-q", env=env)
    assert out.returncode == 1
    assert "status:  FAILED" in out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("chorus: run ") and f"failed: sexp_error ({reason}): " in last and where in last


@pytest.mark.ray
def test_cli_a_hanging_script_is_killed_at_its_timeout_and_nothing_is_left_running(env, tmp_path):
    marker = f"sleep 7{os.getpid() % 100}1"
    out = chorus("task", f'(system:run_script "{marker} & {marker}" :timeout 1)', "-q", env=env)
    assert out.returncode == 1
    assert "script_error (timeout): the script did not finish within 1s" in out.stderr
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (("task", '(let ((x 1)) (+ x 2)'), "chorus: error: line 1, column 1: the '(' at line 1, column 1 is never closed"),
        (("task", "(+ 1 2))"), "chorus: error: line 1, column 8: unexpected ')' with no '(' to close"),
        (("task", '(str "abc)'), "chorus: error: line 1, column 6: the string starting at line 1, column 6 is never closed"),
        (("task", "summarize-file", "--templates", "BAD"), "bad.xml: not well-formed XML at line 1, column 36: mismatched tag"),
        (("task", "summarize-file", "--templates", "NOWHERE"), "does not exist"),
        (("task", "x", "--param", "novalue"), "--param takes KEY=VALUE"),
        (("task",), "give an S-expression, a task or tool name"),
        (("task", "(+ 1 2)", "--max-steps", "0"), "limit max_steps must be a positive integer"),
        (("task", "--file", "MISSING"), "cannot read"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(env, tmp_path, args, message):
    bad = tmp_path / "templates"
    bad.mkdir()
    (bad / "bad.xml").write_text("<task name='x'><instructions>oops</task>")
    swap = {"BAD": str(bad), "NOWHERE": str(tmp_path / "nowhere"), "MISSING": str(tmp_path / "missing.sexp")}
    out = chorus(*(swap.get(a, a) for a in args), env=env)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr
    assert out.stdout == ""
    assert not (tmp_path / "chorus.db").exists() or positions(env) == 0


# -- forking and diffing task runs -----------------------------------------------------------------


def nth(records, type_name, n):
    return [r for r in records if r.event.type_name == type_name][n - 1]


@pytest.mark.ray
def test_a_forked_workflow_serves_the_recorded_prefix_and_continues_live_on_ray(client, ray_local, tmp_path):
    original_script = ["Draft 1.", verdict(False, "more"), "Draft 2.", verdict(False, "less")]
    original_script += ["Draft 3.", verdict(True, "good")]
    with client(original_script) as c:
        original = submit_task(c, EXAMPLE.read_text(), params={"goal": "a haiku"}, workspace=tmp_path)
        assert original.wait(timeout=120).ok
        records = c.events(original.run_id)
    at = nth(records, "LlmCompleted", 2).position  # the evaluator wanted more
    with client(["Draft B.", verdict(True, "fine")]) as c:
        fork = c.fork(original.run_id, at, model="another-model")
        outcome = fork.wait(timeout=120)
        # The fork's own scripted model, asked in its actor: how many live calls it served.
        live_calls = ray_local.get(fork._actor.__ray_call__.remote(lambda actor: actor.provider.calls))
        forked = [r.event for r in c.events(fork.run_id)]
        after = c.events(original.run_id)
        diff = diff_runs(c.store, original.run_id, fork.run_id)
        report = replay_run(c.store, fork.run_id)

    assert outcome.ok and json.loads(outcome.answer) == {"draft": "Draft B.", "rounds": 2, "feedback": "fine"}
    assert live_calls == 2  # calls 3 and 4; calls 1 and 2 were served from the recording
    assert [r.event.event_id for r in after] == [r.event.event_id for r in records]  # untouched
    assert forked[0].type_name == "RunSubmitted" and forked[0].forked_from == f"{original.run_id}@{at}"
    workflow = [e for e in forked if e.stream_id == task_stream(fork.run_id)]
    assert [e.type_name for e in workflow[:2]] == ["WorkflowStarted", "WorkflowForked"]
    completions = [e.content for e in workflow if e.type_name == "LlmCompleted"]
    assert completions == ["Draft 1.", verdict(False, "more"), "Draft B.", verdict(True, "fine")]
    asked = [e.model for e in workflow if e.type_name == "LlmRequested"]
    assert asked[2:] == ["another-model", "another-model"] and "another-model" not in asked[:2]
    assert report.ok, report.divergence.describe()
    # They part at the first live call: the same question, sent to another model.
    assert diff.kind == "workflow" and diff.first_a.type_name == diff.first_b.type_name == "LlmRequested"
    assert (diff.first_a.call_index, diff.first_b.model) == (3, "another-model")


COUNT = "echo x >> count.txt; wc -l < count.txt"
TWO_SCRIPTS = (
    f'(let ((a (system:run_script "{COUNT}"))) '
    f'(let ((b (system:run_script "{COUNT}"))) (list (get a :content) (get b :content))))'
)


def log_of(env, run_id):
    with EventStore(env["CHORUS_STORE_URL"]) as store:
        return list(store.read_all(run_id=run_id))


@pytest.mark.ray
def test_cli_fork_replay_log_and_diff_of_a_task_run(env, tmp_path):
    out = chorus("task", TWO_SCRIPTS, "--workspace", str(tmp_path), "-q", env=env)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[1]
    records = log_of(env, run_id)
    at = nth(records, "ToolReturned", 1).position

    forked = chorus("fork", run_id, "--at", str(at), env=env)
    assert forked.returncode == 0, forked.stderr
    first, answer = forked.stdout.strip().splitlines()
    assert first.endswith(f"(forked from {run_id} at position {at})")
    # The first script was served from the log (it would have counted 3); the second ran.
    assert json.loads(answer) == ["1\n", "3\n"]
    assert (tmp_path / "count.txt").read_text() == "x\nx\nx\n"
    assert f"forked from run {run_id} at position {at}: its first 0 LLM call(s) and 1 tool call(s)" in forked.stderr
    new_id = first.split()[1]
    assert [r.event.event_id for r in log_of(env, run_id)] == [r.event.event_id for r in records]

    replayed = chorus("replay", new_id, env=env)
    assert replayed.returncode == 0 and "identical" in replayed.stdout and "0 live calls" in replayed.stdout
    log = chorus("log", new_id, env=env)
    assert log.returncode == 0 and f"forked from run {run_id}" in log.stdout
    diff = chorus("diff", run_id, new_id, env=env)
    assert diff.returncode == 0, diff.stderr
    head, a, b, *_ = diff.stdout.splitlines()
    second = nth(records, "ToolReturned", 2).event.version
    assert head == f"{run_id} and {new_id}: the workflows share their first {second - 1} events"
    assert f'@{second} ToolReturned {{"tool": "system:run_script", "call_index": 2' in a
    assert f"@{second + 1} ToolReturned" in b  # + its WorkflowForked mark
    assert '\\"stdout\\": \\"2\\\\n\\"' in a and '\\"stdout\\": \\"3\\\\n\\"' in b
    assert f"a fork of {run_id}@{at}" in diff.stdout
    listed = {line.split()[0]: line for line in chorus("runs", env=env).stdout.splitlines()}
    assert listed[new_id].split()[3:5] == ["completed", "task"]
    assert listed[new_id].endswith(f"(fork of {run_id}@{at})") and "fork of" not in listed[run_id]


@pytest.mark.ray
def test_cli_fork_and_diff_refuse_bad_input_in_one_line(env, tmp_path):
    out = chorus("task", TWO_SCRIPTS, "--workspace", str(tmp_path), "-q", env=env)
    run_id = out.stdout.split()[1]
    records = log_of(env, run_id)
    with EventStore(env["CHORUS_STORE_URL"]) as store:
        recording.record_run(store, tmp_path, run_id="agentrun")
    before = positions(env)
    finished = nth(records, "WorkflowFinished", 1).position
    for args, message in [
        (("fork", run_id, "--at", "0"), f"chorus: error: position 0 is outside run {run_id} (its workflow spans "),
        (("fork", run_id, "--at", str(before + 5)), f"position {before + 5} is outside run {run_id}"),
        (("fork", run_id, "--at", str(finished)), f"the workflow of run {run_id} had finished by position {finished}"),
        (("fork", "nope", "--at", "3"), "chorus: error: no run with id 'nope'"),
        (("diff", run_id, "agentrun"), f"run {run_id} is a task workflow run and run agentrun an agent run"),
    ]:
        result = chorus(*args, env=env)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
        assert result.stdout == ""
    assert positions(env) == before  # nothing written


# -- the recorded fixture -------------------------------------------------------------------------


def test_the_recorded_workflow_fixture_replays_identically():
    store, run_id = load_fixture(FIXTURE)
    with store:
        started = store.read_stream(task_stream(run_id))[0]
        report = replay_run(store, run_id)
    assert started.type_name == "WorkflowStarted" and started.kind == "sexp"
    assert report.ok, report.divergence.describe()
    assert (report.llm_calls, report.tool_calls, report.streams) == (4, 2, [task_stream(run_id)])
