"""Cancelling a run: the lifecycle's `Cancel` (RunFailed, type `cancelled`, idempotent by
state), `Client.cancel` on the log, and the REPL's `/task` line with its options."""

from __future__ import annotations

import io
import os
import signal
import time

import pytest

from actors.codeqa.cli import follow_question
from actors.runtime.client import Client
from actors.runtime.console import CANCELLED, follow_run, sigterm_interrupts
from actors.runtime.errors import UserError
from actors.runtime.run import (
    Cancel,
    Complete,
    Fail,
    RunLifecycle,
    RunState,
    Start,
    Submit,
    UnknownRun,
    run_stream,
)
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.tasks.cli import parse_task_command
from events.errors import ErrorInfo
from events.store import EventStore


def lifecycle(store: EventStore, run_id: str = "r1") -> ActorShell:
    return ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()


def types(store: EventStore, run_id: str = "r1") -> list[str]:
    return [e.type_name for e in store.read_stream(run_stream(run_id))]


@pytest.mark.parametrize("started", [False, True])
def test_cancel_fails_a_submitted_or_running_run_as_cancelled_once(started):
    store = EventStore("memory://")
    run = lifecycle(store)
    run.handle(Submit(key="submit", goal="g"))
    if started:
        run.handle(Start(key="start", lead_stream="task:r1"))
    run.handle(Cancel(key="cancel"))
    run.handle(Cancel(key="cancel-again"))  # idempotent by state, whatever the key
    run.handle(Fail(key="finish", error=ErrorInfo(type="actor_died", reason="x", message="y")))
    run.handle(Complete(key="finish-2", result="late"))
    assert types(store)[-1] == "RunFailed" and types(store).count("RunFailed") == 1
    state = lifecycle(store).state
    assert state.status == "failed" and state.error.type == "cancelled"


def test_cancel_leaves_a_finished_run_as_it_ended():
    store = EventStore("memory://")
    run = lifecycle(store)
    run.handle(Submit(key="submit", goal="g"))
    run.handle(Complete(key="finish", result="done"))
    run.handle(Cancel(key="cancel"))
    assert types(store) == ["RunSubmitted", "RunCompleted"]


def test_client_cancel_records_the_cancellation_and_refuses_an_unknown_run(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'c.db'}")
    with Client(settings=settings) as client:
        client.begin_run("r1", goal="g", kind="task", params={})
        result = client.cancel("r1")
        again = client.cancel("r1")
        with pytest.raises(UnknownRun):
            client.cancel("nope")
        assert types(client.store) == ["RunSubmitted", "RunFailed"]
    assert result.status == "failed" and result.error.type == "cancelled" and again == result


@pytest.mark.parametrize(
    "line, expected",
    [
        ("--param x=1 summarize-file", ("summarize-file", {"x": 1})),
        ("summarize-file --param path=a.txt -p n=2", ("summarize-file", {"path": "a.txt", "n": 2})),
        ('summarize-file path="a b" --param=n=3', ("summarize-file", {"path": "a b", "n": 3})),
        ('system:run_script command="echo hi"', ("system:run_script", {"command": "echo hi"})),
        ("(call x :a 1)", ("(call x :a 1)", {})),
        ('-p goal="a haiku" (director :goal goal)', ("(director :goal goal)", {"goal": "a haiku"})),
    ],
)
def test_the_repl_task_line_reads_its_options(line, expected):
    assert parse_task_command(line) == expected


@pytest.mark.parametrize(
    "line, message",
    [
        ("", "needs an S-expression or a task name"),
        ("--param x=1", "needs an S-expression or a task name"),
        ("summarize-file --param", "--param needs KEY=VALUE"),
        ("summarize-file --bogus", "unknown option --bogus"),
        ("summarize-file other", "runs one task"),
        ("summarize-file --param novalue", "takes KEY=VALUE"),
        ('summarize-file path="open', "No closing quotation"),
    ],
)
def test_a_bad_repl_task_line_is_one_clear_error(line, message):
    with pytest.raises(UserError, match=message):
        parse_task_command(line)


# -- following a run on the terminal: Ctrl-C and SIGTERM cancel it ---------------------------


class InterruptedHandle:
    """A run being followed when the person presses Ctrl-C."""

    run_id = "r9"

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.client = self

    def run_state(self, run_id: str) -> RunState:
        return RunState(status="running")

    def events(self):
        raise KeyboardInterrupt
        yield

    def cancel(self, message: str = "") -> None:
        self.cancelled.append(message)


@pytest.mark.parametrize("follow", ["run", "ask"])
def test_an_interrupted_follow_cancels_the_run_says_so_and_exits_130(follow, capsys):
    handle = InterruptedHandle()
    err = io.StringIO()
    if follow == "run":
        status = follow_run(handle, quiet=True)
        err.write(capsys.readouterr().err)
    else:
        status = follow_question(handle, quiet=True, out=io.StringIO(), err=err)
    assert status == CANCELLED == 130
    assert len(handle.cancelled) == 1
    assert err.getvalue().strip().splitlines()[-1] == "chorus: run r9 cancelled"


def test_sigterm_interrupts_like_ctrl_c_while_following_and_is_restored_after():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # interrupted at once by the handler
    assert signal.getsignal(signal.SIGTERM) is before
