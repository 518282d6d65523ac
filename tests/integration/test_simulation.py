"""The simulation (seed 002) end to end on a real SQLite file, with scripted synth minds:
sessions are runs, cycles commit in one transaction or roll back, replay re-executes every
cycle with no model, forks share history, and `chorus sim` reports bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.cli.main import main
from actors.runtime.client import Client
from actors.runtime.replay import diff_runs, replay_run
from actors.runtime.settings import Settings
from actors.simulation import invariants
from actors.simulation.client import Simulation, open_session, simulate
from actors.simulation.session import Canonical
from actors.simulation.streams import director_stream, world_stream
from actors.testing.simulation import marco_polo, scripted_mind, scripted_synths
from events.store import EventStore

PACKS = Path(__file__).resolve().parents[2] / "actors" / "simulation" / "packs"
LIGHTHOUSE = PACKS / "lighthouse.yaml"


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    with Client(settings=Settings.from_env(), start_ray=False) as c:
        yield c


def session(client, fn=scripted_mind, run_id=None, **config):
    return simulate(client, LIGHTHOUSE, run_id=run_id, ray=False, llm=scripted_synths(fn), **config)


def names(client, run_id):
    c = Canonical.load(client.store, run_id)
    return {s.identity.name: sid for sid, s in c.synths.items()}, c


def facts(store: EventStore, run_id: str) -> list[tuple[str, str, int, dict]]:
    """The session's log without envelopes or measured latencies, streams named without the run id."""
    out = []
    for r in store.read_all(run_id=run_id):
        e = r.event
        payload = {k: v for k, v in e.payload().items() if k != "latency_s"}
        stream = e.stream_id.replace(f":{run_id}:", ":RUN:").replace(f"run:{run_id}", "run:RUN")
        out.append((stream, e.type_name, e.version, json.dumps(payload, default=str, sort_keys=True).replace(f"sim:{run_id}:", "sim:RUN:")))
    return sorted(out, key=lambda f: (f[0], f[2]))  # synths think concurrently: order within streams


def test_the_same_pack_and_replies_give_the_same_log(client):
    a = session(client, run_id="a")
    b = session(client, run_id="b")
    a.step(3)
    b.step(3)
    log_a, log_b = facts(client.store, "a"), facts(client.store, "b")
    assert log_a == log_b
    assert sum(1 for f in log_a if f[1] == "CycleCommitted") == 3
    assert sum(1 for f in log_a if f[1] == "LlmCompleted") >= 9  # three synths, three cycles


def test_a_session_is_a_run_and_replays_with_no_model(client):
    s = session(client, run_id="s1")
    s.step(2)
    runs = client.runs()
    assert [(r["run_id"], r["kind"]) for r in runs] == [("s1", "simulation")]
    report = replay_run(client.store, "s1")
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls >= 6 and world_stream("s1") in report.streams


def test_replay_fails_closed_when_a_recorded_prompt_no_longer_matches(client, monkeypatch):
    session(client, run_id="s1").step(1)
    from actors.simulation import cognition

    original = cognition.user_message
    monkeypatch.setattr(cognition, "user_message", lambda *args: original(*args) + "\n(changed)")
    report = replay_run(client.store, "s1")
    assert not report.ok
    assert "diverged" in report.divergence.describe() or report.divergence.reason


def test_lamp_is_repaired_after_the_chest_is_opened_and_the_wrench_taken(client):
    s = session(client, run_id="lamp", max_microcycles=1)
    lit = False
    for _ in range(40):  # scripted minds wander (a move chosen by the request's hash)
        s.step(1)
        view = s.overview()
        c = Canonical.load(client.store, "lamp")
        lamps = [e for e in c.world.entities.values() if "LightSource" in e.components and "Repairable" in e.components]
        if lamps and all(e.components["LightSource"].get("lit") for e in lamps):
            lit = True
            break
    assert lit, view
    outcomes = [o for e in client.store.read_stream(director_stream("lamp")) for o in getattr(e, "outcomes", [])]
    repairs = [o for o in outcomes if o["action_id"].startswith("repair_")]
    assert any(o["status"] == "ok" for o in repairs)
    takes = [o for o in outcomes if o["action_id"].startswith("take_") and o["status"] == "ok"]
    assert takes, "the wrench was taken before the repair"


def test_speech_crosses_microcycles_within_one_cycle(client):
    s = session(client, fn=marco_polo, run_id="talk", max_microcycles=3)
    (result,) = s.step(1)
    assert result["committed"] and result["microcycles"] >= 2
    spoken = [e for e in client.store.read_stream(world_stream("talk")) if e.type_name == "Communicated"]
    texts = [(e.speaker, e.text, e.microcycle) for e in spoken]
    assert ("Thomas", "MARCO", 1) in texts
    answers = [t for t in texts if t[1] == "POLO"]
    assert answers and all(m == 2 for _, _, m in answers)  # answered in the same cycle


