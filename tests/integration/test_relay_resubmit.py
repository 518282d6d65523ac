"""The resubmit hook (seed 004's `_resubmit_to_app`, actors.relay.resubmit) in served relays
on a SQLite file with a scripted model: after each checkpoint a command runs in the
workspace in the sandbox, or a callable is called, and its outcome is recorded as
AppResubmitted; a failing hook is recorded and the relay goes on; neither a resumed relay
nor a replay runs it again; a scheduler that died before its hook runs it on resuming;
`chorus relay --resubmit CMD` shows it in the progress."""

from __future__ import annotations

import shlex
import sys

import pytest

from actors.cli.main import main
from actors.relay import session
from actors.relay.recording import builder_stream, scheduler_stream, verifier_stream
from actors.relay.resubmit import hook_spec, resubmit_stream
from actors.relay.run import drive_relay
from actors.relay.scheduler import SchedulerBehaviour
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.relay.events import AppResubmitted, CheckpointStored
from events.store import EventStore
from tests.integration.test_relay_cli import model as fails_once
from tests.support import relay_llm

LIST_FILES = [sys.executable, "-c", "import os; print(' '.join(sorted(os.listdir('.'))))"]
FAIL = [sys.executable, "-c", "import sys; print('the app said no'); sys.exit(3)"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    (tmp_path / "ws").mkdir()
    (tmp_path / "roadmap.yaml").write_text(relay_llm.ROADMAP)
    with Client(settings=Settings.from_env(), start_ray=False, llm=ScriptedProvider(relay_llm.model)) as client:
        yield client, tmp_path  # two items, each passed at its first turn


def start(client, tmp_path, run_id, resubmit):
    session.start_relay(
        client,
        "arithmetic",
        run_id=run_id,
        workspace=tmp_path / "ws",
        roadmap=tmp_path / "roadmap.yaml",
        resubmit=resubmit,
    )


def outcomes(store, run_id) -> list[AppResubmitted]:
    return [e for e in store.read_stream(resubmit_stream(run_id)) if isinstance(e, AppResubmitted)]


def test_a_command_runs_in_the_workspace_after_each_checkpoint_once(env):
    client, tmp = env
    start(client, tmp, "hook1", LIST_FILES)
    assert client.run_state("hook1").params["resubmit"] == LIST_FILES
    seen = []
    state = session.serve_relay(client, "hook1", on_event=seen.append)
    assert (state.status, state.passed) == ("done", 2)
    done = outcomes(client.store, "hook1")
    checkpoints = [e for e in client.store.read_stream(scheduler_stream("hook1")) if isinstance(e, CheckpointStored)]
    assert [d.checkpoint_id for d in done] == [c.checkpoint_id for c in checkpoints]
    assert all(d.ok and d.returncode == 0 for d in done)
    # it ran in the workspace, as each checkpoint left it
    assert "calc_add.py" in done[0].output and "calc_mul.py" not in done[0].output
    assert "calc_mul.py" in done[1].output
    assert done[0].hook == shlex.join(LIST_FILES)
    assert [e for e in seen if isinstance(e, AppResubmitted)] == done  # reported as it happened
    # served again, or replayed: nothing runs again
    session.serve_relay(client, "hook1")
    assert outcomes(client.store, "hook1") == done
    report = replay_run(client.store, "hook1")
    assert report.ok, report.divergence and report.divergence.describe()
    assert outcomes(client.store, "hook1") == done


def test_a_failing_command_or_callable_is_recorded_and_the_relay_goes_on(env):
    client, tmp = env
    start(client, tmp, "hook2", FAIL)
    state = session.serve_relay(client, "hook2")
    assert (state.status, state.passed) == ("done", 2)
    first = outcomes(client.store, "hook2")[0]
    assert (first.ok, first.returncode, first.error) == (False, 3, "exit status 3")
    assert "the app said no" in first.output
    assert client.run_result("hook2").status == "completed"

    def refuse(checkpoint, workspace):
        raise RuntimeError(f"the app is down ({checkpoint.checkpoint_id})")

    (tmp / "ws2").mkdir()
    session.start_relay(
        client, "arithmetic", run_id="hook3", workspace=tmp / "ws2", roadmap=tmp / "roadmap.yaml", resubmit=refuse
    )
    state = session.serve_relay(client, "hook3")
    assert (state.status, state.passed) == ("done", 2)
    refused = outcomes(client.store, "hook3")
    assert [r.ok for r in refused] == [False, False]
    assert refused[0].error == "RuntimeError: the app is down (hook3:checkpoint:1)"
    assert refused[0].hook.endswith("refuse")


def test_a_callable_gets_the_checkpoint_and_the_workspace(env):
    client, tmp = env
    calls = []

    def hook(checkpoint, workspace):
        calls.append((checkpoint.checkpoint_id, sorted(p.name for p in workspace.glob("*.py"))))
        return f"resubmitted {len(calls)}"

    start(client, tmp, "hook4", hook)
    session.serve_relay(client, "hook4")
    assert calls == [
        ("hook4:checkpoint:1", ["calc_add.py", "test_add.py"]),
        ("hook4:checkpoint:2", ["calc_add.py", "calc_mul.py", "test_add.py", "test_mul.py"]),
    ]
    assert [o.output for o in outcomes(client.store, "hook4")] == ["resubmitted 1", "resubmitted 2"]


def test_a_scheduler_that_died_before_its_hook_runs_it_on_resuming(env):
    """The turns were driven, checkpoints and all, by a scheduler that never ran the hook
    (it died first): serving the run runs the hook once for each checkpoint left without."""
    client, tmp = env
    calls = []
    start(client, tmp, "hook5", lambda checkpoint, workspace: calls.append(checkpoint.checkpoint_id))
    turns = session.local_turns(client, "hook5")("hook5", {})
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream("hook5"), client.store, run_id="hook5").load()
    drive_relay(shell, *turns)  # no hook here: the scheduler "died" after its checkpoints
    assert calls == [] and outcomes(client.store, "hook5") == []
    session.serve_relay(client, "hook5")
    assert calls == ["hook5:checkpoint:1", "hook5:checkpoint:2"]
    session.serve_relay(client, "hook5")
    assert len(calls) == 2


