"""`Client.resume` / `chorus resume` for the runs of every kind whose lead actor died for
good (issue 34): an agent run and a task workflow whose actor was killed with no restart
left are served again from their logs and complete, with nothing recorded twice. (The
relay's own case, a process SIGKILLed after a checkpoint, is test_relay_recovery.)"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from actors import Client
from actors.agent.actor import agent_stream
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.tasks.workflow import task_stream
from tests.support import fake_llm


def wait_for(check, what: str, limit: float = 120) -> None:
    deadline = time.monotonic() + limit  # a safety net, not a measurement
    while not check():
        assert time.monotonic() < deadline, f"not {what} in {limit} s"
        time.sleep(0.1)


def no_duplicates(client: Client, run_id: str) -> None:
    records = list(client.store.read_all(1, run_id=run_id))
    ids = Counter(r.event.event_id for r in records)
    assert max(ids.values()) == 1
    by_stream: dict[str, list[int]] = {}
    for r in records:
        by_stream.setdefault(r.event.stream_id, []).append(r.event.version)
    for stream, versions in by_stream.items():
        assert sorted(versions) == list(range(1, len(versions) + 1)), stream


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")


def test_an_agent_run_whose_actor_died_is_resumed_and_completes(ray_local, tmp_path, settings):
    ray = ray_local
    fake_llm.make_repo(tmp_path)
    with Client(settings=settings, llm=ScriptedProvider(fake_llm.slow_reader)) as c:
        run = c.submit("Read the notes line by line", root=tmp_path, max_iterations=12)
        wait_for(lambda: c.store.stream_version(agent_stream(run.run_id)) >= 4, "going")
        ray.kill(ray.get_actor(agent_stream(run.run_id)), no_restart=True)
        wait_for(lambda: _dead(ray, agent_stream(run.run_id)), "dead")
        assert c.run_state(run.run_id).status == "running"  # nothing serves it: resume is the remedy
        result = c.resume(run.run_id).wait(timeout=120)
        assert result.status == "completed", result
        assert "ALPHA-7" in (result.answer or "")
        no_duplicates(c, run.run_id)
        with pytest.raises(ValueError, match="nothing to resume"):
            c.resume(run.run_id)


def test_a_task_workflow_whose_actor_died_is_resumed_and_completes(ray_local, tmp_path, settings):
    ray = ray_local
    ws = tmp_path / "ws"
    ws.mkdir()
    program = '(do (system:run_script "echo one") (system:run_script "sleep 3; echo two") (system:run_script "echo three"))'
    with Client(settings=settings, llm=ScriptedProvider(lambda r: "{}")) as c:
        run = c.submit(program, kind="task", workspace=str(ws))
        wait_for(lambda: c.store.stream_version(task_stream(run.run_id)) >= 4, "going")
        ray.kill(ray.get_actor(task_stream(run.run_id)), no_restart=True)
        wait_for(lambda: _dead(ray, task_stream(run.run_id)), "dead")
        result = c.resume(run.run_id).wait(timeout=120)
        assert result.status == "completed", result
        assert "three" in (result.answer or "")
        no_duplicates(c, run.run_id)


def test_an_unknown_run_id_says_so(tmp_path, settings):
    from actors.runtime.client import UnknownRun

    with Client(settings=settings, start_ray=False) as c, pytest.raises(UnknownRun):
        c.resume("nosuchrun")


def _dead(ray, name: str) -> bool:
    try:
        ray.get_actor(name)
    except ValueError:
        return True
    return False
