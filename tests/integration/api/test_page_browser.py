"""The timeline page in a real headless browser: Debian's `chromium`, driven by playwright
pointed at the system browser (no `playwright install`).

The app is the real one (`actors.api.app.create_app`) on a free port, uvicorn in a thread,
with auth ON, over a real SQLite event store holding runs recorded with the scripted fake
LLM (in-process, the way the runtime records them). The page is opened, a token typed,
the run found in the list, its timeline opened, an LLM call clicked: its prompt, its
completion and the actor's state at that version must show. Screenshots are kept under
`tests/integration/api/artifacts/` (or `$CHORUS_TEST_ARTIFACTS`); the test prints where.

When chromium or playwright is missing these tests skip on a developer's machine and FAIL
when the `CI` environment variable is set. Install the browser with
`apt-get install -y chromium` (Debian 12).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import in_ci

CHROMIUM = os.environ.get("CHORUS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(os.environ.get("CHORUS_TEST_ARTIFACTS") or Path(__file__).parent / "artifacts")
READ_TOKEN = "page-reader-token"
RUN_A, RUN_B, RUN_LIVE, RUN_SIM, RUN_HTML = "pagerun1", "pagerun2", "pagelive", "pagesim", "pagehtml"
HOSTILE = 'What is <b>bold</b><img src=x onerror="window.__pwned=1">?'  # text, never markup
LIGHTHOUSE = Path(__file__).resolve().parents[3] / "actors" / "simulation" / "packs" / "lighthouse.yaml"
WAIT_MS = 15_000


def _need_browser() -> None:
    """Skip locally, fail in CI, when the browser or its driver is not there."""
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (python -m pip install playwright)")
    if not missing:
        return
    reason = "browser test needs " + " and ".join(missing)
    if in_ci():
        pytest.fail(f"{reason} (CI is set: the browser test must run, not skip)")
    pytest.skip(reason)


# -- the server --------------------------------------------------------------------------------


class Served:
    def __init__(self, url: str, store, root: Path) -> None:
        self.url = url
        self.store = store
        self.root = root


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    _need_browser()
    from actors.api.app import create_app
    from actors.runtime.client import Client
    from actors.runtime.settings import Settings
    from actors.simulation.client import simulate
    from actors.testing.simulation import scripted_mind, scripted_synths
    from tests.support import fake_llm
    from tests.support.recording import record_run

    base = tmp_path_factory.mktemp("page")
    settings = Settings.from_env(
        data_dir=base, store_url=f"sqlite:///{base / 'chorus.db'}", llm_base_url="http://127.0.0.1:9/v1"
    )  # no model is called: the runs are recorded with scripted ones
    client = Client(settings=settings, start_ray=False)
    store = client.store  # the real SQLite EventStore the app serves
    for sub in ("repo_a", "repo_b", "repo_html"):
        (base / sub).mkdir()
    record_run(store, base / "repo_a", run_id=RUN_A, goal="What is the marker?")
    record_run(store, base / "repo_b", script=fake_llm.repeater, run_id=RUN_B, goal="What is the marker, again?")
    record_run(store, base / "repo_html", run_id=RUN_HTML, goal=HOSTILE)
    simulate(client, LIGHTHOUSE, run_id=RUN_SIM, ray=False, llm=scripted_synths(scripted_mind)).step(2)
    try:
        with serving(create_app(client=client, tokens={READ_TOKEN: "read"})) as url:
            yield Served(url, store, base)
    finally:
        client.close()


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """uvicorn on a free port in a thread of the test process; yields the page's URL."""
    import uvicorn

    sock = _free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30  # a safety net, not a measurement
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextlib.contextmanager
def chromium(screenshots: str) -> Iterator[object]:
    """Debian's chromium, headless, under playwright; says where the screenshots go."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    print(f"\n{screenshots}: {ARTIFACTS}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def browser(served) -> Iterator[object]:
    with chromium("browser test screenshots") as b:
        yield b


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(WAIT_MS)
    try:
        yield pg
        assert not errors, f"script errors on the page: {errors}"
    finally:
        context.close()


def shot(pg, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


def sign_in(pg, served: Served, token: str = READ_TOKEN) -> None:
    pg.goto(served.url)
    pg.fill("#token", token)
    pg.click("#token-save")


# -- the tests -----------------------------------------------------------------------------------


def test_without_a_token_the_page_says_a_token_is_needed(served, page):
    page.goto(served.url)
    problem = page.locator(".problem.auth")
    problem.wait_for()
    text = problem.inner_text()
    assert "Token needed" in text
    assert "enter a bearer token" in text
    assert page.locator("#token-state").inner_text() == "no token"
    shot(page, "01-no-token")


def test_a_wrong_token_is_refused_with_a_clear_message(served, page):
    sign_in(page, served, token="not-a-token")
    problem = page.locator(".problem.auth")
    problem.wait_for()
    assert "Token not accepted" in problem.inner_text()
    assert "unknown bearer token" in problem.inner_text()


def test_runs_list_then_timeline_then_an_llm_call_with_its_prompt_and_the_actor_state(served, page):
    sign_in(page, served)
    row = page.locator(f"tr.run[data-run='{RUN_A}']")
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[1] == RUN_A
    assert cells[2] == "react"
    assert cells[3] == "completed"
    assert cells[4] == "What is the marker?"
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", cells[5]), cells[5]
    page.wait_for_function(f"document.querySelector(\"tr.run[data-run='{RUN_A}'] td.llm-calls\").textContent !== '…'")
    assert row.locator("td.llm-calls").inner_text() == "3"  # search, read, answer
    assert page.locator(f"tr.run[data-run='{RUN_B}']").count() == 1
    shot(page, "02-runs")

    # the token survives a reload (localStorage)
    page.reload()
    page.locator(f"tr.run[data-run='{RUN_A}']").wait_for()
    assert page.locator("#token-state").inner_text() == "token set"

    page.click(f"tr.run[data-run='{RUN_A}'] a.run-link")
    page.wait_for_url(re.compile(rf"#/run/{RUN_A}$"))
    llm = page.locator("#timeline .ev[data-type='LlmCompleted']")
    llm.first.wait_for()
    lanes = page.locator("#timeline .lane-head").all_inner_texts()
    assert f"run:{RUN_A}" in lanes and f"agent:{RUN_A}" in lanes
    types = page.locator("#timeline .ev").evaluate_all("els => els.map(e => e.dataset.type)")
    expected = [r.event.type_name for r in served.store.read_all(run_id=RUN_A)]
    assert types == expected  # every event, in global order
    assert llm.count() == 3  # search, read, answer
    assert re.search(r"LLM #1: \d+→\d+ tokens", llm.first.inner_text())
    assert page.locator("#timeline .ev[data-type='ToolReturned']").count() == 2
    assert page.locator("#run-status").inner_text() == "completed"
    assert page.locator("#live").inner_text() == "finished"  # a finished run is not followed
    page.wait_for_function("document.querySelector('#run-llm').textContent.startsWith('3 (')")
    assert re.match(r"3 \(\d+ prompt \+ \d+ completion tokens", page.locator("#run-llm").inner_text())
    shot(page, "03-timeline")

    llm.first.click()
    detail = page.locator("#detail")
    detail.locator("#state pre.json").wait_for()
    text = detail.inner_text()
    assert "Prompt" in text and "What is the marker?" in text  # the goal is in the prompt
    assert "Step 1 of" in text  # the scripted model keys on it
    completion = detail.locator("pre.completion").inner_text()
    assert json.loads(completion)["action"] == "search_files"
    state = json.loads(detail.locator("#state pre.json").inner_text())
    recorded = next(
        r.event for r in served.store.read_all(run_id=RUN_A)
        if r.event.type_name == "LlmCompleted"
    )  # fmt: skip
    assert f"version {recorded.version}" in text
    assert state["goal"] == "What is the marker?"
    shot(page, "04-llm-call")


def test_the_diff_of_two_runs(served, page):
    sign_in(page, served)
    page.locator(f"tr.run[data-run='{RUN_A}']").wait_for()
    page.check(f"tr.run[data-run='{RUN_A}'] input[type=checkbox]")
    assert page.locator("#diff-selected").is_disabled()
    page.check(f"tr.run[data-run='{RUN_B}'] input[type=checkbox]")
    page.click("#diff-selected")
    lines = page.locator("#diff pre.diff-lines")
    lines.wait_for()
    text = lines.inner_text()
    assert RUN_A in text and RUN_B in text and "share their first" in text
    shot(page, "05-diff")


def test_the_timeline_stays_live_through_the_event_stream(served, page):
    from actors.runtime.run import Complete, RunLifecycle, Start, Submit, run_stream
    from actors.runtime.shell import ActorShell

    run = ActorShell(RunLifecycle(), run_stream(RUN_LIVE), served.store, run_id=RUN_LIVE).load()
    run.handle(Submit(key="submit", goal="A live one"))
    sign_in(page, served)
    page.goto(served.url + f"#/run/{RUN_LIVE}")
    page.locator("#timeline .ev[data-type='RunSubmitted']").wait_for()
    page.locator("#live.live").wait_for()
    run.handle(Start(key="start", lead_stream=f"agent:{RUN_LIVE}"))
    run.handle(Complete(key="finish", result="done live"))
    page.locator("#timeline .ev[data-type='RunCompleted']").wait_for()
    assert page.locator("#timeline .ev").count() == 3
    assert page.locator("#run-status").inner_text() == "completed"
    page.wait_for_function("document.querySelector('#live').textContent === 'finished'")  # it stops following
    shot(page, "06-live")


def test_a_simulation_shows_who_is_where_at_each_cycle(served, page):
    from actors.simulation.overview import overview

    sign_in(page, served)
    page.goto(served.url + f"#/run/{RUN_SIM}")
    table = page.locator("#sim table.where")
    table.wait_for()
    heads = table.locator("thead th").all_inner_texts()
    rows = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
    assert [r[0] for r in rows] == ["start", "1", "2"]
    lanes = page.locator("#timeline .lane-head").all_inner_texts()
    for synth in heads[2:]:  # each synth's lane is named after it
        assert any(lane.startswith(f"{synth}\nsim:{RUN_SIM}:synth:") for lane in lanes), lanes
    for cycle, row in zip((0, 1, 2), rows, strict=True):
        seen = overview(served.store, RUN_SIM, at=cycle)  # what `chorus sim show --at` reports
        where = {synth: loc["name"] for loc in seen["locations"] for synth in loc["synths"]}
        assert dict(zip(heads[2:], row[2:], strict=True)) == where, f"cycle {cycle}"
    shot(page, "07-simulation")


def test_event_text_is_shown_as_text_never_as_markup(served, page):
    sign_in(page, served)
    row = page.locator(f"tr.run[data-run='{RUN_HTML}']")
    row.wait_for()
    assert row.locator("td.goal").inner_text() == HOSTILE
    assert row.locator("td.goal b, td.goal img").count() == 0
    page.goto(served.url + f"#/run/{RUN_HTML}")
    page.locator("#timeline .ev[data-type='LlmCompleted']").first.click()
    page.locator("#detail #state pre.json").wait_for()
    assert HOSTILE in page.locator("#detail ol.messages").inner_text()
    assert page.locator("main img, main b").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_an_unknown_run_gets_a_clear_message(served, page):
    sign_in(page, served)
    page.goto(served.url + "#/run/no-such-run")
    problem = page.locator("#run-problem .problem")
    problem.wait_for()
    assert "Error 404" in problem.inner_text() and "no-such-run" in problem.inner_text()


def test_with_auth_off_the_page_says_so_and_needs_no_token(served, page, tmp_path):
    from actors.api.app import create_app
    from actors.runtime.client import Client
    from actors.runtime.settings import Settings

    settings = Settings.from_env(
        data_dir=tmp_path, store_url=served.store.url, llm_base_url="http://127.0.0.1:9/v1"
    )  # the same log, served by a second app with no tokens
    with Client(settings=settings, start_ray=False) as client, serving(create_app(client=client, tokens={})) as url:
        page.goto(url)
        page.locator(f"tr.run[data-run='{RUN_A}']").wait_for()
        notice = page.locator("#notice")
        notice.wait_for()
        assert "Auth is off" in notice.inner_text()
        assert page.locator("#token-state").inner_text() == "auth off"
        shot(page, "08-auth-off")


def test_rejected_steps_stand_out_as_errors(served, page):
    rejected = [r for r in served.store.read_all(run_id=RUN_B) if r.event.type_name == "StepRejected"]
    assert rejected  # the repeater repeats itself until told off
    sign_in(page, served)
    page.goto(served.url + f"#/run/{RUN_B}")
    chips = page.locator("#timeline .ev[data-type='StepRejected']")
    chips.first.wait_for()
    assert chips.count() == len(rejected)
    assert all("error" in c.get_attribute("class").split() for c in chips.all())
    assert f"rejected: {rejected[0].event.reason}"[:60] in chips.first.inner_text()
    chips.first.click()
    page.locator("#detail #state pre.json").wait_for()
    assert json.loads(page.locator("#detail pre.json").last.inner_text())["reason"] == rejected[0].event.reason
