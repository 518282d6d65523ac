"""The debugging page's cost for a long run (issue 37): the load time and memory of a
5,000-event agent run's page in headless Chromium, against fetching the JSON it reads.

    .venv/bin/python -m tests.bench.bench_page                 # 1,000 steps = 5,005 events, 5 rounds (~2 min)
    .venv/bin/python -m tests.bench.bench_page --steps 2000 --rounds 7

The run: a ReAct agent recorded in-process with a scripted model that searches for a new
word every step and never answers (tests/support/fake_llm.searches_forever), each step five
events with the real prompts (LlmRequested, LlmCompleted, StepDecided, ToolCalled,
ToolReturned). One SQLite file; the API in its own uvicorn process (tests/bench/bench_api.py's
`api_server`); a read token.

Turn about, each round:
- json: what the page reads, in the page's order, by one keep-alive httpx client: the run,
  its events in pages of 500 (as the page asks for them), the kind's labels, the LLM call
  log. Time until the last byte; the bytes.
- fetch: the same reads from inside Chromium (its network stack, its JSON parser), nothing
  drawn: what the page cannot do faster than.
- page: a fresh browser context opens `#/run/ID` (the token already in localStorage). Time
  from the navigation until every event has its chip with the kind's label on it and the
  page says "finished". Then the renderer's JS heap and DOM nodes (CDP Performance metrics,
  after a collection), and the time axis toggled on: the time until its bars are drawn.
page ÷ browser fetch is the figure: 1.0 would mean drawing adds nothing to the reads.

Debian's chromium (`/usr/bin/chromium`, or CHORUS_CHROMIUM) driven by playwright, as the
browser tests (tests/integration/api/test_page_browser.py).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.bench.bench_api import TOKEN, api_server
from tests.bench.bench_store import machine

RUN = "pagebench"
SMALL = "pagesmall"
PAGE_SIZE = 500  # the page's EVENTS_PAGE


def record(store_url: str, root: Path, run_id: str, steps: int) -> int:
    """A ReAct run of `steps` steps, recorded as the runtime records it (in-process)."""
    from actors.agent.actor import agent_stream
    from actors.agent.react import ReactAgent, StartAgent
    from actors.runtime.llm.gateway import LlmGateway
    from actors.runtime.perform import LiveEffects, drive, local_invoker
    from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Submit, run_stream
    from actors.runtime.shell import ActorShell
    from actors.testing.model import ScriptedProvider
    from actors.tools.files import ReadFile, SearchFiles
    from actors.agent.events import ToolSpec
    from events.runs import Budget
    from events.store import EventStore
    from tests.support import fake_llm

    fake_llm.make_repo(root)
    with EventStore(store_url) as store:
        run = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
        run.handle(Submit(key="submit", goal="What is the marker?", budget=Budget.unlimited()))
        agent = ActorShell(ReactAgent(), agent_stream(run_id), store, run_id=run_id, snapshot_every=0).load()
        tools = {"search_files": SearchFiles(root=str(root)), "read_file": ReadFile(root=str(root))}
        specs = [ToolSpec(name=n, signature=t.signature(), description=t.description) for n, t in tools.items()]
        start = StartAgent(key="start", goal="What is the marker?", root=str(root), tools=specs, model="m",
                           budget=Budget.unlimited(), max_iterations=steps)  # fmt: skip
        agent.handle(start, causation_id=run.last_event_id)
        run.handle(Start(key="start", lead_stream=agent.stream_id), causation_id=agent.last_event_id)
        state = drive(agent, LiveEffects(LlmGateway(ScriptedProvider(fake_llm.searches_forever)), local_invoker(tools)))
        if state.status == "completed":
            run.handle(Complete(key="finish", result=state.answer), causation_id=agent.last_event_id)
        else:
            run.handle(Fail(key="finish", error=state.error), causation_id=agent.last_event_id)
        return sum(1 for _ in store.read_all(run_id=run_id))


def fetch_json(http: httpx.Client, run_id: str) -> tuple[float, int, int]:
    """The page's reads, in its order: (seconds, bytes, events)."""
    started = time.perf_counter()
    size = len(http.get(f"/v1/runs/{run_id}").raise_for_status().content)
    last, events = 0, 0
    while True:
        params = {"limit": PAGE_SIZE, **({"after": last} if last else {})}
        r = http.get(f"/v1/runs/{run_id}/events", params=params).raise_for_status()
        size += len(r.content)
        page = r.json()
        got = page["events"]
        events += len(got)
        last = max([last, page.get("last_position") or 0, *(e["position"] for e in got)])
        if len(got) < PAGE_SIZE:
            break
    for path in ("labels", "llm"):
        size += len(http.get(f"/v1/runs/{run_id}/{path}").raise_for_status().content)
    return time.perf_counter() - started, size, events


# checked every frame: the cheap part first, so that the check takes next to nothing from the page
LOADED = """(n) => {
  if ((document.querySelector('#live') || {}).textContent !== 'finished') return false;
  const chips = document.querySelectorAll('#timeline .ev');
  return chips.length === n && chips[0].title.endsWith(')') && chips[n - 1].title.endsWith(')');
}"""