def test_an_invariant_failure_leaves_the_world_and_its_log_untouched(client):
    s = session(client, run_id="bad")
    s.step(1)
    before = Canonical.load(client.store, "bad")
    world_version = client.store.stream_version(world_stream("bad"))

    def broken(world):
        return [invariants.Violation(name="injected", message="a test says no")]

    s2 = Simulation(client, "bad", ray=False, llm=scripted_synths(), check=broken)
    (result,) = s2.step(1)
    assert not result["committed"] and result["invariant"] == "injected"
    after = Canonical.load(client.store, "bad")
    assert client.store.stream_version(world_stream("bad")) == world_version
    assert after.world.model_dump() == before.world.model_dump()
    verdict = client.store.read_stream(director_stream("bad"))[-1]
    assert verdict.type_name == "CycleRolledBack" and verdict.discarded_intents
    # and the next cycle goes on from the world as it was
    (again,) = session_of(client, "bad").step(1)
    assert again["committed"] and again["cycle"] == 3


def session_of(client, run_id):
    return Simulation(client, run_id, ray=False, llm=scripted_synths())


def test_a_snapshot_loads_to_the_same_state_as_the_whole_log(client):
    s = session(client, run_id="snap")
    s.step(2)  # a step ends with a full-system snapshot
    from_snapshot = Canonical.load(client.store, "snap")
    from_log = Canonical.load(client.store, "snap", snapshot=False)
    assert client.store.load_snapshot(director_stream("snap")) is not None
    assert from_snapshot.world.model_dump() == from_log.world.model_dump()
    assert from_snapshot.synths == from_log.synths
    assert from_snapshot.director == from_log.director


def test_fork_shares_history_and_diff_shows_where_lineages_part(client):
    s = session(client, run_id="orig")
    s.step(3)
    handle = client.fork("orig", 2)
    fork = handle.run_id
    assert client.run_state(fork).forked_from == "orig"
    assert Simulation(client, fork, ray=False, llm=scripted_synths()).overview()["cycle"] == 2
    assert replay_run(client.store, fork).ok
    Simulation(client, fork, ray=False, llm=scripted_synths(marco_polo)).step(1)
    diff = diff_runs(client.store, "orig", fork)
    assert diff.shared >= 2
    assert any("differ" in line or "part" in line or "first" in line for line in diff.lines())


def test_overview_at_a_cycle_reads_the_past(client):
    s = session(client, run_id="past", max_microcycles=1)
    s.step(3)
    assert s.overview(at=0)["tick"] == 0
    assert s.overview(at=2)["cycle"] == 2 and s.overview(at=2)["tick"] == 2
    with pytest.raises(ValueError):
        s.overview(at=9)


def test_a_stimulus_reaches_synths_through_perception_on_the_next_step(client):
    s = session(client, run_id="say")
    s.stimulus("A ship's horn sounds from the sea.")
    assert s.overview()["pending_stimuli"] == ["A ship's horn sounds from the sea."]
    s.step(1)
    assert s.overview()["pending_stimuli"] == []
    heard = [e for e in client.store.read_stream(world_stream("say")) if e.type_name == "Communicated"]
    assert heard and "ship's horn" in heard[0].text and heard[0].hearer_ids
    by_name, c = names(client, "say")
    deaf = {sid for sid, st in c.synths.items() if "auditory" not in st.senses}
    assert not deaf & set(heard[0].hearer_ids)


# -- the command line --------------------------------------------------------------------------


