"""The debugging page's routes (actors/api/debug_routes.py), in-process, no Ray: a run as a
fixture download (admin when it holds admin-only records), each event's line from its kind's
`describe`, two runs side by side as data; and the scopes of the actions the page offers
(a read token may not fork, cancel, resume or signal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.runtime.client import Client
from actors.runtime.replay import diff_runs, load_fixture, replay_run
from actors.runtime.replay.compare import message_diff, state_diff
from actors.runtime.settings import Settings
from tests.support import fake_llm
from tests.support.recording import record_run

from .conftest import BEARER, TOKENS

LIGHTHOUSE = Path(__file__).resolve().parents[3] / "actors" / "simulation" / "packs" / "lighthouse.yaml"


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    from actors.simulation.client import simulate
    from actors.testing.simulation import scripted_mind, scripted_synths

    base = tmp_path_factory.mktemp("debug-routes")
    settings = Settings.from_env(data_dir=base, store_url=f"sqlite:///{base / 'c.db'}", llm_base_url="http://127.0.0.1:9/v1")
    client = Client(settings=settings, start_ray=False)
    (base / "repo").mkdir()
    record_run(client.store, base / "repo", run_id="ra")
    record_run(client.store, base / "repo", script=fake_llm.repeater, run_id="rb")
    simulate(client, LIGHTHOUSE, run_id="sim", ray=False, llm=scripted_synths(scripted_mind)).step(1)
    with TestClient(create_app(client=client, tokens=TOKENS)) as h:
        h.store = client.store
        yield h
    client.close()


def test_the_fixture_download_loads_and_is_admin_only_for_a_run_with_admin_only_records(http, tmp_path):
    got = http.get("/v1/runs/ra/fixture", headers=BEARER["read"])
    assert got.status_code == 200
    assert got.headers["content-disposition"] == 'attachment; filename="ra.jsonl"'
    (tmp_path / "ra.jsonl").write_text(got.text)
    loaded, run_id = load_fixture(tmp_path / "ra.jsonl")  # sealed: an edited line would not load
    assert run_id == "ra"
    assert [r.event.event_id for r in loaded.read_all(run_id="ra")] == [r.event.event_id for r in http.store.read_all(run_id="ra")]
    assert replay_run(loaded, "ra").ok
    assert http.get("/v1/runs/ra/fixture").status_code == 401
    assert http.get("/v1/runs/nosuch/fixture", headers=BEARER["read"]).status_code == 404
    # a simulation's synths think in admin-only records: below admin, no export
    refused = http.get("/v1/runs/sim/fixture", headers=BEARER["operate"])
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    assert http.get("/v1/runs/sim/fixture", headers=BEARER["admin"]).status_code == 200


def test_labels_are_the_kinds_own_lines(http):
    out = http.get("/v1/runs/rb/labels", headers=BEARER["read"]).json()
    records = list(http.store.read_all(run_id="rb"))
    assert [l["position"] for l in out["labels"]] == [r.position for r in records]
    assert out["labels"][0]["label"] == "submitted: What is the marker?"
    rejected = [l for l, r in zip(out["labels"], records, strict=True) if r.event.type_name == "StepRejected"]
    assert rejected and all(l["error"] for l in rejected)
    # a synth's thoughts are admin-only: below admin its line is only the type
    sim = http.get("/v1/runs/sim/labels", headers=BEARER["read"]).json()["labels"]
    full = http.get("/v1/runs/sim/labels", headers=BEARER["admin"]).json()["labels"]
    kinds = {r.position: r.event.type_name for r in http.store.read_all(run_id="sim")}
    cognized = [i for i, l in enumerate(sim) if kinds[l["position"]] == "SynthCognized"]
    assert cognized and all(sim[i]["label"] == "SynthCognized" for i in cognized)
    assert any(full[i]["label"] != "SynthCognized" for i in cognized)


def test_compare_is_the_diff_as_data_with_the_state_and_prompt_at_the_parting(http):
    c = http.get("/v1/compare", params={"a": "ra", "b": "rb"}, headers=BEARER["read"]).json()
    d = diff_runs(http.store, "ra", "rb")  # what `chorus diff` prints
    assert c["shared"] == d.shared and not c["identical"]
    assert (c["first_a"]["type"], c["first_a"]["version"]) == (d.first_a.type_name, d.first_a.version)
    assert (c["first_b"]["type"], c["first_b"]["version"]) == (d.first_b.type_name, d.first_b.version)
    parting = next(r for r in c["rows"] if not r["same"])
    assert parting["index"] == d.shared and all(r["same"] for r in c["rows"] if r["index"] < d.shared)
    # the first call's completions differ (search, then answer; search, try 1): same prompt
    assert d.first_a.type_name == "LlmCompleted"
    assert c["prompt_a"]["data"]["messages"] == c["prompt_b"]["data"]["messages"]
    assert {m["status"] for m in c["prompt_diff"]} == {"same"}
    # the state once each side's first differing event is applied
    assert c["state_diff"], "the two completions leave the agents in different states"
    for change in c["state_diff"]:
        assert change["a"] != change["b"]
    positions = {r.event.event_id: r.position for r in http.store.read_all(run_id="ra")}
    assert c["first_a"]["position"] == positions[d.first_a.event_id]
    same = http.get("/v1/compare", params={"a": "ra", "b": "ra"}, headers=BEARER["read"]).json()
    assert same["identical"] and same["first_a"] is None and same["state_diff"] == []


def test_compare_refuses_bad_input(http):
    assert http.get("/v1/compare", params={"a": "ra", "b": "nosuch"}, headers=BEARER["read"]).status_code == 404
    assert http.get("/v1/compare", params={"a": "ra", "b": "../x"}, headers=BEARER["read"]).status_code == 422
    assert http.get("/v1/compare", params={"a": "ra", "b": "rb", "after": 10_000}, headers=BEARER["read"]).status_code == 422
    assert http.get("/v1/compare", params={"a": "ra", "b": "sim"}, headers=BEARER["read"]).status_code == 400  # two kinds
    assert http.get("/v1/compare", params={"a": "ra", "b": "rb"}).status_code == 401


def test_a_read_token_may_look_but_not_act(http):
    """The page's buttons call these routes; below operate each is a 403 and nothing is written."""
    before = sum(1 for _ in http.store.read_all())
    for path, body in (
        ("/v1/runs/ra/fork", {"at": 5, "model": "m2"}),
        ("/v1/runs/ra/cancel", {"reason": "no"}),
        ("/v1/runs/ra/resume", None),
        ("/v1/runs/ra/signals/approval", {"payload": True}),
    ):
        got = http.post(path, json=body, headers=BEARER["read"])
        assert got.status_code == 403, (path, got.text)
    assert http.get("/v1/runs/ra/replay", headers=BEARER["read"]).json()["ok"] is True
    assert sum(1 for _ in http.store.read_all()) == before


