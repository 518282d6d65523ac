"""Bad JSON, wrong types, unknown ids and impossible requests get a 4xx whose body is
exactly `{"detail": "one line"}`; an unexpected failure is a one-line 500, never a trace.
No Ray: every case is refused before a run would start."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.api.places import ApiConfig
from actors.runtime.settings import Settings

RUN = "known-run"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "repo").mkdir()
    settings = Settings.from_env(data_dir=tmp / "data", store_url="memory://", llm_base_url="http://127.0.0.1:9/v1")
    app = create_app(settings, tokens={}, config=ApiConfig.from_env(settings, env={}, workspace_dirs=[tmp]))
    app.state.chorus.client.begin_run(RUN, goal="a goal", kind="react", params={})  # recorded, never started
    app.state.root = tmp / "repo"
    return app


@pytest.fixture(scope="module")
def http(app):
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def one_line_error(r, status: int | tuple[int, ...]) -> str:
    statuses = status if isinstance(status, tuple) else (status,)
    assert r.status_code in statuses, (r.status_code, r.text)
    body = r.json()
    assert list(body) == ["detail"] and isinstance(body["detail"], str), body
    assert body["detail"] and "\n" not in body["detail"] and "Traceback" not in body["detail"]
    return body["detail"]


def test_malformed_json(http):
    r = http.post("/v1/runs", content=b'{"goal": ', headers={"Content-Type": "application/json"})
    assert one_line_error(r, 422).startswith("malformed JSON body")


@pytest.mark.parametrize(
    "body, says",
    [
        ({"goal": 3}, "body.goal: Input should be a valid string"),
        ({"goal": ""}, "body.goal: String should have at least 1 character"),
        ({}, "body.goal: Field required"),
        ({"goal": "x", "colour": "red"}, "body.colour: Extra inputs are not permitted"),
        ({"goal": "x", "params": []}, "body.params: Input should be a valid dictionary"),
        ({"goal": "x", "budget": {"max_llm_calls": "many"}}, "body.budget.max_llm_calls"),
        ([1, 2], "body: Input should be a valid dictionary"),
    ],
)
def test_wrong_types_are_422(http, body, says):
    assert one_line_error(http.post("/v1/runs", json=body), 422).startswith(says)


@pytest.mark.parametrize(
    "body, says",
    [
        ({"goal": "x", "kind": "nope"}, "no run kind registered as 'nope'"),
        ({"goal": "x", "agent": "nope"}, "no run kind registered as 'nope'"),  # the deprecated name
        ({"goal": "x", "kind": "react", "agent": "react"}, "not both `kind` and the deprecated `agent`"),
        ({"goal": "x", "params": {"bogus": 1}}, "unexpected keyword argument 'bogus'"),
        ({"goal": "x", "params": {"max_iterations": 0}}, "max_iterations must be at least 1"),
        ({"goal": "x", "params": {"root": "/no/such/folder"}}, "root: '/no/such/folder' is not a workspace this server allows"),
        ({"goal": "x", "budget": {"max_llm_calls": -1}}, "budget max_llm_calls must be positive"),
        ({"goal": "x", "kind": "relay", "params": {"resubmit": ["true"]}}, "option resubmit of a relay run is set by the server"),
        ({"goal": "   "}, "the goal is empty"),
    ],
)
def test_impossible_runs_are_400_and_nothing_is_recorded(app, http, body, says):
    before = app.state.chorus.store.max_position()
    assert says in one_line_error(http.post("/v1/runs", json=body), 400)
    assert app.state.chorus.store.max_position() == before


@pytest.mark.parametrize(
    "method, path, kwargs",
    [
        ("GET", "/v1/runs/nope", {}),
        ("GET", "/v1/runs/nope/events", {}),
        ("GET", "/v1/runs/nope/events/stream", {}),
        ("POST", "/v1/runs/nope/cancel", {}),
        ("POST", "/v1/runs/nope/fork", {"json": {"at": 1}}),
        ("GET", "/v1/runs/nope/replay", {}),
        ("GET", "/v1/runs/nope/llm", {}),
        ("GET", "/v1/runs/nope/state", {"params": {"stream": "agent:nope"}}),
        ("GET", "/v1/diff", {"params": {"a": RUN, "b": "nope"}}),
    ],
)
def test_unknown_run_ids_are_404(http, method, path, kwargs):
    assert "nope" in one_line_error(http.request(method, path, **kwargs), 404)


@pytest.mark.parametrize(
    "method, path, kwargs, says",
    [
        ("GET", "/v1/runs", {"params": {"limit": 0}}, "query.limit"),
        ("GET", "/v1/runs", {"params": {"limit": "x"}}, "query.limit"),
        ("GET", "/v1/runs", {"params": {"status": "sleeping"}}, "query.status"),
        ("GET", f"/v1/runs/{RUN}/events", {"params": {"after": -1}}, "query.after"),
        ("GET", f"/v1/runs/{RUN}/state", {}, "query.stream: Field required"),
        ("GET", f"/v1/runs/{RUN}/state", {"params": {"stream": f"run:{RUN}", "at": 0}}, "query.at"),
        ("POST", f"/v1/runs/{RUN}/fork", {"json": {"at": "later"}}, "body.at"),
        ("POST", f"/v1/runs/{RUN}/fork", {}, "body: Field required"),
        ("POST", f"/v1/runs/{RUN}/fork", {"json": {"at": 1, "temperature": 9}}, "body.temperature"),
        ("POST", f"/v1/runs/{RUN}/cancel", {"json": {"why": "x"}}, "body.why"),
        ("GET", "/v1/runs/bad%20id%21", {}, "path.run_id"),
        ("GET", "/v1/diff", {"params": {"a": RUN}}, "query.b: Field required"),
    ],
)
def test_bad_parameters_are_422(http, method, path, kwargs, says):
    assert one_line_error(http.request(method, path, **kwargs), 422).startswith(says)


def test_a_last_event_id_that_is_not_a_position_is_400(http):
    r = http.get(f"/v1/runs/{RUN}/events/stream", headers={"Last-Event-ID": "yesterday"})
    assert "Last-Event-ID must be a log position" in one_line_error(r, 400)


def test_a_stream_of_another_run_is_404(http):
    r = http.get(f"/v1/runs/{RUN}/state", params={"stream": "agent:other"})
    assert one_line_error(r, 404) == f"run {RUN} has no stream 'agent:other'"


def test_an_unexpected_failure_is_a_one_line_500(app, http, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire\n  File 'x.py', line 1")

    monkeypatch.setattr(app.state.chorus.client, "run_state", broken)
    detail = one_line_error(http.get(f"/v1/runs/{RUN}"), 500)
    assert detail == "internal error (RuntimeError); see the server's log"
