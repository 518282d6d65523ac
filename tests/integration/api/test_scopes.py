"""The scope matrix: every route of the app's OpenAPI document × {no token, read, operate,
admin} → the expected status. A route added later is in the matrix without an edit here;
its scope is read from its `require(...)` dependency, and the runs routes' scopes are
also pinned below, so changing one is a deliberate act."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.api.auth import (
    SCOPES,
    AuthConfigError,
    Principal,
    allows,
    load_tokens,
    parse_tokens,
    token_table,
)
from actors.runtime.settings import Settings

from .conftest import BEARER, TOKENS

# The routes this helper owns, and the scope each needs (None: public).
PINNED = {
    ("GET", "/v1/health"): None,
    ("POST", "/v1/runs"): "operate",
    ("GET", "/v1/runs"): "read",
    ("GET", "/v1/runs/{run_id}"): "read",
    ("GET", "/v1/runs/{run_id}/events"): "read",
    ("GET", "/v1/runs/{run_id}/events/stream"): "read",
    ("POST", "/v1/runs/{run_id}/cancel"): "operate",
    ("POST", "/v1/runs/{run_id}/fork"): "operate",
    ("GET", "/v1/runs/{run_id}/replay"): "read",
    ("GET", "/v1/runs/{run_id}/llm"): "read",
    ("GET", "/v1/runs/{run_id}/state"): "read",
    ("GET", "/v1/diff"): "read",
}
PUBLIC_PATHS = {"/v1/health"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scopes")
    settings = Settings.from_env(data_dir=tmp / "data", store_url=f"sqlite:///{tmp / 'c.db'}", llm_base_url="http://127.0.0.1:9/v1")
    return create_app(settings, tokens=TOKENS)


@pytest.fixture(scope="module")
def http(app):
    with TestClient(app) as c:
        yield c


def operations(app) -> list[tuple[str, str]]:
    spec = app.openapi()
    return sorted((method.upper(), path) for path, item in spec["paths"].items() for method in item if method in ("get", "post", "put", "patch", "delete"))


def _declared_scope(app, method: str, path: str) -> str | None:
    """The scope of the route's `require(...)` dependency, found in its dependency tree."""
    try:
        from fastapi.routing import iter_route_contexts

        contexts = [(c.path, getattr(c.original_route, "methods", set()), c.original_route) for c in iter_route_contexts(app.routes)]
    except ImportError:
        contexts = [(r.path, getattr(r, "methods", set()), r) for r in app.routes]
    for p, methods, route in contexts:
        if p == path and method in (methods or ()):
            found = _walk(getattr(route, "dependant", None))
            return found[0] if found else None
    return None


def _walk(dependant: Any) -> list[str]:
    if dependant is None:
        return []
    found = []
    call = getattr(dependant, "call", None)
    name = getattr(call, "__name__", "")
    if name.startswith("require_") and name[len("require_"):] in SCOPES:
        found.append(name[len("require_"):])
    for sub in dependant.dependencies:
        found.extend(_walk(sub))
    return found


def _request(http: TestClient, method: str, path: str, headers: dict[str, str]):
    url = re.sub(r"\{[^}]+\}", "no-such-id", path)
    if method == "GET":
        return http.get(url, headers=headers, params={"stream": "x:no-such-id", "a": "x", "b": "y"} if "{" not in path or "state" in path else None)
    return http.request(method, url, headers=headers, json={})  # {}: never a valid body, so nothing runs


def matrix(app) -> list[tuple[str, str, str | None]]:
    return [(m, p, who) for m, p in operations(app) for who in (None, *SCOPES)]


def test_every_pinned_route_is_served_and_no_route_lacks_a_scope(app):
    ops = set(operations(app))
    assert set(PINNED) <= ops, sorted(set(PINNED) - ops)
    for method, path in ops:
        scope = _declared_scope(app, method, path)
        if path in PUBLIC_PATHS:
            assert scope is None
            continue
        assert scope is not None, f"{method} {path} has no require(...) scope: every route must have one"
        if (method, path) in PINNED:
            assert scope == PINNED[(method, path)], f"{method} {path} needs {scope}, pinned {PINNED[(method, path)]}"


