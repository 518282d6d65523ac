"""What a request cannot make the server do (issue 34): read a body larger than the limit,
expand a YAML alias bomb, open a server path of its choosing (or learn whether one exists),
run a command, or pass a malformed id. Each is refused in one line, and the refusals that
matter for cost are shown to happen before the body is read (by counting what was read)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.api.places import ApiConfig
from actors.runtime.client import Client
from actors.runtime.settings import Settings
from actors.simulation.kind import PACKS
from actors.testing.simulation import scripted_synths

TOKENS = {"r1": "read", "o1": "operate", "a1": "admin"}
AS = {scope: {"Authorization": f"Bearer {tok}"} for tok, scope in TOKENS.items()}
LIMIT = 64 * 1024
MB = 1024 * 1024


@pytest.fixture
def chorus(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'c.db'}", llm_base_url="http://127.0.0.1:9/v1")
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "mine.yaml").write_text((PACKS / "lighthouse.yaml").read_text())
    (packs / "escape.yaml").symlink_to("/etc/passwd")
    config = ApiConfig.from_env(settings, env={}, pack_dirs=[packs], max_body_bytes=LIMIT)
    client = Client(settings=settings, llm=scripted_synths(), start_ray=False)
    app = create_app(client=client, tokens=TOKENS, config=config)
    with TestClient(app) as http:
        yield app, http, client
    client.close()


def one_line(r, status: int) -> str:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and len(detail) <= 300, detail
    return detail


# -- the body limit ------------------------------------------------------------------------------


def call(app, headers: list[tuple[bytes, bytes]], chunks, path: str = "/v1/runs") -> tuple[int, bytes, int]:
    """The app as the server calls it, its body from `chunks`: (status, body, bytes read)."""
    read = 0
    sent: list[dict] = []
    it = iter(chunks)

    async def receive():
        nonlocal read
        try:
            chunk = next(it)
        except StopIteration:
            return {"type": "http.request", "body": b"", "more_body": False}
        read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"test"), (b"authorization", b"Bearer a1"), (b"content-type", b"application/json"), *headers],
             "client": ("127.0.0.1", 1), "server": ("test", 80)}  # fmt: skip
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body, read


def fifty_megabytes():
    chunk = b"x" * MB
    for _ in range(50):
        yield chunk


def test_a_50_mb_body_with_its_length_is_refused_before_a_byte_is_read(chorus):
    app, _, _ = chorus
    status, body, read = call(app, [(b"content-length", str(50 * MB).encode())], fifty_megabytes())
    assert status == 413 and read == 0
    assert "larger than this server takes" in json.loads(body)["detail"]


def test_a_50_mb_body_without_a_length_is_refused_once_it_passes_the_limit(chorus):
    app, _, _ = chorus
    status, body, read = call(app, [(b"transfer-encoding", b"chunked")], fifty_megabytes())
    assert status == 413 and read <= LIMIT + MB  # one chunk past the limit, not 50
    assert "\n" not in json.loads(body)["detail"]


def test_every_route_has_the_limit(chorus):
    app, _, _ = chorus
    for path in ("/v1/sessions", "/v1/sessions/abc/turns", "/v1/runs/abc/fork", "/v1/nowhere"):
        status, _, read = call(app, [(b"content-length", str(LIMIT + 1).encode())], fifty_megabytes(), path)
        assert (status, read) == (413, 0), path


def test_a_body_under_the_limit_is_served(chorus):
    _, http, _ = chorus
    r = http.post("/v1/sessions", json={"pack": "lighthouse", "max_microcycles": 1}, headers=AS["operate"])
    assert r.status_code == 201, r.text


# -- YAML ------------------------------------------------------------------------------------------

BOMB = "\n".join(
    ['name: bomb', 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{n}: &{n} [{', '.join(['*' + p] * 9)}]" for p, n in zip("abcde", "bcdef", strict=True)]
)


def test_a_yaml_alias_bomb_is_refused_in_one_line_and_nothing_is_stored(chorus):
    _, http, client = chorus
    before = client.store.max_position()
    detail = one_line(http.post("/v1/sessions", json={"pack_yaml": BOMB}, headers=AS["operate"]), 400)
    assert "alias" in detail
    assert client.store.max_position() == before


def test_a_deeply_nested_pack_is_refused_in_one_line(chorus):
    _, http, _ = chorus
    deep = "name: deep\nenvironment: " + "[" * 5000 + "]" * 5000
    assert "levels deep" in one_line(http.post("/v1/sessions", json={"pack_yaml": deep}, headers=AS["operate"]), 400)


# -- places and commands ---------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["operate", "admin"])
def test_a_pack_path_outside_the_allowed_folders_is_refused_alike_whether_it_exists_or_not(chorus, tmp_path, scope):
    _, http, client = chorus
    before = client.store.max_position()
    said = {}
    for goal in ("/etc", "/etc/passwd", "/no/such/place", "../../../../etc/passwd", str(tmp_path / "packs" / "escape.yaml"),
                 str(tmp_path / "c.db"), "escape"):  # fmt: skip
        r = http.post("/v1/runs", json={"kind": "simulation", "goal": goal}, headers=AS[scope])
        said[goal] = one_line(r, 400).replace(goal, "GOAL")
    assert len(set(said.values())) == 1, said  # the same words for every path: nothing learnt of the server
    assert "directory" not in next(iter(said.values()))
    assert client.store.max_position() == before


def test_a_bundled_pack_or_one_in_an_allowed_folder_runs(chorus, tmp_path):
    _, http, _ = chorus
    for goal in ("lighthouse", "mine", str(tmp_path / "packs" / "mine.yaml")):
        r = http.post("/v1/runs", json={"kind": "simulation", "goal": goal}, headers=AS["operate"])
        assert r.status_code == 202, (goal, r.text)
    r = http.post("/v1/sessions", json={"pack": "mine"}, headers=AS["operate"])
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("scope", ["operate", "admin"])
def test_a_command_is_never_a_request_field(chorus, tmp_path, scope):
    _, http, client = chorus
    before = client.store.max_position()
    body = {"kind": "relay", "goal": "g", "params": {"resubmit": ["sh", "-c", "touch /tmp/pwned"]}}
    assert "server's configuration" in one_line(http.post("/v1/runs", json=body, headers=AS[scope]), 400)
    assert client.store.max_position() == before


def test_a_sandboxed_command_is_an_admin_field_only(chorus):
    """The relay's probes run in the sandbox: an admin may send them, operate never chooses a
    command (and is refused before anything is written)."""
    _, http, client = chorus
    before = client.store.max_position()
    body = {"kind": "relay", "goal": "g", "params": {"probes": {"smoke": ["python", "-c", "print(1)"]}}}
    assert "only an admin token" in one_line(http.post("/v1/runs", json=body, headers=AS["operate"]), 400)
    assert client.store.max_position() == before
    r = http.post("/v1/runs", json=body, headers=AS["admin"])
    # past the options' gate: this app's scripted model then writes no usable roadmap
    assert "only an admin" not in r.text and "roadmap" in one_line(r, 400)


@pytest.mark.parametrize("option", ["tools", "add_tools"])
def test_code_by_import_path_is_an_admin_field_only(chorus, option):
    """A tool named by import path makes the server import that module: below admin, only
    registered names (and nothing is written when refused)."""
    _, http, client = chorus
    before = client.store.max_position()
    body = {"kind": "react", "goal": "g", "params": {option: ["antigravity:fly"]}}
    assert "only an admin token may" in one_line(http.post("/v1/runs", json=body, headers=AS["operate"]), 400)
    assert client.store.max_position() == before
    registered = {"kind": "react", "goal": "g", "params": {option: ["read_file"]}}
    assert "import path" not in http.post("/v1/runs", json=registered, headers=AS["operate"]).text


def test_a_workspace_outside_the_allowed_folders_is_refused(chorus, tmp_path):
    _, http, client = chorus
    before = client.store.max_position()
    said = set()
    for workspace in ("/", "/etc", str(Path.home()), str(tmp_path), "../..", str(tmp_path / "data" / "workspaces")):
        body = {"kind": "relay", "goal": "g", "params": {"workspace": workspace}}
        said.add(one_line(http.post("/v1/runs", json=body, headers=AS["operate"]), 400).replace(repr(workspace), "W"))
        body = {"goal": "g", "params": {"root": workspace}}  # an agent's folder, the same rule
        one_line(http.post("/v1/runs", json=body, headers=AS["operate"]), 400)
    assert len(said) == 1, said
    assert client.store.max_position() == before


# -- ids in the path -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/runs/..%2F..%2Fetc%2Fpasswd/events",
        "/v1/runs/%2e%2e/events",
        "/v1/runs/" + "a" * 300,
        "/v1/sessions/..%2Fx/events",
        "/v1/sessions/" + "b" * 300 + "/overview",
        "/v1/sessions/.hidden",
        "/v1/sessions/abc/objects/..%2F..%2Fetc",
        "/v1/sessions/abc/objects/" + "c" * 300,
        "/v1/sessions/abc/objects/a%00b",
        "/v1/sessions/abc/synths/..%5Cx/monologue",
    ],
)
def test_a_malformed_id_in_the_path_is_refused_in_one_line(chorus, path):
    _, http, _ = chorus
    r = http.get(path, headers=AS["admin"])
    assert r.status_code in (404, 422), (path, r.status_code, r.text)
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail


def test_the_server_configuration_reads_the_environment(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path, store_url="memory://", llm_base_url="http://127.0.0.1:9/v1")
    env = {"CHORUS_API_PACK_DIRS": os.pathsep.join(["/a", "/b"]), "CHORUS_API_MAX_BODY_BYTES": "2048",
           "CHORUS_API_SERVER_OPTIONS": '{"relay": {"resubmit": "./deploy.sh --now"}}'}  # fmt: skip
    c = ApiConfig.from_env(settings, env=env)
    assert c.places["packs"] == (Path("/a"), Path("/b")) and c.places["workspaces"] == (tmp_path / "workspaces",)
    assert c.max_body_bytes == 2048 and c.server_options == {"relay": {"resubmit": ["./deploy.sh", "--now"]}}
    with pytest.raises(ValueError, match="CHORUS_API_SERVER_OPTIONS is not JSON"):
        ApiConfig.from_env(settings, env={"CHORUS_API_SERVER_OPTIONS": "{"})