def test_fork_with_an_edit_is_operate_and_bounded(http):
    """What the route refuses before anything runs (the fork itself continues on Ray: the
    browser test makes one and replays it)."""
    calls = [r.position for r in http.store.read_all(run_id="ra") if r.event.type_name == "LlmCompleted"]
    other = next(r.position for r in http.store.read_all(run_id="ra") if r.event.type_name == "StepDecided")
    before = sum(1 for _ in http.store.read_all())
    path = "/v1/runs/ra/fork-edit"
    assert http.post(path, json={"at": calls[0], "completion": "x"}, headers=BEARER["read"]).status_code == 403
    assert http.post(path, json={"at": calls[0], "completion": "x"}).status_code == 401
    too_long = http.post(path, json={"at": calls[0], "completion": "x" * 100_001}, headers=BEARER["operate"])
    assert too_long.status_code == 422
    assert http.post(path, json={"at": calls[0], "completion": ""}, headers=BEARER["operate"]).status_code == 422
    assert http.post(path, json={"at": 0, "completion": "x"}, headers=BEARER["operate"]).status_code == 422
    assert http.post(path, json={"at": calls[0], "completion": "x", "by": "me"}, headers=BEARER["operate"]).status_code == 422
    not_a_call = http.post(path, json={"at": other, "completion": "x"}, headers=BEARER["operate"])
    assert not_a_call.status_code == 400 and "not an LLM call" in not_a_call.json()["detail"]
    assert http.post(path, json={"at": 10**9, "completion": "x"}, headers=BEARER["operate"]).status_code == 400
    assert http.post("/v1/runs/nosuch/fork-edit", json={"at": 1, "completion": "x"}, headers=BEARER["operate"]).status_code == 404
    sim = http.post("/v1/runs/sim/fork-edit", json={"at": 1, "completion": "x"}, headers=BEARER["operate"])
    assert sim.status_code == 400 and "not an agent run" in sim.json()["detail"]
    assert sum(1 for _ in http.store.read_all()) == before  # nothing written


def test_message_and_state_diffs():
    old = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    new = [{"role": "system", "content": "s"}, {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a"}]
    assert [m["status"] for m in message_diff(old, new)] == ["same", "changed", "added"]
    assert [m["status"] for m in message_diff(new, old)] == ["same", "changed", "removed"]
    assert state_diff({"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": [1, 3]}, "d": 0}) == [
        {"path": "b.c[1]", "a": 2, "b": 3, "only": None},
        {"path": "d", "a": None, "b": 0, "only": "b"},
    ]
