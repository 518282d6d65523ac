"""A run whose agent function waits shows as "waiting", with what it waits for, in
`GET /v1/runs` and `Client.runs()` (and `chorus runs`' status column), not only on its
function's own stream."""

from __future__ import annotations

from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.runtime.client import Client
from actors.runtime.settings import Settings
from actors.testing import run_agent
from events.store import EventStore
from tests.support.durable_agents import approval_then_done

from .conftest import BEARER, TOKENS


def test_a_waiting_run_is_listed_as_waiting_with_what_it_waits_for(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=url, llm_base_url="http://127.0.0.1:9/v1")
    store = EventStore(url)
    waiting = run_agent(approval_then_done, "ship it", store=store)
    assert waiting.status == "waiting"
    with TestClient(create_app(settings, tokens=TOKENS)) as http:
        page = http.get("/v1/runs", headers=BEARER["read"]).json()
        row = next(r for r in page["runs"] if r["run_id"] == waiting.run_id)
        assert (row["status"], row["waiting_for"], row["wake_at"]) == ("waiting", "approval", None)
        only = http.get("/v1/runs", params={"status": "waiting"}, headers=BEARER["read"]).json()
        assert [r["run_id"] for r in only["runs"]] == [waiting.run_id]
        one = http.get(f"/v1/runs/{waiting.run_id}", headers=BEARER["read"]).json()
        assert (one["status"], one["waiting_for"], one["wake_at"]) == ("waiting", "approval", None)  # the page pre-fills it
    with Client(settings=settings, start_ray=False) as c:
        listed = next(r for r in c.runs() if r["run_id"] == waiting.run_id)
        assert (listed["status"], listed["waiting_for"]) == ("waiting", "approval")
        assert c.run_state(waiting.run_id).status == "waiting"
    waiting.signal("approval", True)
    with Client(settings=settings, start_ray=False) as c:
        listed = next(r for r in c.runs() if r["run_id"] == waiting.run_id)
        assert (listed["status"], listed["waiting_for"]) == ("completed", None)
    store.close()