@pytest.mark.parametrize("who", [None, *SCOPES], ids=["no-token", *SCOPES])
def test_scope_matrix(app, http, who):
    """Each route × this caller: 401 without a token, 403 below the route's scope, and
    past auth (any other status, never a 5xx) at or above it."""
    headers = BEARER[who] if who else {}
    wrong: list[str] = []
    for method, path in operations(app):
        if path.endswith("/events/stream") and who is not None:
            continue  # past auth it streams; see test_stream_route_is_behind_read
        needed = PINNED.get((method, path), _declared_scope(app, method, path))
        status = _request(http, method, path, headers).status_code
        if path in PUBLIC_PATHS:
            expected = "2xx"
            ok = 200 <= status < 300
        elif who is None:
            expected, ok = "401", status == 401
        elif not allows(who, needed):
            expected, ok = "403", status == 403
        else:
            expected, ok = "past auth", status not in (401, 403) and status < 500
        if not ok:
            wrong.append(f"{method} {path} as {who or 'no token'}: {status}, expected {expected}")
    assert not wrong, "\n".join(wrong)


def test_stream_route_is_behind_read(http):
    url = "/v1/runs/no-such-id/events/stream"
    assert http.get(url).status_code == 401
    assert http.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert http.get(url, headers=BEARER["read"]).status_code == 404  # past auth: the run is unknown


def test_a_get_route_takes_the_token_as_access_token(http):
    assert http.get("/v1/runs", params={"access_token": "r-token"}).status_code == 200
    assert http.get("/v1/runs", params={"access_token": "nope"}).status_code == 401
    # a mutation never takes it from the query string
    assert http.post("/v1/runs", params={"access_token": "a-token"}, json={}).status_code == 401


def test_401_and_403_say_why_in_one_line(http):
    r = http.get("/v1/runs")
    assert r.status_code == 401 and r.json() == {"detail": "missing bearer token"}
    assert r.headers["www-authenticate"] == "Bearer"
    r = http.get("/v1/runs", headers={"Authorization": "Bearer nope"})
    assert r.json() == {"detail": "unknown bearer token"}
    r = http.post("/v1/runs", headers=BEARER["read"], json={"goal": "x"})
    assert r.status_code == 403
    assert r.json() == {"detail": "this route needs scope 'operate'; the token has 'read'"}


def test_health_says_auth_is_on(http):
    body = http.get("/v1/health").json()
    assert body["auth"]["enabled"] is True and body["auth"]["tokens"] == 3


def test_with_no_tokens_access_is_open_and_health_says_so(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path, store_url="memory://", llm_base_url="http://127.0.0.1:9/v1")
    with TestClient(create_app(settings, tokens={})) as http:
        assert http.get("/v1/runs").status_code == 200
        auth = http.get("/v1/health").json()["auth"]
    assert auth["enabled"] is False and "auth is OFF" in auth["detail"]


# -- the token table (pure) -----------------------------------------------------------------


def test_tokens_parse_from_the_env_format_and_the_file_format(tmp_path):
    assert parse_tokens("r1=read, o1=operate,a1=admin") == {
        "r1": Principal(name="token:r1…", scope="read"),
        "o1": Principal(name="token:o1…", scope="operate"),
        "a1": Principal(name="token:a1…", scope="admin"),
    }
    f = tmp_path / "tokens"
    f.write_text("# who may do what\nalice:s3cret-token=admin\n\nbob-token=read  # a comment\n")
    table = load_tokens({"CHORUS_API_TOKENS_FILE": str(f)})
    assert table == {"s3cret-token": Principal(name="alice", scope="admin"), "bob-token": Principal(name="token:bob-…", scope="read")}
    # the variable wins over the file
    assert set(load_tokens({"CHORUS_API_TOKENS": "x=read", "CHORUS_API_TOKENS_FILE": str(f)})) == {"x"}
    assert load_tokens({}) == {}
    assert token_table({"t": "operate"}) == {"t": Principal(name="token:t…", scope="operate")}


@pytest.mark.parametrize(
    "text, message",
    [
        ("r1=reader", "unknown scope 'reader'"),
        ("justatoken", "expected token=scope"),
        ("=read", "expected token=scope"),
        ("alice:=read", "empty token"),
    ],
)
def test_a_bad_token_list_is_one_line(text, message):
    with pytest.raises(AuthConfigError, match=message) as e:
        parse_tokens(text)
    assert "\n" not in str(e.value)


def test_a_missing_token_file_is_one_line(tmp_path):
    with pytest.raises(AuthConfigError, match="cannot read it"):
        load_tokens({"CHORUS_API_TOKENS_FILE": str(tmp_path / "nope")})


def test_scopes_are_ordered():
    assert allows("admin", "read") and allows("operate", "operate") and not allows("read", "operate")
    assert not allows("nobody", "read")
