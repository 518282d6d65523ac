"""Recovery of a relay (issue 34, seed 004): a relay process killed after a checkpoint is
resumed by `chorus resume` and completes; an escalated item leaves the workspace (the log's
fold and the git mirror) at the last checkpoint; escalations are listed and resolved by a
person (`chorus escalations`, `chorus resolve`, EscalationResolved); probes set on the run
reach the Verifier. Scripted models, the real verifier, a real SQLite file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import actors.relay.kind  # noqa: F401  (registers the relay run kind)
from actors.cli.main import main
from actors.relay import escalations, session
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import scheduler_stream, verifier_stream
from actors.relay.workspace import fold_workspace
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from events.effects import ToolCalled
from actors.relay.events import (
    CheckpointStored,
    EscalationRaised,
    EscalationResolved,
    RoadmapCompleted,
)
from events.store import EventStore
from tests.support import relay_llm

ROOT = Path(__file__).parents[2]
SERVE = """
import sys
from actors.relay import session
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from tests.support import relay_llm

run_id, workspace, roadmap = sys.argv[1:4]
with Client(settings=Settings.from_env(), start_ray=False, llm=ScriptedProvider(relay_llm.slow_model)) as client:
    session.start_relay(client, "arithmetic", run_id=run_id, workspace=workspace, roadmap=roadmap)
    session.serve_relay(client, run_id)
"""


def wrong_mul(request):
    """The scripted model, except that mul is always a + b: item 2 escalates."""
    text = relay_llm.model(request)
    return text.replace("return a * b", "return a + b")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    (tmp_path / "ws").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "roadmap.yaml").write_text(relay_llm.ROADMAP)
    return tmp_path


def test_a_relay_killed_after_a_checkpoint_is_resumed_and_completes(env, monkeypatch, capsys):
    run_id = "killed1"
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, run_id, str(env / "ws"), str(env / "roadmap.yaml")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
        start_new_session=True,
    )  # fmt: skip
    settings = Settings.from_env()
    try:
        deadline = time.monotonic() + 120  # a safety net, not a measurement
        with EventStore(settings.store_url) as store:
            while not any(isinstance(e, CheckpointStored) for e in _events(store, run_id)):
                assert proc.poll() is None, "the relay process ended before its first checkpoint"
                assert time.monotonic() < deadline, "no checkpoint in 120 s"
                time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)  # item 2's build is in progress (slow_model)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    with Client(settings=settings, start_ray=False) as client:
        assert client.run_state(run_id).status == "running"  # nothing serves it: resume is the remedy
    monkeypatch.setattr(session, "provider_for", lambda client: ScriptedProvider(relay_llm.model))
    assert main(["resume", run_id, "--quiet"]) == 0
    assert f"run {run_id} resumed" in capsys.readouterr().out

    with Client(settings=settings, start_ray=False) as client:
        assert client.run_state(run_id).status == "completed"
        events = _events(client.store, run_id)
        done = [e for e in events if isinstance(e, RoadmapCompleted)]
        assert len(done) == 1 and done[0].passed == 2
        assert sum(isinstance(e, CheckpointStored) for e in events) == 2  # each once
        files = fold_workspace(events)
        assert GitWorkspace(env / "ws").tree_files() == files
        assert set(files) == {"calc_add.py", "test_add.py", "calc_mul.py", "test_mul.py"}
        with pytest.raises(ValueError, match="has completed: there is nothing to resume"):
            client.resume(run_id)


def test_an_escalated_item_leaves_the_workspace_at_the_last_checkpoint_and_a_person_resolves_it(env, capsys):
    settings = Settings.from_env()
    with Client(settings=settings, start_ray=False, llm=ScriptedProvider(wrong_mul)) as client:
        session.start_relay(
            client, "arithmetic", run_id="esc1", workspace=env / "ws", roadmap=env / "roadmap.yaml", max_retries=0
        )
        state = session.serve_relay(client, "esc1")
        assert (state.passed, state.escalated) == (1, 1)
        events = _events(client.store, "esc1")
        checkpoint = next(e for e in events if isinstance(e, CheckpointStored))
        at_checkpoint = {"calc_add.py", "test_add.py"}
        assert set(checkpoint.files) == at_checkpoint
        assert set(fold_workspace(events)) == at_checkpoint  # the failed mul is gone from the log's fold
        on_disk = {p.name for p in (env / "ws").iterdir() if p.is_file()}
        assert on_disk == at_checkpoint  # and from the working tree the git mirror keeps
        assert set(GitWorkspace(env / "ws").tree_files()) == at_checkpoint
        (raised,) = [e for e in events if isinstance(e, EscalationRaised)]
        assert sorted(raised.metadata["rolled_back"]) == ["calc_mul.py", "test_mul.py"]

        (listed,) = escalations.escalations(client, "esc1")
        assert listed["escalation_id"] == raised.escalation_id and not listed["resolved"]
        assert listed["item"] == 2 and listed["title"].startswith("Write mul")

    assert main(["escalations", "esc1"]) == 0
    out = capsys.readouterr().out
    assert f"{raised.escalation_id}  [OPEN]" in out and "rolled back: calc_mul.py, test_mul.py" in out
    assert main(["resolve", "esc1", raised.escalation_id, "--note", "wrote mul by hand", "--by", "ada"]) == 0
    assert "resolved by ada: wrote mul by hand" in capsys.readouterr().out
    assert main(["resolve", "esc1", "esc1:escalation:9", "--note", "x"]) == 2  # one line, nothing written
    assert main(["escalations", "--open"]) == 0
    assert "no open escalations" in capsys.readouterr().out
    with EventStore(settings.store_url) as store:
        (resolved,) = [e for e in _events(store, "esc1") if isinstance(e, EscalationResolved)]
        assert (resolved.resolution, resolved.resolved_by) == ("wrote mul by hand", "ada")


def test_probes_set_on_the_run_reach_the_verifier(env):
    probes = {"imports": [sys.executable, "-c", "import calc_add"], "fails": ["false"]}
    with Client(settings=Settings.from_env(), start_ray=False, llm=ScriptedProvider(relay_llm.model)) as client:
        with pytest.raises(ValueError, match="non-empty list"):
            session.check_input("g", env / "ws", None, 1, probes={"x": []})
        session.start_relay(
            client, "g", run_id="probe1", workspace=env / "ws", roadmap=env / "roadmap.yaml",
            max_retries=0, probes=probes,
        )  # fmt: skip
        assert client.run_state("probe1").params["probes"] == probes
        state = session.serve_relay(client, "probe1")
        assert state.escalated == 2  # the failing probe fails every turn
        called = {e.tool for e in client.store.read_stream(verifier_stream("probe1")) if isinstance(e, ToolCalled)}
        assert {"probe:imports", "probe:fails"} <= called


def _events(store, run_id):
    return list(store.read_stream(scheduler_stream(run_id)))
