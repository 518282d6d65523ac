"""The HTTP API's costs (issue 18), against a real uvicorn server in its own process.

    .venv/bin/python -m tests.bench.bench_api                         # 20,000-event log, ~1 min
    .venv/bin/python -m tests.bench.bench_api --events 100000 --rounds 7

1. The event read route, `GET /v1/runs/{id}/events` (bearer auth, the run looked up, every
   event decoded and written as JSON), against a bare FastAPI route reading the same rows
   the fastest way there is: the recorder's `select_notifications` from the run's first
   position, rows filtered by their envelope's run id and sent as they are stored (no
   decoding: the raw read of tests/bench/bench_projections.py). Requests per second of
   each, one keep-alive client, turn about; ratio = route / bare (1.0: no overhead).
2. SSE fan-out latency: 50 clients (another process) follow one run's stream; events are
   appended one at a time (every 50 ms); latency = the time a client has the event minus
   the event's own timestamp (set just before the append). Median and 99th percentile over
   every (client, event) pair.

The log is tests/bench/bench_projections.py's ReAct-shaped runs on a fresh SQLite file;
the read is of the newest run (45 events), as the timeline page reads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import base64
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx

from tests.bench.bench_projections import fill
from tests.bench.bench_store import interleaved, machine, med, per_round, spread, table

TOKEN = "bench-token"
LATENCY_RUN = "latency-run"


# -- the server process -----------------------------------------------------------------------


def bare_app(store_url: str) -> Any:
    from fastapi import FastAPI
    from fastapi.responses import Response

    from events.codec import envelope_of
    from events.store import EventStore

    store = EventStore(store_url)
    bare = FastAPI()
    first: dict[str, int] = {}

    @bare.get("/runs/{run_id}/events")
    def raw(run_id: str, after: int = 0, limit: int = 1000) -> Response:
        if run_id not in first:  # as the route: the run's first position, found once
            rows = store.recorder.select_notifications(1, 10**9, topics=("RunSubmitted",))
            first.update({envelope_of(n.state)[2]: n.id for n in rows})
        start, out = max(after + 1, first[run_id]), []
        while len(out) < limit:
            page = store.recorder.select_notifications(start, 500)
            for n in page:
                if envelope_of(n.state)[2] == run_id:
                    out.append({"position": n.id, "stream_id": n.originator_id, "version": n.originator_version,
                                "type": n.topic, "state": base64.b64encode(n.state).decode()})
            if len(page) < 500:
                break
            start = page[-1].id + 1
        return Response(json.dumps({"events": out[:limit]}), media_type="application/json")

    return bare


def serve(port: int, store_url: str, tmp: str) -> None:
    import uvicorn

    from actors.api.app import create_app
    from actors.runtime.settings import Settings

    settings = Settings.from_env(data_dir=tmp, store_url=store_url, llm_base_url="http://127.0.0.1:9/v1")
    app = create_app(settings, tokens={TOKEN: "read"})
    app.mount("/bare", bare_app(store_url))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# -- 1. the read route against the bare route ---------------------------------------------------


def read_rates(url: str, run_id: str, per: int, rounds: int) -> dict[str, list[float]]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        route = http.get(f"/v1/runs/{run_id}/events").json()["events"]
        bare = http.get(f"/bare/runs/{run_id}/events").json()["events"]
        assert [e["position"] for e in route] == [e["position"] for e in bare] and route, "not the same rows"
        ops = {
            "route": lambda: http.get(f"/v1/runs/{run_id}/events").raise_for_status(),
            "bare": lambda: http.get(f"/bare/runs/{run_id}/events").raise_for_status(),
        }
        interleaved(ops, 20, 1)  # warm up
        took = per_round(interleaved(ops, per, rounds))
    return {k: [per / t for t in v] for k, v in took.items()}


# -- 2. fan-out latency -------------------------------------------------------------------------


def clients(url: str, n: int, expect: int, ready: Any, out: Any) -> None:
    async def one() -> list[float]:
        lat: list[float] = []
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as c:
            async with c.stream("GET", f"/v1/runs/{LATENCY_RUN}/events/stream") as r:
                ready.put(1)
                data = None
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        data = line[6:]
                    elif line == "" and data is not None:
                        now = time.time()
                        event = json.loads(data)
                        data = None
                        if event["type"] != "ToolCalled":
                            continue  # the RunSubmitted it starts with
                        lat.append(now - datetime.fromisoformat(event["timestamp"]).timestamp())
                        if len(lat) == expect:
                            return lat
        return lat

    async def everyone() -> list[list[float]]:
        return await asyncio.gather(*(one() for _ in range(n)))

    out.put(asyncio.run(everyone()))


def fanout(url: str, store_url: str, n_clients: int, n_events: int) -> list[float]:
    from events.effects import ToolCalled
    from events.store import EventStore

    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=clients, args=(url, n_clients, n_events, ready, out))
    proc.start()
    for _ in range(n_clients):
        ready.get(timeout=120)
    time.sleep(1.0)  # every stream past its catch-up
    with EventStore(store_url) as store:
        for i in range(n_events):
            store.append(f"tool:{LATENCY_RUN}", [ToolCalled(tool="t", args={"i": i}, call_index=i + 1).stamp(run_id=LATENCY_RUN)], i)
            time.sleep(0.05)
    per_client = out.get(timeout=300)
    proc.join(timeout=30)
    assert all(len(c) == n_events for c in per_client), [len(c) for c in per_client]
    return [x for c in per_client for x in c]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20_000, help="events in the log (whole runs)")
    p.add_argument("--per-round", type=int, default=200, help="requests of each route per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--appends", type=int, default=100, help="events appended for the latency figure")
    p.add_argument("--serve", nargs=3, metavar=("PORT", "STORE_URL", "TMP"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], args.serve[2])
        return

    from actors.runtime.client import Client
    from actors.runtime.settings import Settings
    from events.store import EventStore

    print(machine(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        url_store = f"sqlite:///{tmp}/bench.db"
        with EventStore(url_store) as store:
            n = fill(store, args.events)
        newest = f"bench-{(n // 45):06d}"
        settings = Settings.from_env(data_dir=tmp, store_url=url_store, llm_base_url="http://127.0.0.1:9/v1")
        with Client(settings=settings, start_ray=False) as c:
            c.begin_run(LATENCY_RUN, goal="latency", kind="react", params={})
        with api_server(url_store, tmp) as url:
            rates = read_rates(url, newest, args.per_round, args.rounds)
            ratio = [r / b for r, b in zip(rates["route"], rates["bare"], strict=True)]
            table(
                f"Event read route vs a bare route over the same rows ({n:,} events in the log, a 45-event run, SQLite)",
                ["route", "requests/s (median of rounds)", "spread"],
                [
                    ["GET /v1/runs/{id}/events (auth, decode, JSON)", f"{med(rates['route']):,.0f}", spread(rates["route"])],
                    ["bare FastAPI route, raw rows", f"{med(rates['bare']):,.0f}", spread(rates["bare"])],
                    ["ratio route / bare", f"{med(ratio):.2f}", spread(ratio)],
                ],
            )
            lat = fanout(url, url_store, args.clients, args.appends)
            table(
                f"SSE fan-out: {args.clients} clients, {args.appends} events appended 50 ms apart (SQLite, polled every 50 ms)",
                ["receipts", "median ms", "p99 ms", "max ms"],
                [[len(lat), f"{statistics.median(lat) * 1e3:.1f}", f"{pct(lat, 0.99) * 1e3:.1f}", f"{max(lat) * 1e3:.1f}"]],
            )


@contextlib.contextmanager
def api_server(store_url: str, tmp: str) -> Iterator[str]:
    """The API (and the bare route) on `store_url` in a uvicorn process of its own (`serve`),
    a `TOKEN` of read scope; yields its URL once it answers."""
    from tests.integration.api.conftest import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.bench.bench_api", "--serve", str(port), store_url, tmp])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{url}/v1/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    main()
