"""Simulation sessions over HTTP (actors/simulation/api.py): the real simulation kernel on a real
SQLite file, scripted synth minds (no model), the app as `create_app` builds it, in-process."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.runtime.client import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.simulation.client import Simulation
from actors.simulation.session import Canonical
from actors.testing.simulation import scripted_synths

TOKENS = {"r1": "read", "o1": "operate", "a1": "admin"}
READ, OPERATE, ADMIN = ({"Authorization": f"Bearer {t}"} for t in ("r1", "o1", "a1"))


@pytest.fixture
def chorus(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    client = Client(settings=Settings.from_env(), llm=scripted_synths(), start_ray=False)
    app = create_app(client=client, tokens=TOKENS)
    with TestClient(app) as http:
        yield http, client
    client.close()


@pytest.fixture
def http(chorus):
    return chorus[0]


def new_session(http, **body) -> str:
    r = http.post("/v1/sessions", json={"pack": "lighthouse", "max_microcycles": 1, **body}, headers=OPERATE)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def log(client, run_id) -> list[tuple[str, str, int]]:
    return [(r.event.stream_id, r.event.type_name, r.event.version) for r in client.store.read_all(run_id=run_id)]


def lamp_lit(http, sid) -> dict:
    return {"op": "set_component_property", "entity": "Beacon Lamp", "component": "LightSource", "property": "lit", "value": True}


def test_a_session_starts_paused_and_the_query_lane_reads_it(http):
    sid = new_session(http)
    info = http.get(f"/v1/sessions/{sid}", headers=READ).json()
    assert info["state"] == "paused" and info["cycle"] == 0 and info["pack"] == "lighthouse" and info["parent"] is None
    listed = http.get("/v1/sessions", headers=READ).json()
    assert [s["session_id"] for s in listed["sessions"]] == [sid] and listed["total"] == 1
    view = http.get(f"/v1/sessions/{sid}/overview", headers=READ).json()
    assert {s["name"]: s["location"] for s in view["synths"]}["Thomas"] == "Ground Floor"
    found = http.get(f"/v1/sessions/{sid}/resolve", params={"name": "wrench"}, headers=READ).json()["matches"]
    assert [(m["kind"], m["name"]) for m in found] == [("entity", "Wrench")]
    wrench = http.get(f"/v1/sessions/{sid}/objects/{found[0]['id']}", headers=READ).json()
    assert wrench["kind"] == "entity" and wrench["data"]["components"]["Tool"] == {"kind": "wrench"}
    thomas = http.get(f"/v1/sessions/{sid}/objects/thomas", headers=READ).json()
    assert thomas["kind"] == "synth" and thomas["data"]["identity"]["name"] == "Thomas"
    events = http.get(f"/v1/sessions/{sid}/events", headers=READ).json()
    assert "WorldCreated" in [e["type"] for e in events["events"]]
    assert events["last_position"] == events["events"][-1]["position"]


def test_a_turn_is_perceived_and_runs_one_cycle(chorus):
    http, client = chorus
    sid = new_session(http)
    r = http.post(f"/v1/sessions/{sid}/turns", json={"text": "A ship's horn sounds.", "source": "the sea"}, headers=OPERATE)
    assert r.status_code == 200, r.text
    turn = r.json()
    assert turn["result"]["cycle"] == 1 and turn["result"]["committed"] is True
    heard = [r.event for r in client.store.read_all(run_id=sid) if r.event.type_name == "Communicated"]
    assert any(e.text == "A ship's horn sounds." and e.speaker == "the sea" and e.hearer_ids for e in heard)
    queued = [r.event for r in client.store.read_all(run_id=sid) if r.event.type_name == "StimulusQueued"]
    assert [(q.stimulus_id, q.principal) for q in queued] == [(turn["stimulus_id"], "token:o1…")]
    reports = http.get(f"/v1/sessions/{sid}/reports", headers=READ).json()["reports"]
    assert [(c["cycle"], c["committed"], c["stimuli"]) for c in reports] == [(1, True, [turn["stimulus_id"]])]
    assert http.get(f"/v1/sessions/{sid}", headers=READ).json()["pending_stimuli"] == 0
    changes = http.get(f"/v1/sessions/{sid}/changes", params={"since_cycle": 0}, headers=READ).json()["changes"]
    assert ("clock", "tick", 0, 1) in [(c["kind"], c["field"], c["before"], c["after"]) for c in changes]


def test_a_dry_run_changes_nothing(chorus):
    http, client = chorus
    sid = new_session(http)
    before = log(client, sid)
    ops = [{"op": "move_entity", "entity": "Wrench", "to": "Lantern Room"}]
    r = http.post(f"/v1/sessions/{sid}/patches", json={"operations": ops, "mode": "dry_run"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["valid"] is True and out["committed"] is False and out["patch_id"] is None
    assert any(c["field"] == "location_id" and c["name"] == "Wrench" for c in out["diff"])
    assert log(client, sid) == before


def test_a_commit_appends_a_patch_naming_the_principal_and_replays(chorus):
    http, client = chorus
    sid = new_session(http)
    ops = [
        {"op": "move_entity", "entity": "Wrench", "to": "Lantern Room"},
        {"op": "add_belief", "synth": "Thomas", "subject": "Wrench", "content": "The wrench is by the lamp now."},
        {"op": "create_entity", "name": "Oil Can", "location": "Ground Floor", "components": {"Portable": {"weight": 0.5}}},
    ]
    r = http.post(f"/v1/sessions/{sid}/patches", json={"operations": ops, "mode": "commit_and_step", "note": "tidy up"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["committed"] and out["principal"] == "token:a1…" and out["result"]["cycle"] == 1
    patch_events = [r.event for r in client.store.read_all(run_id=sid) if r.event.type_name == "PatchCommitted"]
    assert [(e.patch_id, e.principal, e.note) for e in patch_events] == [(out["patch_id"], "token:a1…", "tidy up")]
    c = Canonical.load(client.store, sid)
    wrench = next(e for e in c.world.entities.values() if e.name == "Wrench")
    lantern = next(loc for loc in c.world.locations.values() if loc.name == "Lantern Room")
    assert wrench.location_id == lantern.id and wrench.container_id is None
    thomas = next(s for s in c.synths.values() if s.identity.name == "Thomas")
    assert [b.content for b in thomas.beliefs if b.subject == "Wrench"] == ["The wrench is by the lamp now."]
    assert any(e.name == "Oil Can" for e in c.world.entities.values())
    listed = http.get(f"/v1/sessions/{sid}/patches", headers=READ).json()["patches"]
    assert [(p["patch_id"], p["principal"]) for p in listed] == [(out["patch_id"], "token:a1…")]
    report = replay_run(client.store, sid)  # the patch is re-applied, the cycle after it re-run
    assert report.ok, report.divergence and report.divergence.describe()


def test_a_patch_violating_an_invariant_is_rejected_and_nothing_is_written(chorus):
    http, client = chorus
    sid = new_session(http)
    before = log(client, sid)
    r = http.post(f"/v1/sessions/{sid}/patches", json={"operations": [lamp_lit(http, sid)], "mode": "commit"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["valid"] is False and out["committed"] is False
    assert [v["invariant"] for v in out["violations"]] == ["component.light"]
    assert log(client, sid) == before


def test_restore_starts_a_new_lineage_and_leaves_the_parent(chorus):
    http, client = chorus
    sid = new_session(http)
    r = http.post(f"/v1/sessions/{sid}/steps", json={"cycles": 2}, headers=OPERATE)
    assert r.status_code == 200, r.text
    assert [c["cycle"] for c in r.json()["cycles"]] == [1, 2]
    parent_log = log(client, sid)
    r = http.post(f"/v1/sessions/{sid}/restore", json={"cycle": 1}, headers=OPERATE)
    assert r.status_code == 201, r.text
    child = r.json()
    assert child["session_id"] != sid and child["parent"] == sid and child["parent_cycle"] == 1 and child["cycle"] == 1
    assert log(client, sid) == parent_log
    assert http.post(f"/v1/sessions/{child['session_id']}/steps", headers=OPERATE).json()["cycles"][0]["cycle"] == 2
    assert http.get(f"/v1/sessions/{sid}", headers=READ).json()["cycle"] == 2
    assert http.post(f"/v1/sessions/{sid}/restore", json={"cycle": 9}, headers=OPERATE).status_code == 400


def test_resume_runs_in_the_background_then_pauses(http):
    sid = new_session(http)
    r = http.post(f"/v1/sessions/{sid}/resume", json={"cycles": 2}, headers=OPERATE)
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 120  # a bound on a hang, not a timing assertion
    while http.get(f"/v1/sessions/{sid}", headers=READ).json()["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    info = http.get(f"/v1/sessions/{sid}", headers=READ).json()
    assert (info["state"], info["cycle"], info["error"]) == ("paused", 2, None)  # ran its 2 cycles, then stopped
    http.post(f"/v1/sessions/{sid}/resume", json={"cycles": 1000}, headers=OPERATE)
    paused = http.post(f"/v1/sessions/{sid}/pause", headers=OPERATE).json()
    assert paused["state"] == "paused"
    cycle = paused["cycle"]
    assert http.get(f"/v1/sessions/{sid}", headers=READ).json()["cycle"] == cycle  # nothing runs once paused
    turn = http.post(f"/v1/sessions/{sid}/turns", json={"text": "Hello?"}, headers=OPERATE).json()
    assert turn["result"]["cycle"] == cycle + 1


def test_the_event_stream_sends_the_session_events_with_positions(http):
    sid = new_session(http)
    http.post(f"/v1/sessions/{sid}/steps", headers=OPERATE)
    last = http.get(f"/v1/sessions/{sid}/events", params={"limit": 1000}, headers=READ).json()["last_position"]
    frames = []
    with http.stream("GET", f"/v1/sessions/{sid}/events/stream", params={"access_token": "r1"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        frame: dict = {}
        for line in r.iter_lines():
            if line.startswith("id: "):
                frame["id"] = int(line[4:])
            elif line.startswith("data: "):
                frame["data"] = json.loads(line[6:])
            elif not line and "id" in frame:
                frames.append(frame)
                frame = {}
                if frames[-1]["id"] >= last:
                    break
    ids = [f["id"] for f in frames]
    assert ids == sorted(set(ids)) and ids[-1] == last
    assert {f["data"]["run_id"] for f in frames} == {sid}
    assert "CycleCommitted" in [f["data"]["type"] for f in frames]


@pytest.mark.parametrize(
    ("method", "path", "body", "allowed"),
    [
        ("GET", "", None, "read"),
        ("GET", "/overview", None, "read"),
        ("POST", "/turns", {"text": "hello"}, "operate"),
        ("POST", "/steps", {"cycles": 1}, "operate"),
        ("POST", "/patches", {"operations": [{"op": "set_environment", "key": "weather", "value": "fog"}]}, "admin"),
        ("POST", "/stimuli", {"text": "hello"}, "admin"),
        ("GET", "/synths/Thomas/monologue", None, "admin"),
    ],
)
def test_scopes_on_session_routes(http, method, path, body, allowed):
    sid = new_session(http)
    order = ["read", "operate", "admin"]
    for scope, headers in zip(order, (READ, OPERATE, ADMIN), strict=True):
        r = http.request(method, f"/v1/sessions/{sid}{path}", json=body, headers=headers)
        expected_ok = order.index(scope) >= order.index(allowed)
        assert (r.status_code < 300) == expected_ok, (scope, r.status_code, r.text)
        if not expected_ok:
            assert r.status_code == 403 and "\n" not in r.json()["detail"]
    assert http.request(method, f"/v1/sessions/{sid}{path}", json=body).status_code == 401


def test_unknown_sessions_and_bad_input_get_one_line_4xx(http):
    for method, path, body in [
        ("GET", "/nope", None),
        ("GET", "/nope/overview", None),
        ("GET", "/nope/events", None),
        ("POST", "/nope/turns", {"text": "hi"}),
        ("POST", "/nope/patches", {"operations": [{"op": "set_environment", "key": "k", "value": 1}]}),
    ]:
        r = http.request(method, f"/v1/sessions{path}", json=body, headers=ADMIN)
        assert r.status_code == 404, (path, r.text)
        assert "nope" in r.json()["detail"] and "\n" not in r.json()["detail"]
    sid = new_session(http)
    bad = [
        ("POST", "", {"pack": "../etc/passwd"}, 400),
        ("POST", "", {"pack_yaml": "name: x\nlocations: 3\n"}, 400),
        ("POST", f"/{sid}/patches", {"operations": [{"op": "delete_world"}]}, 422),
        ("POST", f"/{sid}/patches", {"operations": []}, 422),
        ("GET", f"/{sid}/objects/Unicorn", None, 404),
        ("GET", f"/{sid}/changes", None, 400),
        ("GET", f"/{sid}/overview?at=7", None, 400),
    ]
    for method, path, body, status in bad:
        r = http.request(method, f"/v1/sessions{path}", json=body, headers=ADMIN)
        assert r.status_code == status, (path, r.text)
        assert "\n" not in r.json()["detail"]


def test_the_stream_resumes_after_last_event_id(http):
    sid = new_session(http)
    http.post(f"/v1/sessions/{sid}/steps", headers=OPERATE)
    events = http.get(f"/v1/sessions/{sid}/events", params={"limit": 1000}, headers=READ).json()["events"]
    middle, last = events[len(events) // 2]["position"], events[-1]["position"]
    ids = []
    headers = {**READ, "Last-Event-ID": str(middle)}
    with http.stream("GET", f"/v1/sessions/{sid}/events/stream", headers=headers) as r:
        for line in r.iter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
                if ids[-1] >= last:
                    break
    assert ids == [e["position"] for e in events if e["position"] > middle]


def test_a_cycle_run_outside_the_server_is_picked_up(chorus):
    http, client = chorus
    sid = new_session(http)
    http.post(f"/v1/sessions/{sid}/steps", headers=OPERATE)  # the server's shell is now at cycle 1
    Simulation(client, sid, ray=False).step(1)  # as `chorus sim step --in-process` would
    turn = http.post(f"/v1/sessions/{sid}/turns", json={"text": "Anyone there?"}, headers=OPERATE)
    assert turn.status_code == 200, turn.text
    assert turn.json()["result"]["cycle"] == 3
    assert [c["cycle"] for c in http.get(f"/v1/sessions/{sid}/reports", headers=READ).json()["reports"]] == [1, 2, 3]
