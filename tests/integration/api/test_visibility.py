"""Seed 002 reserves the synths' inner monologue (and the minds and prompts that carry it)
for admin: walk EVERY route of the app's OpenAPI document with a read, an operate and an
admin token, on an app holding a simulation session whose scripted synths think a marker
(their monologue) and remember another (their mind), and assert read and operate never
see either, while admin sees both through the same routes (so the walk can fail).

The SSE routes are read over a real uvicorn server until the stream has caught up."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from actors.api.app import create_app
from actors.api.places import ApiConfig
from actors.runtime.client import Client
from actors.runtime.llm.types import LlmRequest
from actors.runtime.settings import Settings
from actors.simulation.session import Canonical
from actors.simulation.streams import synth_stream
from actors.testing.simulation import scripted_mind, scripted_synths

from .conftest import Server

MONOLOGUE = "MONOLOGUE-7f3a9c"  # only ever in a synth's inner monologue
MIND = "MINDMARK-41be2d"  # only ever in a synth's beliefs and memories (so in its later prompts)
TOKENS = {"r1": "read", "o1": "operate", "a1": "admin"}
AS = {scope: {"Authorization": f"Bearer {tok}"} for tok, scope in TOKENS.items()}


def secret_mind(request: LlmRequest) -> str:
    reply = json.loads(scripted_mind(request))
    reply["inner_monologue"]["deliberate"] = f"I think {MONOLOGUE} to myself."
    reply["belief_updates"] = [{"subject": "the lamp", "content": f"it hides {MIND}", "confidence": 0.9}]
    reply["memories"] = [f"I found {MIND}"]
    return json.dumps(reply)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("visibility")
    settings = Settings.from_env(data_dir=tmp / "data", store_url=f"sqlite:///{tmp / 'c.db'}", llm_base_url="http://127.0.0.1:9/v1")
    client = Client(settings=settings, llm=scripted_synths(secret_mind), start_ray=False)
    app = create_app(client=client, tokens=TOKENS, config=ApiConfig.from_env(settings, env={}))
    with TestClient(app) as http:
        r = http.post("/v1/sessions", json={"pack": "lighthouse", "max_microcycles": 1}, headers=AS["operate"])
        assert r.status_code == 201, r.text
        sid = r.json()["session_id"]
        assert http.post(f"/v1/sessions/{sid}/steps", json={"cycles": 2}, headers=AS["operate"]).status_code == 200
        fork = http.post(f"/v1/sessions/{sid}/restore", json={"cycle": 1}, headers=AS["operate"]).json()["session_id"]
        c = Canonical.load(client.store, sid)
        thomas = next(i for i, s in c.synths.items() if s.identity.name == "Thomas")
        raw = b"".join(json.dumps(r.event.model_dump(mode="json")).encode() for r in client.store.read_all(run_id=sid))
        assert MONOLOGUE.encode() in raw and MIND.encode() in raw  # the log holds both: there is something to hide
        yield {"app": app, "http": http, "client": client, "sid": sid, "fork": fork, "stream": synth_stream(sid, thomas)}
    client.close()


def operations(app) -> list[tuple[str, str]]:
    spec = app.openapi()
    return sorted((m.upper(), p) for p, item in spec["paths"].items() for m in item if m in ("get", "post", "put", "patch", "delete"))


def fill(path: str, w: dict[str, Any]) -> str:
    run = w["fork"] if path in LAST else w["sid"]
    values = {"run_id": run, "session_id": w["sid"], "ref": "Thomas", "synth": "Thomas", "escalation_id": "no-such-escalation", "name": "approval"}
    out = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), path)
    assert "{" not in out, f"the walk does not know how to fill {path}: teach it (a new route must be walked)"
    return out


def params(path: str, w: dict[str, Any]) -> dict[str, Any]:
    if path.endswith("/state"):
        return {"stream": w["stream"]}
    if path.endswith("/diff") or path.endswith("/compare"):
        return {"a": w["sid"], "b": w["fork"]}
    if path.endswith("/resolve"):
        return {"name": "Thomas"}
    if path.endswith("/changes"):
        return {"since_cycle": 0}
    if path.endswith("/events"):
        return {"limit": 1000}
    return {}


# bodies that do something real for operate and admin (POSTs a read token is refused)
BODIES = {
    "/v1/runs": {"kind": "simulation", "goal": "lighthouse"},
    "/v1/runs/{run_id}/fork": {"at": 1},
    "/v1/runs/{run_id}/cancel": {"reason": "walked"},
    "/v1/sessions": {"pack": "lighthouse", "max_microcycles": 1},
    "/v1/sessions/{session_id}/turns": {"text": "Hello?"},
    "/v1/sessions/{session_id}/steps": {"cycles": 1},
    "/v1/sessions/{session_id}/resume": {"cycles": 1},
    "/v1/sessions/{session_id}/restore": {"cycle": 1},
    "/v1/sessions/{session_id}/stimuli": {"text": "A gull cries."},
    "/v1/sessions/{session_id}/patches": {"operations": [{"op": "move_entity", "entity": "Wrench", "to": "Lantern Room"}]},
    "/v1/runs/{run_id}/signals/{name}": {"payload": {"ok": True}},
}
LAST = {"/v1/runs/{run_id}/cancel"}  # it ends a run: the fork's, after every other route


def sse(url: str, path: str, headers: dict[str, str], until: int) -> str:
    """The stream's text up to the frame of position `until` (the log's end when it started)."""
    seen = []
    with httpx.Client(base_url=url, timeout=30) as c, c.stream("GET", path, headers=headers) as r:
        if r.status_code != 200:
            return r.read().decode()
        for line in r.iter_lines():
            seen.append(line)
            if line.startswith("id: ") and int(line[4:]) >= until:
                break
    return "\n".join(seen)


def walk(w: dict[str, Any], scope: str, server: Server) -> dict[str, str]:
    http, headers = w["http"], AS[scope]
    bodies: dict[str, str] = {}
    ops = operations(w["app"])
    ops = [o for o in ops if o[1] not in LAST] + [o for o in ops if o[1] in LAST]
    for method, path in ops:
        url = fill(path, w)
        if path.endswith("/events/stream"):
            end = max(r.position for r in w["client"].store.read_all(run_id=w["sid"]))
            bodies[f"{method} {path}"] = sse(server.url, url, headers, end)
            continue
        if method == "GET":
            r = http.get(url, params=params(path, w), headers=headers)
        else:
            r = http.request(method, url, json=BODIES.get(path), headers=headers)
            if path.endswith("/resume") and r.status_code == 200:
                http.post(url.replace("/resume", "/pause"), headers=headers)
        assert r.status_code < 500, f"{method} {path} as {scope}: {r.status_code} {r.text[:300]}"
        bodies[f"{method} {path}"] = r.text
    return bodies


@pytest.fixture(scope="module")
def server(world):
    with Server(world["app"]) as s:
        yield s


@pytest.mark.parametrize("scope", ["read", "operate"])
def test_below_admin_no_route_shows_a_monologue_or_a_mind(world, server, scope):
    bodies = walk(world, scope, server)
    assert len(bodies) >= 30, sorted(bodies)
    leaks = [f"{route}: {MONOLOGUE if MONOLOGUE in text else MIND}" for route, text in bodies.items() if MONOLOGUE in text or MIND in text]
    assert not leaks, "\n".join(leaks)
    # and it was not a walk of refusals: the routes that carry a mind answered, redacted
    for route in ("GET /v1/runs/{run_id}/events", "GET /v1/sessions/{session_id}/events", "GET /v1/runs/{run_id}/llm",
                  "GET /v1/sessions/{session_id}/objects/{ref}", "GET /v1/runs/{run_id}/state",
                  "GET /v1/runs/{run_id}/events/stream", "GET /v1/sessions/{session_id}/events/stream"):  # fmt: skip
        assert "[redacted: admin only]" in bodies[route], route


def test_admin_sees_them_through_the_same_routes(world, server):
    bodies = walk(world, "admin", server)
    for route in ("GET /v1/runs/{run_id}/events", "GET /v1/sessions/{session_id}/events", "GET /v1/runs/{run_id}/llm",
                  "GET /v1/runs/{run_id}/events/stream", "GET /v1/sessions/{session_id}/events/stream",
                  "GET /v1/sessions/{session_id}/synths/{synth}/monologue"):  # fmt: skip
        assert MONOLOGUE in bodies[route], route
    for route in ("GET /v1/sessions/{session_id}/objects/{ref}", "GET /v1/runs/{run_id}/state"):
        assert MIND in bodies[route], route
