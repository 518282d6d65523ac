"""The lighthouse end to end on the embedded defaults, kept to one real call: a SQLite file,
the director and one synth (Thomas, the lighthouse pack with the other two synths left out)
as local Ray actors, and the real llama.cpp server with Qwen2.5-Coder-1.5B. One cycle, one
microcycle, and a reply cut at 32 tokens (a whole one is 130-370: on a loaded machine
generation can fall to a token every few seconds), so the reply is usually invalid, retried
once and the synth waits; then the session replays with no model.

What several cycles of all three synths do on this model (every cycle commits, the synths
mostly answer from their menus, each synth asked once a cycle, the world within its
invariants) is asserted on the recorded session
`tests/fixtures/runs/local_model_simulation_lighthouse.jsonl` by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.simulation.client import simulate
from actors.simulation.session import Canonical
from events.effects import LlmCompleted, LlmFailed
from actors.simulation.events import SynthCognized
from tests.integration.test_simulation import LIGHTHOUSE
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def one_synth_lighthouse(path):
    """The lighthouse with Thomas alone: one model call a microcycle. (Cut from the text: a
    YAML round trip would turn the pack's `on:` keys into booleans.)"""
    text = LIGHTHOUSE.read_text()
    start, end = text.index("  - name: Margaret\n"), text.index("\nprocesses:")
    text = text[:start] + text[end:]
    text = text.replace("known_by: [Thomas, Margaret]", "known_by: [Thomas]")
    assert "Margaret" not in text and "- name: James" not in text  # the pack changed: cut it anew
    path.write_text(text)
    return path


def test_one_cycle_of_the_lighthouse_on_the_local_model_replays(tmp_path):
    worker_path()
    pack = one_synth_lighthouse(tmp_path / "lighthouse.yaml")
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        sim = simulate(chorus, pack, max_microcycles=1, llm_params={"max_tokens": 32})
        try:
            cycles = sim.step(1)
        finally:
            sim.close()
        canonical = Canonical.load(chorus.store, sim.run_id)
        events = [r.event for r in chorus.store.read_all(run_id=sim.run_id)]
        report = replay_run(chorus.store, sim.run_id)
    assert [c["cycle"] for c in cycles] == [1] and cycles[0]["committed"]
    [synth] = canonical.synths.values()
    cognized = [e for e in events if isinstance(e, SynthCognized)]
    calls = [e for e in events if isinstance(e, (LlmCompleted, LlmFailed))]
    assert len(cognized) == 1 and 1 <= len(calls) <= 2  # one call, and one retry if the reply was invalid
    assert synth.llm_calls == cognized[0].attempts == len(calls)
    # an answer from the menu, or a clean "no valid reply" the synth waits on
    assert (cognized[0].response is None) == (cognized[0].error is not None)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls == len(calls)
