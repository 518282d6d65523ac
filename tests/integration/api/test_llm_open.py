"""GET /v1/runs/{id}/llm/open: a run's LLM calls in flight with the tokens streamed so far,
read from the progress notes the provider writes (actors.runtime.llm.call_progress)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app

from .conftest import BEARER, TOKENS
from .open_calls import end_progress, run_with_open_call, write_progress

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def http(env):
    with TestClient(create_app(client=env.client, tokens=TOKENS, config=env.config)) as c:
        yield c


def test_an_open_call_shows_its_tokens_so_far(http, env):
    request = run_with_open_call(env.client.store, env.root.parent / "held-repo", "held-open")
    url = "/v1/runs/held-open/llm/open"
    r = http.get(url, headers=BEARER["read"])
    assert r.status_code == 200, r.text
    [call] = r.json()["calls"]
    assert call["call_index"] == 2 and call["stream_id"] == "agent:held-open"
    assert call["tokens"] is None  # asked, no note yet: the call shows, without a count
    assert call["elapsed_s"] >= 0

    write_progress(env.settings.data_dir, request, 42, 3.24)
    [call] = http.get(url, headers=BEARER["read"]).json()["calls"]
    assert (call["tokens"], call["elapsed_s"]) == (42, 3.2)
    write_progress(env.settings.data_dir, request, 97, 4.3)
    [call] = http.get(url, headers=BEARER["read"]).json()["calls"]
    assert (call["tokens"], call["elapsed_s"]) == (97, 4.3)

    end_progress(env.settings.data_dir, request)  # the answer came: the note is gone
    [call] = http.get(url, headers=BEARER["read"]).json()["calls"]
    assert call["tokens"] is None

    assert http.get(url).status_code == 401


def test_a_run_with_no_open_call(http, env):
    from tests.support.recording import record_run

    (root := env.root.parent / "done-repo").mkdir()
    record_run(env.client.store, root, run_id="held-done")
    r = http.get("/v1/runs/held-done/llm/open", headers=BEARER["read"])
    assert r.status_code == 200, r.text
    assert r.json() == {"run_id": "held-done", "calls": []}


@pytest.mark.parametrize("run_id", ["..%2F..%2Fetc", "a%20b", "-x", "x" * 200])
def test_a_bad_run_id_is_refused(http, run_id):
    r = http.get(f"/v1/runs/{run_id}/llm/open", headers=BEARER["read"])
    assert r.status_code in (404, 422), r.text


def test_an_unknown_run_is_404(http):
    assert http.get("/v1/runs/no-such-run/llm/open", headers=BEARER["read"]).status_code == 404
