"""The relay served on a real local Ray instance with a scripted model and a SQLite file:
the RelayActor is the Scheduler, the Builder's and the Verifier's turns run on actors of
their own, and a scheduler killed mid-turn is restarted by Ray and resumes from the log
without repeating a finished turn."""

from __future__ import annotations

import os
import sys
import time

import pytest

from actors.relay.recording import builder_stream, scheduler_stream, verifier_stream
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from events.effects import LlmCompleted, LlmRequested, ToolReturned
from actors.relay.events import BatonPassed, CheckpointStored, RoadmapCompleted, TurnVerified
from tests.support import relay_llm

pytestmark = pytest.mark.ray


@pytest.fixture
def relay(ray_local, tmp_path):
    """Submit a relay on Ray with a scripted model: (client, handle, workspace)."""
    clients: list[Client] = []

    def submit(script, roadmap: str):
        settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
        client = Client(settings=settings, llm=ScriptedProvider(script))
        clients.append(client)
        (tmp_path / "ws").mkdir()
        (tmp_path / "roadmap.yaml").write_text(roadmap)
        handle = client.submit(
            "arithmetic",
            kind="relay",
            workspace=str(tmp_path / "ws"),
            roadmap=str(tmp_path / "roadmap.yaml"),
            ray=True,
        )
        return client, handle, tmp_path / "ws"

    yield submit
    for c in clients:
        c.close()


def of_type(store, stream, cls):
    return [e for e in store.read_stream(stream) if isinstance(e, cls)]


def test_the_builder_and_verifier_turns_run_on_actors_of_their_own(relay):
    client, handle, ws = relay(relay_llm.model, relay_llm.ONE_ITEM)
    result = handle.wait(timeout=240)
    assert result.status == "completed", result
    assert result.answer == "1 of 1 roadmap items passed, 0 escalated"
    run = handle.run_id
    store = client.store
    (built,) = of_type(store, builder_stream(run), LlmCompleted)
    (checked,) = of_type(store, verifier_stream(run), LlmCompleted)
    builder_pid, verifier_pid = relay_llm.pid_of(built.content), relay_llm.pid_of(checked.content)
    assert len({builder_pid, verifier_pid, os.getpid()}) == 3  # three processes: two actors and this one
    assert [v.status for v in of_type(store, scheduler_stream(run), TurnVerified)] == ["PASSED"]
    assert "a + b" in (ws / "calc_add.py").read_text()  # the git mirror, kept by the scheduler
    report = replay_run(store, run)
    assert report.ok, report.divergence and report.divergence.describe()
    for name in (builder_stream(run), verifier_stream(run)):
        assert gone(name), f"{name} outlived the relay"  # the turn actors end with it


def gone(name: str) -> bool:
    import ray

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            ray.get_actor(name)
        except ValueError:
            return True
        time.sleep(0.2)
    return False


def test_the_scheduler_killed_mid_turn_resumes_without_repeating_a_finished_turn(relay, ray_local):
    client, handle, ws = relay(relay_llm.slow_model, relay_llm.ROADMAP)
    run, store = handle.run_id, client.store
    deadline = time.monotonic() + 240  # a safety net for a hung test, not a measurement

    def turn_two_started() -> bool:  # turn 2's memory lookup is recorded: its model call is under way
        lookups = [e for e in of_type(store, builder_stream(run), ToolReturned) if e.tool == "memory"]
        return len(lookups) >= 2

    while not turn_two_started():
        assert time.monotonic() < deadline, "turn 2 never started"
        time.sleep(0.05)
    assert len(of_type(store, scheduler_stream(run), CheckpointStored)) == 1  # turn 1 is finished
    assert not of_type(store, builder_stream(run), LlmRequested)[1:]  # turn 2's call is not
    for name in (builder_stream(run), verifier_stream(run)):  # the turn actors, by their names
        assert ray_local.get_actor(name) is not None
    ray_local.kill(ray_local.get_actor(scheduler_stream(run)), no_restart=False)

    result = handle.wait(timeout=240)
    assert result.status == "completed", result
    assert result.answer == "2 of 2 roadmap items passed, 0 escalated"
    log = store.read_stream(scheduler_stream(run))
    assert [e.version for e in log] == list(range(1, len(log) + 1))
    assert [b.turn_number for b in log if isinstance(b, BatonPassed)] == [1, 2]  # each builder turn once
    assert [v.turn_number for v in log if isinstance(v, TurnVerified)] == [1, 2]
    assert len([e for e in log if isinstance(e, RoadmapCompleted)]) == 1
    calls = of_type(store, builder_stream(run), LlmRequested)
    assert [c.call_index for c in calls] == [1, 2]  # turn 1's call was not made again
    replies = of_type(store, builder_stream(run), LlmCompleted)
    first, second = (relay_llm.pid_of(r.content) for r in replies)
    assert first != second  # turn 2 was built by the builder the restarted scheduler started
    assert "a * b" in (ws / "calc_mul.py").read_text()
    report = replay_run(store, run)
    assert report.ok, report.divergence and report.divergence.describe()


def test_the_scheduler_on_ray_runs_the_resubmit_hook_once_per_checkpoint(ray_local, tmp_path):
    """The hook's command travels in the run's params to the RelayActor (spawned here as
    `RelayRun.submit(..., ray=True)` spawns it), which runs it in the workspace."""
    from actors.relay import session
    from actors.relay.actor import RelayActor
    from actors.relay.resubmit import resubmit_stream
    from actors.relay.events import AppResubmitted

    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    (tmp_path / "ws").mkdir()
    (tmp_path / "roadmap.yaml").write_text(relay_llm.ONE_ITEM)
    hook = [sys.executable, "-c", "import os; print(sorted(os.listdir('.')))"]
    with Client(settings=settings, llm=ScriptedProvider(relay_llm.model)) as client:
        session.start_relay(
            client,
            "arithmetic",
            run_id="rayhook",
            workspace=tmp_path / "ws",
            roadmap=tmp_path / "roadmap.yaml",
            resubmit=hook,
        )
        handle = client.spawn("rayhook", RelayActor, "relay:rayhook", (client.ensure_llm(), "rayhook", client.llm), ())
        assert handle.wait(timeout=240).status == "completed"
        (done,) = [e for e in client.store.read_stream(resubmit_stream("rayhook")) if isinstance(e, AppResubmitted)]
    assert done.ok and "calc_add.py" in done.output and done.checkpoint_id == "rayhook:checkpoint:1"
