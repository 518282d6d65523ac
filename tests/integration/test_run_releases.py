"""A finished run lets go of what it held: its tool actors stop and its store connections
close, while its actor still answers `state()`. Before, every finished run on PostgreSQL
kept its connections until the driver exited, and a long-lived client (`chorus serve`, a
cluster) ran the server out of them."""

from __future__ import annotations

import time
import uuid
from urllib.parse import urlparse

import pytest

from actors import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from tests.conftest import POSTGRES_URL, _connect
from tests.support import fake_llm

pytestmark = [pytest.mark.ray, pytest.mark.postgres]
RUNS = 4


@pytest.fixture
def own_database(postgres_url):
    """A database of this test's own, so that counting its sessions counts only this test's."""
    name = f"chorus_release_{uuid.uuid4().hex[:10]}"
    with _connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = urlparse(POSTGRES_URL)
    yield name, base._replace(path=f"/{name}").geturl()
    with _connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _connections(database: str, at_most: int | None = None) -> int:
    """Sessions on the database; with `at_most`, waited for (up to 20 s) to fall to it, as
    killed actors' processes exit a moment after `ray.kill` returns."""
    deadline = time.monotonic() + 20
    while True:
        with _connect() as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)).fetchone()
        n = int(row[0])
        if at_most is None or n <= at_most or time.monotonic() > deadline:
            return n
        time.sleep(0.5)


def test_finished_runs_hold_no_connections_and_no_tool_actors(ray_local, own_database, tmp_path) -> None:
    ray = ray_local
    database, url = own_database
    fake_llm.make_repo(tmp_path)
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=url)
    with Client(settings=settings, llm=ScriptedProvider(fake_llm.search_read_answer)) as c:
        first = c.submit("What is the marker?", root=tmp_path)
        assert first.wait(timeout=120).ok
        time.sleep(2)  # the first run's actors finish letting go
        baseline = _connections(database)
        handles = [first]
        for _ in range(RUNS):
            run = c.submit("What is the marker?", root=tmp_path)
            assert run.wait(timeout=120).ok
            handles.append(run)
        after = _connections(database, at_most=baseline + 1)
        states = [ray.get(h._actor.state.remote())["state"]["status"] for h in handles]
        tools = [ray.get(h._actor.__ray_call__.remote(lambda self: len(self.tools))) for h in handles]
    assert after <= baseline + 1, f"{RUNS} more finished runs hold {after - baseline} more connections"
    assert states == ["completed"] * (RUNS + 1)  # the actor still answers, from memory
    assert tools == [0] * (RUNS + 1)  # its tool actors were stopped
