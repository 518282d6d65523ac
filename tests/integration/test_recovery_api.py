"""The recovery routes (actors/api/recovery.py, actors/relay/api.py): a relay's escalations listed with read and
resolved with operate (EscalationResolved, naming the token), and a relay whose process
died resumed over HTTP until it completes. Scripted models, no Ray."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

import actors.relay.kind  # noqa: F401  (registers the relay run kind)
from actors.api.app import create_app
from actors.relay import session
from actors.relay.recording import scheduler_stream
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.relay.events import EscalationResolved
from tests.support import relay_llm

TOKENS = {"r-token": "read", "o-token": "operate"}
READ, OPERATE = ({"Authorization": f"Bearer {t}"} for t in TOKENS)


def model(request):
    """mul is always wrong: with no retries, item 2 escalates."""
    return relay_llm.model(request).replace("return a * b", "return a + b")


@pytest.fixture
def api(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    (tmp_path / "roadmap.yaml").write_text(relay_llm.ROADMAP)
    with (
        Client(settings=settings, start_ray=False, llm=ScriptedProvider(model)) as client,
        TestClient(create_app(client=client, tokens=TOKENS)) as http,
    ):
        yield client, http, tmp_path


def start(client, tmp, run_id):
    (tmp / run_id).mkdir()
    session.start_relay(
        client, "arithmetic", run_id=run_id, workspace=tmp / run_id, roadmap=tmp / "roadmap.yaml", max_retries=0
    )


def test_escalations_are_listed_with_read_and_resolved_with_operate(api):
    client, http, tmp = api
    start(client, tmp, "esc")
    session.serve_relay(client, "esc")
    listed = http.get("/v1/runs/esc/escalations", headers=READ)
    assert listed.status_code == 200 and listed.json()["total"] == 1
    (x,) = listed.json()["escalations"]
    assert x["item"] == 2 and not x["resolved"] and sorted(x["rolled_back"]) == ["calc_mul.py", "test_mul.py"]
    path = f"/v1/runs/esc/escalations/{x['escalation_id']}/resolve"
    assert http.post(path, json={"note": "done by hand"}, headers=READ).status_code == 403
    assert http.post(path, json={"note": ""}, headers=OPERATE).status_code == 422
    done = http.post(path, json={"note": "done by hand"}, headers=OPERATE)
    assert done.status_code == 200 and done.json()["resolved"] and done.json()["resolution"] == "done by hand"
    assert done.json()["resolved_by"]  # the token's name
    bad = http.post("/v1/runs/esc/escalations/esc:escalation:7/resolve", json={"note": "x"}, headers=OPERATE)
    assert bad.status_code == 400 and "no escalation" in bad.json()["detail"]
    assert http.get("/v1/escalations?open=true", headers=READ).json()["total"] == 0
    assert http.get("/v1/runs/nope/escalations", headers=READ).status_code == 404
    resolved = [e for e in client.store.read_stream(scheduler_stream("esc")) if isinstance(e, EscalationResolved)]
    assert len(resolved) == 1


def test_a_relay_nothing_serves_is_resumed_over_http_and_completes(api):
    client, http, tmp = api
    start(client, tmp, "dead")  # recorded and planned; its serving process "died" before a turn
    assert client.run_state("dead").status == "running"
    assert http.post("/v1/runs/dead/resume", headers=READ).status_code == 403
    resumed = http.post("/v1/runs/dead/resume", headers=OPERATE)
    assert resumed.status_code == 200 and resumed.json()["kind"] == "relay"
    deadline = time.monotonic() + 120  # a safety net, not a measurement
    while client.run_state("dead").status == "running":
        assert time.monotonic() < deadline, "the resumed relay did not end"
        time.sleep(0.1)
    assert client.run_state("dead").status == "completed"
    again = http.post("/v1/runs/dead/resume", headers=OPERATE)
    assert again.status_code == 400 and "nothing to resume" in again.json()["detail"]
    assert http.post("/v1/runs/nope/resume", headers=OPERATE).status_code == 404
