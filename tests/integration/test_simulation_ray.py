"""The simulation on a real local Ray instance: the director and every synth are actors,
and a director killed mid-cycle leaves the canonical world exactly as it was."""

from __future__ import annotations

import time

import pytest

from actors.runtime.client import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.simulation.client import Simulation, simulate
from actors.simulation.session import Canonical
from actors.simulation.streams import director_stream, synth_stream, world_stream
from actors.testing.simulation import scripted_synths, slow_mind, straggler_mind
from tests.integration.test_simulation import LIGHTHOUSE

pytestmark = pytest.mark.ray


@pytest.fixture
def client(tmp_path, monkeypatch, ray_local):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    with Client(settings=Settings.from_env()) as c:
        yield c


def test_synths_think_on_ray_actors_and_the_cycle_commits(client):
    s = simulate(client, LIGHTHOUSE, run_id="ray1", llm=scripted_synths())
    try:
        (result,) = s.step(1)
    finally:
        s.close()
    assert result["committed"]
    c = Canonical.load(client.store, "ray1")
    assert all(st.llm_calls >= 1 for st in c.synths.values())  # every synth made its call
    assert replay_run(client.store, "ray1").ok


def test_killing_the_director_mid_cycle_leaves_the_world_as_it_was(client, ray_local):
    s = simulate(client, LIGHTHOUSE, run_id="kill", llm=scripted_synths(straggler_mind), max_microcycles=1)
    s.step(1)
    before = Canonical.load(client.store, "kill")
    world_version = client.store.stream_version(world_stream("kill"))
    director_version = client.store.stream_version(director_stream("kill"))
    ref = s._director_actor().step.remote(1)
    # Thomas answers in 0.5 s, James in 15: once Thomas's call is recorded, the cycle is
    # waiting on James and cannot have committed.
    some_synth = next(sid for sid, st in before.synths.items() if st.identity.name == "Thomas")
    calls = client.store.stream_version(synth_stream("kill", some_synth))
    deadline = time.monotonic() + 60  # a safety net for a hung test, not a measurement
    while client.store.stream_version(synth_stream("kill", some_synth)) == calls:
        assert time.monotonic() < deadline, "the synth never recorded its call"
        time.sleep(0.05)
    ray_local.kill(s._director, no_restart=True)  # mid-cycle: a call recorded, nothing committed
    with pytest.raises(Exception):
        ray_local.get(ref, timeout=30)
    s._director = None
    s.close()
    after = Canonical.load(client.store, "kill")
    assert client.store.stream_version(world_stream("kill")) == world_version
    assert client.store.stream_version(director_stream("kill")) == director_version
    assert after.world.model_dump() == before.world.model_dump()
    assert after.director == before.director
    # The dead cycle's calls are in the synths' streams, uncommitted: the log still replays.
    dead = replay_run(client.store, "kill")
    assert dead.ok, dead.divergence and dead.divergence.describe()
    # A new director carries on from the log; the dead cycle's recorded calls stay facts,
    # and the session still replays.
    again = Simulation(client, "kill", llm=scripted_synths(slow_mind))
    try:
        (result,) = again.step(1)
    finally:
        again.close()
    assert result["committed"] and result["cycle"] == 2
    report = replay_run(client.store, "kill")
    assert report.ok, report.divergence and report.divergence.describe()