def test_bad_hooks_are_refused_before_anything_is_written(env):
    client, tmp = env
    for bad, message in (([], "empty"), ("make deploy", "list of arguments")):
        with pytest.raises(ValueError, match=message):
            start(client, tmp, "bad", bad)
    assert list(client.store.read_all()) == []
    assert hook_spec(None) is None and hook_spec(("a", 1)) == ["a", "1"]


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    monkeypatch.setattr(session, "provider_for", lambda client: ScriptedProvider(fails_once))
    (tmp_path / "ws").mkdir()
    (tmp_path / "roadmap.yaml").write_text(relay_llm.ONE_ITEM)
    return tmp_path


def test_chorus_relay_resubmit_shows_the_hook_in_the_progress(cli_env, capsys):
    tmp = cli_env
    argv = ["relay", "arithmetic", "--workspace", str(tmp / "ws"), "--roadmap", str(tmp / "roadmap.yaml")]
    assert main([*argv, "--resubmit", f"{sys.executable} -c 'print(42)'"]) == 0
    out, err = capsys.readouterr()
    run_id = next(line.split()[1] for line in out.splitlines() if line.startswith("relay "))
    assert f"resubmitted {run_id}:checkpoint:2: {sys.executable} -c 'print(42)'" in err
    with EventStore(Settings.from_env().store_url) as store:
        (done,) = outcomes(store, run_id)
        assert done.ok and done.output == "42"
        assert store.stream_version(builder_stream(run_id)) and store.stream_version(verifier_stream(run_id))

    (tmp / "ws2").mkdir()
    argv[3] = str(tmp / "ws2")
    assert main([*argv, "--resubmit", "false"]) == 0  # a failing hook: reported, the relay goes on
    out, err = capsys.readouterr()
    assert "RESUBMIT FAILED" in err and "exit status 1" in err
    assert out.strip().endswith("1 of 1 roadmap items passed, 0 escalated")


@pytest.mark.parametrize("bad, message", [("", "empty"), ("'unbalanced", "quotation")])
def test_a_bad_resubmit_command_is_one_line_and_nothing_written(cli_env, capsys, bad, message):
    tmp = cli_env
    args = ["relay", "g", "--workspace", str(tmp / "ws"), "--roadmap", str(tmp / "roadmap.yaml"), "--resubmit", bad]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp / "ws" / ".git").exists()


def test_client_submit_takes_a_resubmit_command(env):
    """Needs RelayRun.submit (actors/relay/kind.py) to accept the `resubmit` option."""
    client, tmp = env
    handle = client.submit(
        "arithmetic", kind="relay", workspace=str(tmp / "ws"), roadmap=str(tmp / "roadmap.yaml"), resubmit=LIST_FILES
    )
    assert handle.wait(timeout=120).status == "completed"
    assert [o.ok for o in outcomes(client.store, handle.run_id)] == [True, True]
