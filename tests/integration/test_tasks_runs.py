"""Task workflows (seed 001) as runs: on a real local Ray through the Client, through the
command line (exit codes, one-line errors, nothing written for bad input), in the REPL, and
replayed from a recorded fixture."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from actors import Client
from actors.runtime.llm.providers import ScriptedProvider
from actors.runtime.settings import Settings
from actors.tasks.cli import repl
from actors.tasks.client import run_task, submit_task
from actors.tasks.workflow import task_stream
from events.store import EventStore
from projections.fixtures import load_fixture
from projections.replay import replay_run
from tests.support.cli import chorus

EXAMPLE = Path(__file__).parents[2] / "actors" / "tasks" / "examples" / "director_evaluator.sexp"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_task_director_evaluator.jsonl"


def verdict(accepted: bool, feedback: str) -> str:
    return json.dumps({"accepted": accepted, "feedback": feedback})


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
        (("task", "two words"), "is neither an S-expression"),
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


# -- the recorded fixture -------------------------------------------------------------------------


def test_the_recorded_workflow_fixture_replays_identically():
    store, run_id = load_fixture(FIXTURE)
    with store:
        started = store.read_stream(task_stream(run_id))[0]
        report = replay_run(store, run_id)
    assert started.type_name == "WorkflowStarted" and started.kind == "sexp"
    assert report.ok, report.divergence.describe()
    assert (report.llm_calls, report.tool_calls, report.streams) == (4, 2, [task_stream(run_id)])
