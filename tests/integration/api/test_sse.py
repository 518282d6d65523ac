"""Server-Sent Events on a real uvicorn server: `id:` is the global position, a client that
reconnects with Last-Event-ID (or ?after=) misses nothing and sees nothing twice, even
after 100 disconnects during a run; 50 clients at once each get every event in order; a
quiet stream gets keep-alive comments."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from actors.api.app import create_app
from actors.runtime.remote import parse_sse
from tests.support import fake_llm

from .conftest import BEARER, TOKENS, Server, make_env, wait_for_end

pytestmark = pytest.mark.ray

TERMINAL = ("RunCompleted", "RunFailed")


@pytest.fixture(scope="module")
def slow(tmp_path_factory, ray_module):
    """Runs of a model that reads one line per step (0.25 s a step) and never answers: a
    run lasts `max_iterations` steps and ends failed (out of iterations)."""
    e = make_env(tmp_path_factory.mktemp("sse"), fake_llm.sleepy)
    yield e
    e.client.close()


@pytest.fixture(scope="module")
def server(slow):
    app = create_app(client=slow.client, tokens=TOKENS, config=slow.config)
    with Server(app) as s:
        s.app = app
        yield s


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, headers=BEARER["read"], timeout=60) as c:
        yield c


def submit(http: httpx.Client, slow, steps: int) -> str:
    body = {"goal": "Read the notes", "params": {"root": str(slow.root), "max_iterations": steps}}
    r = http.post("/v1/runs", json=body, headers=BEARER["operate"])
    assert r.status_code == 202, r.text
    return r.json()["run_id"]


def logged(slow, run_id: str) -> list[tuple[int, str]]:
    return [(r.position, r.event.type_name) for r in slow.client.store.read_all(run_id=run_id)]


def frames(response: httpx.Response):
    for ident, kind, data in parse_sse(response.iter_lines()):
        yield int(ident), kind, json.loads(data)


def test_frames_carry_the_position_the_type_and_the_events_json(http, slow):
    run_id = submit(http, slow, 2)
    wait_for_end(http, run_id)
    got = []
    with http.stream("GET", f"/v1/runs/{run_id}/events/stream") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for ident, kind, data in frames(r):
            got.append((ident, kind, data))
            if kind in TERMINAL:
                break
    as_json = http.get(f"/v1/runs/{run_id}/events").json()["events"]
    assert [g[2] for g in got] == as_json  # `data:` is one element of the JSON route
    assert [(g[0], g[1]) for g in got] == [(e["position"], e["type"]) for e in as_json] == logged(slow, run_id)


def test_resume_with_last_event_id_or_after(http, slow):
    run_id = submit(http, slow, 2)
    wait_for_end(http, run_id)
    positions = [p for p, _ in logged(slow, run_id)]
    middle = positions[len(positions) // 2]
    for how in ({"headers": {"Last-Event-ID": str(middle)}}, {"params": {"after": middle}}):
        with http.stream("GET", f"/v1/runs/{run_id}/events/stream", **how) as r:
            first = next(frames(r))
        assert first[0] == positions[len(positions) // 2 + 1]
    # Last-Event-ID wins over ?after= (a browser's EventSource resends it on reconnect)
    with http.stream("GET", f"/v1/runs/{run_id}/events/stream", params={"after": 0}, headers={"Last-Event-ID": str(middle)}) as r:
        assert next(frames(r))[0] == positions[len(positions) // 2 + 1]


def test_100_disconnects_during_a_run_lose_and_repeat_nothing(http, slow):
    run_id = submit(http, slow, 400)  # runs until cancelled below, after the 100th disconnect
    seen: list[int] = []
    last, disconnects, done, still_running = 0, 0, False, None
    while not done:
        with http.stream("GET", f"/v1/runs/{run_id}/events/stream", headers={"Last-Event-ID": str(last)}) as r:
            for ident, kind, _ in frames(r):
                seen.append(ident)
                last = ident
                done = kind in TERMINAL
                break  # drop the connection after every event
        disconnects += 1
        if disconnects == 100:
            still_running = http.get(f"/v1/runs/{run_id}").json()["status"] == "running"
            assert http.post(f"/v1/runs/{run_id}/cancel", headers=BEARER["operate"]).status_code == 200
    assert disconnects > 100 and still_running
    assert seen == [p for p, _ in logged(slow, run_id)]  # every event, once, in order
    assert logged(slow, run_id)[-1][1] == "RunFailed"


def test_50_concurrent_clients_each_get_every_event_in_order(server, http, slow):
    run_id = submit(http, slow, 6)

    async def client(n: int) -> list[int]:
        got = []
        async with httpx.AsyncClient(base_url=server.url, headers=BEARER["read"], timeout=60) as c:
            async with c.stream("GET", f"/v1/runs/{run_id}/events/stream") as r:
                assert r.status_code == 200
                buffer: list[str] = []
                async for line in r.aiter_lines():
                    buffer.append(line)
                    if line == "":
                        for ident, kind, _ in parse_sse(iter(buffer)):
                            got.append(int(ident))
                            if kind in TERMINAL:
                                return got
                        buffer = []
        return got

    async def everyone() -> list[list[int]]:
        return await asyncio.gather(*(client(n) for n in range(50)))

    results = asyncio.run(everyone())
    expected = [p for p, _ in logged(slow, run_id)]
    assert len(expected) > 20
    assert all(got == expected for got in results), [len(g) for g in results]
    live = server.app.state.chorus.live
    deadline = time.monotonic() + 30  # the server notices a closed connection soon, not at once
    while live.subscribers and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live.subscribers == 0  # every stream let go of its subscription


def test_a_quiet_stream_gets_keep_alive_comments(server, http, slow):
    run_id = submit(http, slow, 1)
    wait_for_end(http, run_id)
    services = server.app.state.chorus
    services.keep_alive_s = 0.2
    try:
        n = len(logged(slow, run_id))
        with http.stream("GET", f"/v1/runs/{run_id}/events/stream") as r:
            lines = []
            for line in r.iter_lines():
                lines.append(line)
                if line.startswith(": keep-alive"):
                    break
    finally:
        services.keep_alive_s = 15.0
    assert sum(1 for line in lines if line.startswith("id: ")) == n  # everything, then the comment


def test_an_unknown_run_is_a_404_not_a_stream(http):
    r = http.get("/v1/runs/nope/events/stream")
    assert r.status_code == 404 and r.json() == {"detail": "no run with id 'nope'"}
    r = http.get("/v1/runs/nope/events/stream", headers={"Last-Event-ID": "x"})
    assert r.status_code == 404
