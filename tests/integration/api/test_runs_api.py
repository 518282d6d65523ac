"""Runs over HTTP against a real local Ray and a SQLite store, with a scripted model:
submit (202, the principal recorded), read, events, the LLM log, replay, state, fork,
diff, cancel. Each route's answer is checked against what the runtime itself says."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import actors.simulation
from actors.api.app import create_app
from actors.runtime.replay import diff_runs, state_at
from projections.audit_query import AuditTrail
from tests.support import fake_llm

from .conftest import BEARER, TOKENS, make_env, wait_for_end

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def http(env):
    with TestClient(create_app(client=env.client, tokens=TOKENS, config=env.config)) as c:
        yield c


@pytest.fixture(scope="module")
def finished(http, env):
    """One run submitted over HTTP and finished."""
    r = http.post("/v1/runs", headers=BEARER["operate"], json={"goal": "What is the marker?", "params": {"root": str(env.root)}})
    assert r.status_code == 202, r.text
    run_id = r.json()["run_id"]
    assert r.json()["kind"] == "react"
    wait_for_end(http, run_id)
    return run_id


def test_a_submitted_run_completes_and_names_who_asked(http, env, finished):
    body = http.get(f"/v1/runs/{finished}", headers=BEARER["read"]).json()
    assert body["status"] == "completed" and "ALPHA-7" in body["result"]
    assert body["requested_by"] == "token:o-to…"
    assert body["lead_stream"] == f"agent:{finished}"
    submitted = env.client.store.read_stream(f"run:{finished}")[0]
    assert submitted.type_name == "RunSubmitted" and submitted.params["requested_by"] == "token:o-to…"


def test_events_are_the_logs_in_order_and_page_by_position(http, env, finished):
    expected = [(r.position, r.event.type_name, r.event.stream_id, r.event.version) for r in env.client.store.read_all(run_id=finished)]
    everything = http.get(f"/v1/runs/{finished}/events", headers=BEARER["read"]).json()
    assert [(e["position"], e["type"], e["stream_id"], e["version"]) for e in everything["events"]] == expected
    assert everything["last_position"] == expected[-1][0]
    assert everything["events"][0]["data"]["goal"] == "What is the marker?"
    paged, after = [], 0
    while True:
        page = http.get(f"/v1/runs/{finished}/events", params={"after": after, "limit": 4}, headers=BEARER["read"]).json()
        if not page["events"]:
            assert page["last_position"] == after
            break
        assert len(page["events"]) <= 4
        paged.extend(e["position"] for e in page["events"])
        after = page["last_position"]
    assert paged == [p for p, *_ in expected]


def test_runs_list_filters_and_pages(http, finished):
    listed = http.get("/v1/runs", params={"kind": "react", "status": "completed"}, headers=BEARER["read"]).json()
    assert finished in [r["run_id"] for r in listed["runs"]] and listed["total"] >= 1
    assert http.get("/v1/runs", params={"kind": "task"}, headers=BEARER["read"]).json() == {"runs": [], "total": 0}
    one = http.get("/v1/runs", params={"limit": 1, "offset": listed["total"]}, headers=BEARER["read"]).json()
    assert one["runs"] == [] and one["total"] == listed["total"]


def test_llm_log_and_usage_are_the_audit_trails(http, env, finished):
    body = http.get(f"/v1/runs/{finished}/llm", headers=BEARER["read"]).json()
    trail = AuditTrail.open(env.client.store)
    calls = trail.llm_calls(run_id=finished)
    assert [c["call_index"] for c in body["calls"]] == [c.call_index for c in calls] == [1, 2, 3]
    assert [c["messages"] for c in body["calls"]] == [c.messages for c in calls]  # the prompts
    assert "Step 1 of 10" in body["calls"][0]["messages"][-1]["content"]
    assert body["usage"]["calls"] == 3
    assert body["usage"]["prompt_tokens"] == sum(c.prompt_tokens for c in calls)
    assert [u["key"] for u in body["by_actor"]] == [f"agent:{finished}"]


def test_replay_verdict_is_identical(http, finished):
    body = http.get(f"/v1/runs/{finished}/replay", headers=BEARER["read"]).json()
    assert body["ok"] is True and body["divergence"] is None
    assert body["llm_calls"] == 3 and body["streams"] == [f"agent:{finished}"]


def test_state_at_a_version_is_chorus_state(http, env, finished):
    stream = f"agent:{finished}"
    body = http.get(f"/v1/runs/{finished}/state", params={"stream": stream, "at": 3}, headers=BEARER["read"]).json()
    version, state = state_at(env.client.store, stream, 3)
    assert body == {"stream": stream, "version": version, "state": state.model_dump(mode="json")}
    other = http.get(f"/v1/runs/{finished}/state", params={"stream": "agent:someone-else"}, headers=BEARER["read"])
    assert other.status_code == 404 and "no stream" in other.json()["detail"]


def test_fork_names_who_forked_and_diff_is_chorus_diff(http, env, finished):
    events = http.get(f"/v1/runs/{finished}/events", headers=BEARER["read"]).json()["events"]
    at = next(e["position"] for e in events if e["type"] == "ToolReturned")
    r = http.post(f"/v1/runs/{finished}/fork", json={"at": at, "temperature": 0.5}, headers=BEARER["admin"])
    assert r.status_code == 202, r.text
    fork = r.json()
    assert fork["forked_from"] == f"{finished}@{at}"
    detail = wait_for_end(http, fork["run_id"])
    assert detail["requested_by"] == "token:a-to…"
    assert detail["params"]["llm_params"]["temperature"] == 0.5
    diff = http.get("/v1/diff", params={"a": finished, "b": fork["run_id"]}, headers=BEARER["read"]).json()
    assert diff["lines"] == diff_runs(env.client.store, finished, fork["run_id"]).lines()
    assert diff["first_b"]["type"] == "AgentForked"


def test_a_fork_outside_the_run_is_a_400(http, finished):
    r = http.post(f"/v1/runs/{finished}/fork", json={"at": 10**9}, headers=BEARER["operate"])
    assert r.status_code == 400 and "outside run" in r.json()["detail"]


def test_cancel_records_who_and_stops_the_actor(ray_module, tmp_path):
    ray = ray_module
    slow = make_env(tmp_path, fake_llm.sleepy)  # never answers: runs until stopped
    try:
        with TestClient(create_app(client=slow.client, tokens=TOKENS, config=slow.config)) as http:
            body = {"goal": "Read forever", "params": {"root": str(slow.root), "max_iterations": 200}}
            run_id = http.post("/v1/runs", headers=BEARER["operate"], json=body).json()["run_id"]
            while not any(e["type"] == "ToolReturned" for e in http.get(f"/v1/runs/{run_id}/events", headers=BEARER["read"]).json()["events"]):
                time.sleep(0.05)
            r = http.post(f"/v1/runs/{run_id}/cancel", headers=BEARER["operate"], json={"reason": "enough"})
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "failed"
            assert r.json()["error"]["type"] == "cancelled"
            assert r.json()["error"]["message"] == "cancelled by token:o-to… over HTTP: enough"
            last = slow.client.store.read_stream(f"run:{run_id}")[-1]
            assert last.type_name == "RunFailed" and last.error.type == "cancelled"
            with pytest.raises(ValueError):
                ray.get_actor(f"agent:{run_id}")  # the actor is gone
            again = http.post(f"/v1/runs/{run_id}/cancel", headers=BEARER["operate"])
            assert again.status_code == 200 and again.json()["error"]["message"].endswith("over HTTP: enough")
    finally:
        slow.client.close()


def test_other_kinds_run_over_http_too(http, env, tmp_path):
    """A task workflow runs to its result; a simulation session is recorded (it then waits,
    paused, for its user); both name who asked."""
    task = http.post(
        "/v1/runs", headers=BEARER["operate"],
        json={"kind": "task", "goal": "(list 1 (+ 1 1))", "params": {}},  # its workspace: a fresh folder of the server's
    )  # fmt: skip
    assert task.status_code == 202, task.text
    assert "Deprecation" not in task.headers
    assert (env.config.places["workspaces"][0] / task.json()["run_id"]).is_dir()
    done = wait_for_end(http, task.json()["run_id"])
    assert done["status"] == "completed" and done["kind"] == "task" and done["requested_by"] == "token:o-to…"
    pack = Path(actors.simulation.__file__).with_name("packs") / "lighthouse.yaml"
    # `agent`, the field's old name, is still taken (until 0.2.0), with a Deprecation header.
    sim = http.post("/v1/runs", headers=BEARER["admin"], json={"agent": "simulation", "goal": str(pack)})
    assert sim.status_code == 202, sim.text
    assert sim.json()["kind"] == "simulation" and sim.headers["Deprecation"] == "true"
    assert "send kind='simulation'" in sim.headers["Warning"]
    detail = http.get(f"/v1/runs/{sim.json()['run_id']}", headers=BEARER["read"]).json()
    assert detail["kind"] == "simulation" and detail["requested_by"] == "token:a-to…"
    assert detail["status"] in ("submitted", "running")
