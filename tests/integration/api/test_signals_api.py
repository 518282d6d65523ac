"""POST /v1/runs/{id}/signals/{name} (actors/api/signals.py): operate-scoped; an unknown
run is 404, a run that ended is 400; the signal reaches `Client.signal` (tested on Ray in
tests/integration/test_function_agents.py)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.runtime.settings import Settings
from actors.testing import run_agent
from events.store import EventStore
from tests.support.function_agents import six_steps

from .conftest import BEARER, TOKENS


def test_signal_route_scopes_and_errors(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=url, llm_base_url="http://127.0.0.1:9/v1")
    store = EventStore(url)
    done = run_agent(six_steps, "go", model=["x"], store=store)
    assert done.status == "completed"
    with TestClient(create_app(settings, tokens=TOKENS)) as http:
        path = f"/v1/runs/{done.run_id}/signals/approval"
        assert http.post(path, json={"payload": True}).status_code == 401
        assert http.post(path, json={"payload": True}, headers=BEARER["read"]).status_code == 403
        ended = http.post(path, json={"payload": True}, headers=BEARER["operate"])
        assert ended.status_code == 400 and "no more signals" in ended.text
        unknown = http.post("/v1/runs/nosuchrun/signals/approval", json={}, headers=BEARER["operate"])
        assert unknown.status_code == 404
    store.close()
