"""The lighthouse end to end on the embedded defaults: a SQLite file, the director and the
three synths as local Ray actors, and the real llama.cpp server with Qwen2.5-Coder-1.5B.
Three cycles, one call per synth per cycle (about 2-4 minutes a cycle on 2 cores); then the
session replays with no model. A recorded session of this kind is kept as the fixture
`tests/fixtures/runs/local_model_simulation_lighthouse.jsonl`, which CI replays."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.simulation.session import Canonical
from events.simulation import SynthCognized
from tests.integration.test_simulation import LIGHTHOUSE
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def test_three_cycles_of_the_lighthouse_on_the_local_model_replay(tmp_path):
    worker_path()
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        sim = chorus.simulate(LIGHTHOUSE, max_microcycles=1, llm_params={"max_tokens": 400})
        try:
            cycles = sim.step(3)
        finally:
            sim.close()
        canonical = Canonical.load(chorus.store, sim.run_id)
        cognized = [r.event for r in chorus.store.read_all(run_id=sim.run_id) if isinstance(r.event, SynthCognized)]
        report = replay_run(chorus.store, sim.run_id)
    assert [c["cycle"] for c in cycles] == [1, 2, 3] and all(c["committed"] for c in cycles)
    assert len(cognized) == 9  # three synths, three cycles, one microcycle each
    valid = [e for e in cognized if e.response is not None]
    assert len(valid) >= 6, [e.error for e in cognized]  # the model mostly answers from its menu
    assert all(st.llm_calls >= 3 for st in canonical.synths.values())
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls >= 9