# the same reads from inside the browser (its network stack and JSON parser), nothing drawn
FETCH_IN_BROWSER = """async ([runId, token, pageSize]) => {
  const get = async (path) => {
    const r = await fetch('/v1/' + path, { headers: { Authorization: 'Bearer ' + token } });
    if (!r.ok) throw new Error(path + ': ' + r.status);
    return r.json();
  };
  const started = performance.now();
  await get('runs/' + runId);
  let last = 0;
  for (;;) {
    const page = await get('runs/' + runId + '/events?limit=' + pageSize + (last ? '&after=' + last : ''));
    for (const e of page.events) last = Math.max(last, e.position);
    if (page.events.length < pageSize) break;
  }
  await get('runs/' + runId + '/labels');
  await get('runs/' + runId + '/llm');
  return (performance.now() - started) / 1000;
}"""


def fetch_in_browser(browser: Any, url: str, run_id: str) -> float:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(url + "/v1/health")
        return float(page.evaluate(FETCH_IN_BROWSER, [run_id, TOKEN, PAGE_SIZE]))
    finally:
        context.close()


def open_page(browser: Any, url: str, run_id: str, n: int) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    context.add_init_script(f"try {{ localStorage.setItem('chorus.token', {TOKEN!r}); }} catch (e) {{}}")
    page = context.new_page()
    page.set_default_timeout(300_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(url + "/#/")  # the page's code loaded and cached, as a person has it open
        page.wait_for_load_state("networkidle")
        started = time.perf_counter()
        page.evaluate(f"location.hash = '#/run/{run_id}'")
        page.wait_for_function(LOADED, arg=n, polling="raf")
        load_s = time.perf_counter() - started
        cdp = context.new_cdp_session(page)
        cdp.send("HeapProfiler.collectGarbage")
        cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        started = time.perf_counter()
        page.click("#axis-toggle")
        page.wait_for_function("() => document.querySelectorAll('#timeaxis .bar').length > 0", polling="raf")
        axis_s = time.perf_counter() - started
        assert not errors, errors
        return {"load_s": load_s, "heap_mb": metrics["JSHeapUsedSize"] / 1e6, "nodes": metrics["Nodes"], "axis_s": axis_s}
    finally:
        context.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_000, help="agent steps (5 events each)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from tests.integration.api.test_page_browser import CHROMIUM, CHROMIUM_ARGS

    print(machine(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        store_url = f"sqlite:///{tmp}/bench.db"
        (Path(tmp) / "repo").mkdir()
        started = time.perf_counter()
        n = record(store_url, Path(tmp) / "repo", RUN, args.steps)
        small = record(store_url, Path(tmp) / "repo", SMALL, 2)
        print(f"recorded {n} events ({args.steps} steps) in {time.perf_counter() - started:.1f} s", flush=True)
        with api_server(store_url, tmp) as url:
            rows: dict[str, list[float]] = {k: [] for k in ("json_s", "fetch_s", "load_s", "ratio", "ratio_fetch", "heap_mb", "nodes", "axis_s")}
            with (
                httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as http,
                sync_playwright() as pw,
            ):
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                try:
                    _, size, got = fetch_json(http, RUN)
                    assert got == n, (got, n)
                    base = open_page(browser, url, SMALL, small)  # warm up, and the page's own heap
                    open_page(browser, url, RUN, n)
                    for i in range(args.rounds):
                        order = ("json", "fetch", "page") if i % 2 == 0 else ("page", "fetch", "json")
                        for what in order:
                            if what == "json":
                                json_s = fetch_json(http, RUN)[0]
                            elif what == "fetch":
                                fetch_s = fetch_in_browser(browser, url, RUN)
                            else:
                                page = open_page(browser, url, RUN, n)
                        rows["json_s"].append(json_s)
                        rows["fetch_s"].append(fetch_s)
                        rows["ratio"].append(page["load_s"] / json_s)
                        rows["ratio_fetch"].append(page["load_s"] / fetch_s)
                        for k in ("load_s", "heap_mb", "nodes", "axis_s"):
                            rows[k].append(page[k])
                        print(f"round {i + 1}: json {json_s:.2f} s (httpx), {fetch_s:.2f} s (in the browser); page {page['load_s']:.2f} s "
                              f"(x{page['load_s'] / json_s:.2f}, x{page['load_s'] / fetch_s:.2f}), heap {page['heap_mb']:.1f} MB, "
                              f"{page['nodes']:.0f} nodes, time axis {page['axis_s']:.2f} s", flush=True)  # fmt: skip
                finally:
                    browser.close()

    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n{n} events, {size / 1e6:.1f} MB of JSON read by the page; a 2-step run's page: "
          f"heap {base['heap_mb']:.1f} MB, {base['nodes']:.0f} nodes")  # fmt: skip
    print("| events | JSON | fetch: httpx / browser | page load | page ÷ httpx | page ÷ browser fetch | JS heap | DOM nodes | time axis |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {n:,} | {size / 1e6:.1f} MB | {med['json_s']:.2f} s / {med['fetch_s']:.2f} s | {med['load_s']:.2f} s | "
        f"{med['ratio']:.2f} ({min(rows['ratio']):.2f}–{max(rows['ratio']):.2f}) | "
        f"**{med['ratio_fetch']:.2f}** ({min(rows['ratio_fetch']):.2f}–{max(rows['ratio_fetch']):.2f}) | "
        f"{med['heap_mb']:.0f} MB | {med['nodes']:,.0f} | {med['axis_s']:.2f} s |"
    )


if __name__ == "__main__":
    main()
