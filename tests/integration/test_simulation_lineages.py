"""Lineages whose shared history holds outside input: a fork (`chorus fork`) and a restore
(`POST /v1/sessions/{id}/restore`) of a session in which a stimulus was queued and an admin
patch committed before the fork point replay identical, and so does the parent. Their ids
were made from the parent's run id; the copies keep them, and replay queues and applies
inputs under the ids the log gave them. Real SQLite file, scripted synth minds, no Ray.

Also speech across cycles end to end: said in the last microcycle, heard in the next
cycle's first, and the session still replays."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.cli.main import main
from actors.runtime.client import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.simulation import patches
from actors.simulation.client import Simulation, simulate
from actors.simulation.streams import director_stream, world_stream
from actors.testing.simulation import marco_polo, scripted_mind, scripted_synths
from actors.simulation.events import PatchCommitted, StimulusQueued
from tests.integration.test_simulation import LIGHTHOUSE

MOVE = {"op": "move_entity", "entity": "Flashlight", "to": "Stairwell"}
MEMORY = {"op": "add_memory", "synth": "Thomas", "content": "The inspector is coming tonight."}


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    with Client(settings=Settings.from_env(), start_ray=False) as c:
        yield c


def inputs(client, run_id) -> list[tuple[str, str]]:
    """The session's stimuli and patches, by id: what a fork must carry unchanged."""
    out = []
    for e in client.store.read_stream(director_stream(run_id)):
        if isinstance(e, StimulusQueued):
            out.append(("stimulus", e.stimulus_id))
        elif isinstance(e, PatchCommitted):
            out.append(("patch", e.patch_id))
    return out


def assert_replays(store, run_id):
    report = replay_run(store, run_id)
    assert report.ok, report.divergence and report.divergence.describe()
    return report


def test_a_fork_whose_history_holds_a_stimulus_and_a_patch_replays_identical(client, capsys):
    s = simulate(client, LIGHTHOUSE, run_id="orig", ray=False, llm=scripted_synths(scripted_mind))
    s.step(1)
    s.stimulus("A ship's horn sounds from the sea.")
    shell = s.shell()
    c = shell.canonical
    shell.commit_patch(patches.plan(c.world, c.synths, patches.parse_operations([MOVE, MEMORY])), "admin", "test")
    s.step(2)
    shared = inputs(client, "orig")
    assert [kind for kind, _ in shared] == ["stimulus", "patch"]
    assert_replays(client.store, "orig")

    fork = client.fork("orig", 2).run_id  # cycle 2 delivered the stimulus, after the patch
    assert inputs(client, fork) == shared  # the copies keep the ids the parent gave them
    assert_replays(client.store, fork)
    assert main(["replay", fork]) == 0
    assert "identical" in capsys.readouterr().out

    # The fork's own input gets ids of its own run, and it replays too; so does a fork of it.
    child = Simulation(client, fork, ray=False, llm=scripted_synths(scripted_mind))
    child.stimulus("The wind rises.")
    child.step(1)
    assert len(inputs(client, fork)) == 3 and inputs(client, fork)[2] not in shared
    assert_replays(client.store, fork)
    grandchild = client.fork(fork, 3).run_id
    assert inputs(client, grandchild) == inputs(client, fork)
    assert_replays(client.store, grandchild)
    assert_replays(client.store, "orig")  # the parent is untouched


def test_a_restore_whose_history_holds_a_stimulus_and_a_patch_replays_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    tokens = {"o1": "operate", "a1": "admin"}
    operate, admin = ({"Authorization": f"Bearer {t}"} for t in tokens)
    client = Client(settings=Settings.from_env(), llm=scripted_synths(), start_ray=False)
    try:
        with TestClient(create_app(client=client, tokens=tokens)) as http:
            r = http.post("/v1/sessions", json={"pack": "lighthouse", "max_microcycles": 1}, headers=operate)
            assert r.status_code == 201, r.text
            sid = r.json()["session_id"]
            assert http.post(f"/v1/sessions/{sid}/steps", headers=operate).status_code == 200
            r = http.post(f"/v1/sessions/{sid}/stimuli", json={"text": "A bell rings below."}, headers=admin)
            assert r.status_code == 202, r.text
            r = http.post(f"/v1/sessions/{sid}/patches", json={"mode": "commit", "operations": [MOVE]}, headers=admin)
            assert r.status_code == 200 and r.json()["committed"], r.text
            assert http.post(f"/v1/sessions/{sid}/turns", json={"text": "Hello?"}, headers=operate).status_code == 200
            assert http.post(f"/v1/sessions/{sid}/steps", headers=operate).status_code == 200
            r = http.post(f"/v1/sessions/{sid}/restore", json={"cycle": 2}, headers=operate)
            assert r.status_code == 201, r.text
            child = r.json()["session_id"]
            assert [k for k, _ in inputs(client, child)] == ["stimulus", "patch", "stimulus"]
            verdict = http.get(f"/v1/runs/{child}/replay", headers=operate)
            assert verdict.status_code == 200, verdict.text
            assert verdict.json()["ok"], verdict.json()
            assert http.post(f"/v1/sessions/{child}/steps", headers=operate).status_code == 200
        assert_replays(client.store, child)
        assert_replays(client.store, sid)
    finally:
        client.close()


@pytest.mark.parametrize("microcycles", [1, 2])
def test_speech_said_in_a_cycles_last_microcycle_is_heard_in_the_next_and_replays(client, microcycles):
    """Thomas calls MARCO in 1.1; whoever hears it answers POLO. With one microcycle the
    answer comes in 2.1 and Thomas hears it in 3.1; with two, it comes in 1.2 and Thomas
    hears it in 2.1: never lost."""
    run_id = f"talk{microcycles}"
    s = simulate(client, LIGHTHOUSE, run_id=run_id, ray=False, llm=scripted_synths(marco_polo), max_microcycles=microcycles)
    s.step(3)
    spoken = [e for e in client.store.read_stream(world_stream(run_id)) if e.type_name == "Communicated"]
    marco = next(e for e in spoken if e.text == "MARCO" and e.speaker == "Thomas")
    polo = [e for e in spoken if e.text == "POLO" and marco.speaker_id in e.hearer_ids]  # answers Thomas can hear
    assert (marco.cycle, marco.microcycle) == (1, 1) and marco.hearer_ids and polo
    answered_at = (2, 1) if microcycles == 1 else (1, 2)  # the hearers' next call, in its cycle's last microcycle
    assert min((e.cycle, e.microcycle) for e in polo) == answered_at
    first = min(polo, key=lambda e: (e.cycle, e.microcycle))
    assert first.speaker_id in marco.hearer_ids
    prompts = [
        m["content"] for r in client.store.read_all(run_id=run_id)
        if r.event.type_name == "LlmRequested" and r.event.stream_id.endswith(marco.speaker_id)
        for m in r.event.messages if m["role"] == "user"
    ]  # fmt: skip
    turns = [re.search(r"Turn (\d+)\.(\d+)\.", p).groups() for p in prompts if f"- {first.speaker}: POLO" in p]  # type: ignore[union-attr]
    assert turns and min((int(c), int(m)) for c, m in turns) == (answered_at[0] + 1, 1)  # the next cycle's first
    assert_replays(client.store, run_id)
