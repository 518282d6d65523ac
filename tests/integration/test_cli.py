"""The `chorus` command as a person uses it: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from actors.agent.react import ReactAgent, StartAgent
from actors.runtime.agent_actor import agent_stream
from actors.runtime.effects import LiveEffects, drive, local_invoker
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import ScriptedProvider
from actors.runtime.run import Complete, RunLifecycle, Start, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.tools.files import ReadFile, SearchFiles
from events.agent import ToolSpec
from events.store import EventStore
from tests.support import fake_llm


def chorus(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "actors.runtime.cli", *args],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=timeout,
    )  # fmt: skip


@pytest.fixture
def env(tmp_path):
    return {
        "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'chorus.db'}",
    }


def record_run(store_url: str, root, run_id: str = "abc123") -> None:
    """A finished run written the way the runtime writes one (in-process, no Ray)."""
    fake_llm.make_repo(root)
    with EventStore(store_url) as store:
        run = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
        run.handle(Submit(key="submit", goal="What is the marker?"))
        agent = ActorShell(ReactAgent(), agent_stream(run_id), store, run_id=run_id).load()
        tools = {"search_files": SearchFiles(root=str(root)), "read_file": ReadFile(root=str(root))}
        specs = [ToolSpec(name=n, signature=t.signature(), description=t.description) for n, t in tools.items()]
        agent.handle(StartAgent(key="start", goal="What is the marker?", root=str(root), tools=specs))
        run.handle(Start(key="start", lead_stream=agent.stream_id))
        state = drive(agent, LiveEffects(LlmGateway(ScriptedProvider(fake_llm.search_read_answer)), local_invoker(tools)))
        run.handle(Complete(key="finish", result=state.answer))


def positions(store_url: str) -> int:
    with EventStore(store_url) as store:
        return store.max_position()


def test_events_and_runs_show_a_recorded_run(env, tmp_path):
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    out = chorus("events", "abc123", "--json", env=env)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows[0]["type"] == "RunSubmitted" and rows[-1]["type"] == "RunCompleted"
    assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
    assert {"position", "stream", "version", "type", "run_id", "timestamp", "data"} <= set(rows[0])
    assert all(r["run_id"] == "abc123" for r in rows)
    tool = next(r for r in rows if r["type"] == "ToolReturned")
    assert "ALPHA-7" in tool["data"]["output"]

    text = chorus("events", "abc123", env=env)
    assert "StepDecided" in text.stdout and "search_files" in text.stdout

    listed = chorus("runs", env=env)
    assert listed.returncode == 0
    assert "abc123" in listed.stdout and "completed" in listed.stdout


def test_unknown_run_id_is_one_line_and_writes_nothing(env, tmp_path):
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    before = positions(env["CHORUS_STORE_URL"])
    out = chorus("events", "nope", env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == "chorus: error: no run with id 'nope'"
    assert positions(env["CHORUS_STORE_URL"]) == before


def test_unreachable_store_is_one_line(env):
    env = {**env, "CHORUS_STORE_URL": "postgresql://postgres@127.0.0.1:1/nowhere"}
    out = chorus("runs", env=env)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("chorus: error: cannot open event store")


def test_llm_endpoint_down_fails_before_anything_is_written(env, tmp_path):
    env = {**env, "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    out = chorus("run", "What is here?", "--root", str(tmp_path), env=env)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "unreachable" in out.stderr
    assert positions(env["CHORUS_STORE_URL"]) == 0


def test_missing_root_folder_is_one_line(env, tmp_path):
    env = {**env, "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    out = chorus("run", "What is here?", "--root", str(tmp_path / "missing"), env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == f"chorus: error: root folder {tmp_path / 'missing'} does not exist"
    assert positions(env["CHORUS_STORE_URL"]) == 0


def test_no_runs_yet(env):
    out = chorus("runs", env=env)
    assert (out.returncode, out.stdout.strip()) == (0, "no runs yet")
