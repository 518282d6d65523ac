"""`Client(url=..., token=...)` against a real uvicorn server: the same script runs locally
and remotely by changing one argument, and sees the same typed events and result."""

from __future__ import annotations

import pytest

from actors import Client
from actors.api.app import create_app
from actors.runtime.remote import RemoteClient, RemoteError
from actors.runtime.run import UnknownRun
from actors.agent.events import AgentStarted

from .conftest import TOKENS, Server

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def server(env):
    with Server(create_app(client=env.client, tokens=TOKENS, config=env.config)) as s:
        yield s


def script(chorus, root) -> tuple[list[str], object]:
    """What a user writes: submit, follow the events live, wait for the result."""
    run = chorus.submit("What is the marker?", root=root)
    types = [rec.event.type_name for rec in run.events()]
    return types, run.wait()


def test_the_same_script_runs_locally_and_remotely(server, env):
    local_types, local = script(env.client, env.root)
    with Client(url=server.url, token="o-token") as remote_client:
        assert isinstance(remote_client, RemoteClient)
        remote_types, remote = script(remote_client, env.root)
    assert remote_types == local_types
    assert remote_types[-1] == "RunCompleted"
    assert type(remote) is type(local) and remote.ok and remote.answer == local.answer
    assert remote.run_id != local.run_id


def test_remote_events_are_the_logs_typed_events(server, env):
    with Client(url=server.url, token="o-token") as chorus:
        run = chorus.submit("What is the marker?", root=env.root, max_iterations=5)
        run.wait(timeout=120)
        remote = chorus.events(run.run_id)
        followed = list(run.events())  # a finished run: history, then the stream ends at its end
        state = chorus.run_state(run.run_id)
    local = list(env.client.store.read_all(run_id=run.run_id))
    assert [(r.position, r.event) for r in remote] == [(r.position, r.event) for r in local]
    assert [(r.position, r.event) for r in followed] == [(r.position, r.event) for r in local]
    assert any(isinstance(r.event, AgentStarted) for r in remote)
    assert state == env.client.run_state(run.run_id)
    assert state.params["max_iterations"] == 5 and state.params["requested_by"] == "token:o-to…"


def test_remote_listing_get_fork_and_cancel(server, env):
    with Client(url=server.url, token="a-token") as chorus:
        run = chorus.submit("What is the marker?", root=str(env.root))
        result = run.wait(timeout=120)
        assert run.run_id in [r["run_id"] for r in chorus.runs(kind="react")]
        assert chorus.get_run(run.run_id).result == result
        at = next(r.position for r in chorus.events(run.run_id) if r.event.type_name == "ToolReturned")
        fork = chorus.fork(run.run_id, at, llm_params={"temperature": 0.3})
        assert fork.wait(timeout=120).ok
        assert chorus.run_state(fork.run_id).forked_from == f"{run.run_id}@{at}"
        assert chorus.cancel(run.run_id).status == "completed"  # a finished run stays as it ended


def test_remote_errors_are_the_local_clients(server, env):
    with Client(url=server.url, token="r-token") as reader:
        with pytest.raises(UnknownRun, match="no run with id 'nope'"):
            reader.get_run("nope")
        with pytest.raises(PermissionError, match="403: this route needs scope 'operate'"):
            reader.submit("What is the marker?", root=env.root)
    with Client(url=server.url) as nobody, pytest.raises(PermissionError, match="401"):
        nobody.runs()
    with Client(url=server.url, token="o-token") as chorus, pytest.raises(ValueError, match="max_iterations"):
        chorus.submit("x", root=env.root, max_iterations=0)
    with Client(url="http://127.0.0.1:9") as gone, pytest.raises(RemoteError, match="does not answer"):
        gone.runs()


def test_client_takes_the_url_as_its_address_and_refuses_a_stray_token():
    with Client("http://127.0.0.1:9", token="t") as c:
        assert isinstance(c, RemoteClient) and c.url == "http://127.0.0.1:9"
    with pytest.raises(ValueError, match="token= goes with url="):
        Client(token="t")