def test_usage_per_synth_comes_from_the_audit_trail(client, capsys, tmp_path):
    session(client, run_id="use").step(2)
    assert main(["sim", "usage", "use"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(rows) == {"Thomas", "Margaret", "James"}
    calls = [r for r in client.store.read_all(run_id="use") if r.event.type_name == "LlmCompleted"]
    assert sum(int(r[1]) for r in rows.values()) == len(calls)
    assert all(int(r[3]) > 0 for r in rows.values())  # prompt tokens counted per synth
    out = tmp_path / "llm_calls.jsonl"
    assert main(["audit", "llm-calls", "--run", "use", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(calls) and all(line["seed"] is not None for line in lines)


def test_sim_new_show_say_sessions(client, capsys, tmp_path):
    assert main(["sim", "new", str(LIGHTHOUSE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("session ")
    run_id = out[0].split()[1]
    assert main(["sim", "show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "Thomas" in shown and "Margaret" in shown and "James" in shown
    assert main(["sim", "say", run_id, "Hello, keepers!"]) == 0
    capsys.readouterr()
    assert main(["sim", "sessions"]) == 0
    assert run_id in capsys.readouterr().out


def test_a_bad_pack_is_one_line_and_writes_nothing(client, capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(LIGHTHOUSE.read_text().replace("condition: jammed", "state_was: jammed", 1))
    assert main(["sim", "new", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chorus: error: bad.yaml: entities[0].components.Repairable.")
    assert err[0].endswith("Repairable.condition (Beacon Lamp): required property missing")
    assert client.store.max_position() == 0


@pytest.mark.parametrize(
    "argv",
    [["sim", "step", "nosuch"], ["sim", "show", "nosuch"], ["sim", "say", "nosuch", "hi"], ["sim", "new", "/nonexistent.yaml"]],
)
def test_unknown_sessions_and_missing_packs_are_one_line(client, capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("chorus: error:")
    assert client.store.max_position() == 0


def test_the_python_api_takes_the_client(client):
    sim = simulate(client, LIGHTHOUSE, ray=False, llm=scripted_synths())
    sim.stimulus("Someone knocks at the door.")
    (cycle,) = sim.step(1)
    assert cycle["committed"] and cycle["cycle"] == 1
    view = sim.overview()
    assert {s["name"] for s in view["synths"]} == {"Thomas", "Margaret", "James"}
    again = open_session(client, sim.run_id, ray=False, llm=scripted_synths())
    assert again.overview()["cycle"] == 1
    with pytest.raises(AttributeError):  # no workload grafts methods on the client
        client.simulate  # noqa: B018


def test_the_snapshots_view_writes_the_full_system_snapshot(client):
    session(client, run_id="files").step(2)
    assert main(["projections", "rebuild"]) == 0
    latest = client.settings.data_dir / "snapshots" / director_stream("files") / "latest.json"
    doc = json.loads(latest.read_text())
    assert doc["state_type"] == "SimulationSnapshot" and doc["state"]["format"] == "0.3.0"
    assert doc["position"] is not None and doc["timestamp"]
    assert doc["version"] == client.store.stream_version(director_stream("files"))
    assert set(doc["state"]["versions"]) >= {world_stream("files"), director_stream("files")}


def test_the_low_light_policy_is_a_session_setting_and_replays(client):
    plain = session(client, run_id="plain", max_microcycles=1)
    dim = session(client, run_id="dim", max_microcycles=1, perception_policy="low_light")
    plain.step(3)
    dim.step(3)  # by cycle 3 night has fallen: what synths see is vaguer

    def prompts(run_id):
        return [m["content"] for r in client.store.read_all(run_id=run_id) if r.event.type_name == "LlmRequested"
                for m in r.event.messages if m["role"] == "user"]  # fmt: skip

    assert any("In the dim light, perhaps" in p for p in prompts("dim"))
    assert not any("In the dim light, perhaps" in p for p in prompts("plain"))
    assert replay_run(client.store, "dim").ok


def test_an_unrelated_pack_runs_on_the_same_kernel(client):
    """Nothing in the kernel is the lighthouse's: the orchard pack steps and replays too."""
    sim = simulate(client, PACKS / "orchard.yaml", run_id="orchard", ray=False, llm=scripted_synths())
    results = sim.step(4)
    assert all(r["committed"] for r in results)
    assert any(o["status"] == "ok" and not o["action_id"].startswith(("wait", "inspect"))
               for r in results for o in r["outcomes"])  # fmt: skip
    view = sim.overview()
    assert view["pack"] == "orchard" and len(view["synths"]) == 2 and view["tick"] == 4
    assert replay_run(client.store, "orchard").ok


def test_a_session_on_postgresql_commits_each_cycle_in_one_transaction(tmp_path, monkeypatch, postgres_url):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    with Client(settings=Settings.from_env(store_url=postgres_url), start_ray=False) as pg:
        sim = simulate(pg, LIGHTHOUSE, run_id="pg", ray=False, llm=scripted_synths())
        sim.step(2)
        records = list(pg.store.read_all(run_id="pg"))
        verdicts = [r for r in records if r.event.type_name == "CycleCommitted"]
        assert len(verdicts) == 2
        # Each cycle's events sit together in the log, the verdict closing them.
        for v in verdicts:
            cycle = [r for r in records if getattr(r.event, "cycle", None) == v.event.cycle
                     and r.event.type_name in ("SynthCognized", "CycleCommitted")]  # fmt: skip
            assert max(r.position for r in cycle) == v.position
        assert replay_run(pg.store, "pg").ok
