"""The debugging page in headless Chromium: its actions end to end (replay, export, fork
here, fork with an edited completion or prompt, cancel, resume, signal; each confirmed, each
refused to a read token), a waiting run's status, the time axis, two runs side by side, the
context diff, the runs list as a fork tree with search.

One local Ray (forks and signals continue live, with a scripted model: tests/support/
fake_llm.py, no LLM server), one SQLite store, the real app with auth on, one browser for the
module. Screenshots go to `tests/integration/api/artifacts/debug-*.png` (or
`$CHORUS_TEST_ARTIFACTS`); the module prints where. Without chromium or playwright this skips
locally and FAILS under CI=true (as test_page_browser.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from actors.runtime.replay import diff_runs, load_fixture, replay_run
from tests.support.debug_agents import slow_second_call, waits_for_approval
from tests.support.recording import record_run

from .conftest import TOKENS, Env, make_env
from .open_calls import answer, end_progress, run_with_open_call, write_progress
from .test_page_browser import ARTIFACTS, WAIT_MS, _need_browser, chromium, serving

READ, OPERATE = (next(t for t, s in TOKENS.items() if s == scope) for scope in ("read", "operate"))
RUN_A, RUN_B, RUN_HELD = "dbg-origin", "dbg-other", "dbg-held"


@dataclass
class Debugged:
    url: str
    env: Env
    fork: str  # a fork of RUN_A made in the fixture (the runs list's tree)

    @property
    def store(self):
        return self.env.client.store


def _ended(env: Env, run_id: str, statuses=("completed", "failed")) -> str:
    deadline = time.monotonic() + 120  # a safety net for a hung run, not a measurement
    while (state := env.client.run_state(run_id)).status not in statuses:
        assert state.status not in ("completed", "failed"), f"run {run_id} {state.status}: {state.error}"
        assert time.monotonic() < deadline, f"run {run_id} is still {state.status}"
        time.sleep(0.1)
    return state.status


def _position(store, run_id: str, type_name: str, nth: int = 0) -> int:
    return [r.position for r in store.read_all(run_id=run_id) if r.event.type_name == type_name][nth]


@pytest.fixture(scope="module")
def debugged(tmp_path_factory, ray_module) -> Iterator[Debugged]:
    _need_browser()
    from actors.api.app import create_app

    env = make_env(tmp_path_factory.mktemp("debug"))
    try:
        record_run(env.client.store, env.root, script=slow_second_call, run_id=RUN_A, goal="What is the marker?")
        from tests.support import fake_llm

        record_run(env.client.store, env.root, script=fake_llm.repeater, run_id=RUN_B, goal="What is the marker?")
        fork = env.client.fork(RUN_A, _position(env.client.store, RUN_A, "LlmCompleted", 1), model="model-b").run_id
        assert _ended(env, fork) == "completed"
        app = create_app(client=env.client, tokens=TOKENS, config=env.config)
        with serving(app) as url:
            yield Debugged(url, env, fork)
    finally:
        env.client.close()


@pytest.fixture(scope="module")
def browser(debugged) -> Iterator[object]:
    with chromium("debugging page screenshots (debug-*.png)") as b:
        yield b


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1500, "height": 950}, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))

    def confirm(d) -> None:  # every action asks first; the test says yes and keeps the question
        dialogs.append(d.message)
        d.accept()

    pg.on("dialog", confirm)
    pg.set_default_timeout(WAIT_MS)
    pg.dialogs = dialogs  # type: ignore[attr-defined]
    try:
        yield pg
        assert not errors, f"script errors on the page: {errors}"
    finally:
        context.close()


def shot(pg, name: str) -> Path:
    path = ARTIFACTS / f"debug-{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


def open_run(pg, d: Debugged, run_id: str, token: str) -> None:
    pg.goto(d.url)
    pg.fill("#token", token)
    pg.click("#token-save")
    pg.goto(d.url + f"#/run/{run_id}")
    pg.locator("#timeline .ev").first.wait_for()
    pg.locator("#actions button").first.wait_for()


# -- the tests -----------------------------------------------------------------------------------


def test_replay_and_export_and_a_read_token_may_not_act(debugged, page, tmp_path):
    d = debugged
    waiting = d.env.client.submit("hold on", agent=waits_for_approval)
    _wait_until_waiting(d, waiting.run_id)
    open_run(page, d, RUN_A, READ)

    page.click("#act-replay")
    verdict = page.locator("#replay-verdict.ok")
    verdict.wait_for()
    assert "Replay identical" in verdict.inner_text() and "0 live calls" in verdict.inner_text()
    assert "3 LLM calls" in verdict.inner_text()
    assert page.dialogs[-1].startswith("Replay this run")  # confirmed first
    shot(page, "01-replay-verdict")

    with page.expect_download() as got:
        page.click("#act-export-fixture")
    download = got.value
    assert download.suggested_filename == f"{RUN_A}.jsonl"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    loaded, run_id = load_fixture(saved)  # sealed: a changed line would not load
    assert run_id == RUN_A
    assert [r.event.event_id for r in loaded.read_all(run_id=RUN_A)] == [r.event.event_id for r in d.store.read_all(run_id=RUN_A)]

    # a read token: the buttons are there, the server refuses them (403), nothing happens
    page.locator("#timeline .ev[data-type='LlmCompleted']").first.click()
    page.click("#fork-here")
    page.locator("#fork-result .problem.auth").wait_for()
    assert "Not allowed" in page.locator("#fork-result").inner_text()
    forks = [r["run_id"] for r in d.env.client.runs() if (r.get("forked_from") or "").startswith(RUN_A + "@")]
    assert forks == [d.fork]  # no new fork
    page.goto(d.url + f"#/run/{waiting.run_id}")
    page.locator("#act-cancel").click()
    page.locator("#action-result .problem.auth").wait_for()
    assert "operate" in page.locator("#action-result").inner_text()
    assert page.locator("#act-cancel").is_enabled()  # refused, not done: it may be tried with another token
    assert d.env.client.run_state(waiting.run_id).status not in ("failed", "completed")
    shot(page, "02-read-token-refused")
    d.env.client.cancel(waiting.run_id)


def test_fork_here_with_another_model_then_compare_with_origin(debugged, page):
    d = debugged
    open_run(page, d, RUN_A, OPERATE)
    second = page.locator("#timeline .ev[data-type='LlmCompleted']").nth(1)
    second.click()
    # the context diff: what the agent's second call added since its first
    diff = page.locator("#context-diff")
    diff.wait_for()
    assert "since LLM call #1" in diff.inner_text()
    assert page.locator("#context-diff li.msg.added").count() >= 1
    assert page.locator("#context-diff li.same-run").count() == 1  # the system prompt and goal, unchanged
    diff.scroll_into_view_if_needed()
    shot(page, "03-context-diff")

    page.fill("#fork-model", "model-c")
    page.fill("#fork-temperature", "0.7")
    page.click("#fork-here")
    link = page.locator("#fork-link")
    link.wait_for()
    at = int(second.get_attribute("data-pos"))
    assert f"position {at}" in page.dialogs[-1] and "model-c" in page.dialogs[-1] and "0.7" in page.dialogs[-1]
    fork = link.inner_text()
    assert d.env.client.run_state(fork).forked_from == f"{RUN_A}@{at}"
    assert _ended(d.env, fork) == "completed"

    link.click()
    page.locator("#compare-origin").click()
    page.wait_for_url(re.compile(rf"#/compare\?a={RUN_A}&b={fork}$"))
    parting = page.locator("#aligned tr.parting")
    parting.wait_for()
    expected = diff_runs(d.store, RUN_A, fork)
    assert int(parting.get_attribute("data-index")) == expected.shared
    assert expected.first_b.type_name in parting.inner_text()
    # the fork's mark has a row of its own: what each run did next lines up (it was one row off)
    assert "fork mark" in parting.locator("td.side.a, td.none").first.inner_text()
    following = page.locator(f"#aligned tr[data-index='{expected.shared + 1}']")
    kinds = [following.locator(f"td.side.{side} .type").inner_text().split()[-1] for side in ("a", "b")]
    assert kinds[0] == kinds[1], kinds
    assert f"share their first {expected.shared} events" in page.locator("#compare-summary").inner_text()
    prompt = page.locator("#prompt-diff").inner_text()
    assert "model-c" in page.locator("#compare").inner_text()
    assert "unchanged" in prompt or "changed" in prompt
    shot(page, "04-side-by-side")
    parting.locator("td.side.b a.pos-link").click()  # to the fork's page, that event open
    page.locator("#detail h3").filter(has_text=expected.first_b.type_name).wait_for()
    assert page.locator("#timeline .ev.selected").get_attribute("data-type") == expected.first_b.type_name

    # the fork replays identical: it is a run like any other
    # a fork with another model and temperature replays identical: it re-executes from its
    # AgentForked mark (the copied history before it is the origin's)
    page.goto(d.url + f"#/run/{fork}")
    page.locator("#run-status.completed").wait_for()
    page.locator("#act-replay").click()
    page.locator("#replay-verdict").wait_for()
    text = page.locator("#replay-verdict").inner_text()
    assert "Replay identical" in text and "0 live calls" in text, text
    assert replay_run(d.store, fork).ok
    shot(page, "05-fork-replay-verdict")


def test_fork_with_an_edited_completion_says_so_and_replays_identical(debugged, page):
    d = debugged
    open_run(page, d, RUN_A, OPERATE)
    first = page.locator("#timeline .ev[data-type='LlmCompleted']").first
    first.click()
    box = page.locator("#edit-completion")
    assert json.loads(box.input_value())["action"] == "search_files"  # the model's own words, to edit
    edited = json.dumps({"thought": "Straight to the file.", "action": "read_file", "args": {"path": "notes.txt", "start_line": 1}})
    box.fill(edited)
    page.click("#fork-edited")
    link = page.locator("#fork-link")
    link.wait_for()
    assert "completion replaced by yours" in page.dialogs[-1]
    fork = link.inner_text()
    assert _ended(d.env, fork) == "completed"
    steps = [r.event for r in d.store.read_all(run_id=fork) if r.event.type_name == "StepDecided"]
    assert (steps[0].action, steps[0].thought) == ("read_file", "Straight to the file.")  # the edit led
    note, verdict = _edited_fork_page_replayed(page, link)
    assert "LLM call #1" in note and "token:o-to" in note and "Find the marker." in note
    assert "Replay identical" in verdict, verdict
    assert replay_run(d.store, fork).ok
    shot(page, "06-edited-fork")


def _edited_fork_page_replayed(page, link) -> tuple[str, str]:
    """Open the fork from its link, wait for it to end, replay it: (its "Edited" line, the verdict)."""
    link.click()
    note = page.locator("#run-edited")
    note.wait_for()
    page.locator("#run-status.completed").wait_for()
    page.locator("#act-replay").click()
    verdict = page.locator("#replay-verdict")
    verdict.wait_for()
    return note.inner_text(), verdict.inner_text()


def test_fork_with_an_edited_prompt_asks_the_model_live_says_so_and_replays_identical(debugged, page):
    d = debugged
    open_run(page, d, RUN_A, OPERATE)
    page.locator("#timeline .ev[data-type='LlmRequested']").first.click()
    box = page.locator("#edit-prompt")
    assert box.input_value().startswith("Goal: What is the marker?") and "Step 1 of" in box.input_value()
    # the scripted model answers by the "Step N of M" line: told it is step 2, it reads the file
    box.fill("Goal: What is the marker? It is in notes.txt.\n\nStep 2 of 10. Reply with the next step as one JSON object.")
    page.click("#fork-edited-prompt")
    link = page.locator("#fork-link")
    link.wait_for()
    assert "prompt replaced by yours" in page.dialogs[-1] and "live" in page.dialogs[-1]
    fork = link.inner_text()
    assert _ended(d.env, fork) == "completed"
    events = [r.event for r in d.store.read_all(run_id=fork)]
    [edit] = [e for e in events if e.type_name == "PromptEdited"]
    assert edit.edited_by.startswith("token:o-to") and edit.call_index == 1 and edit.origin_run == RUN_A
    asked = next(e for e in events if e.type_name == "LlmRequested")
    assert asked.messages == edit.edited and "It is in notes.txt" in asked.messages[-1]["content"]
    assert next(e for e in events if e.type_name == "StepDecided").action == "read_file"  # the origin searched
    note, text = _edited_fork_page_replayed(page, link)
    assert "LLM call #1" in note and "prompt replaced by token:o-to" in note and "live" in note
    assert "Replay identical" in text and "0 live calls" in text, text
    own = sum(1 for e in events if e.type_name == "LlmCompleted")
    assert f"{own} LLM calls" in text  # the fork's own calls, all served from the log
    shot(page, "10-edited-prompt-fork")
    page.locator("#timeline .ev[data-type='PromptEdited']").click()
    changed = page.locator("#prompt-edit li.msg.changed")
    assert changed.count() == 1 and "It is in notes.txt" in changed.inner_text() and "Step 1 of" in changed.inner_text()

    page.locator("#compare-origin").click()
    page.locator("#aligned tr.parting").wait_for()
    assert page.locator("#aligned td.side.b .type").filter(has_text="PromptEdited").count() == 1
    diff = page.locator("#prompt-diff")
    assert diff.locator("li.msg.changed").count() == 1 and "It is in notes.txt" in diff.locator("li.msg.changed").inner_text()
    shot(page, "11-edited-prompt-side-by-side")
    # "Forked from" opens the origin at the event the fork was made at
    page.goto(d.url + f"#/run/{fork}")
    page.locator("#forked-from").click()
    page.locator("#detail h3").filter(has_text="LlmRequested").wait_for()
    assert page.url.endswith(f"#/run/{RUN_A}?at={edit.origin_position}")
    assert int(page.locator("#timeline .ev.selected").get_attribute("data-pos")) == edit.origin_position


def test_signal_a_waiting_run_then_resume_and_cancel_another(debugged, page):
    d = debugged
    signalled = d.env.client.submit("ship it", agent=waits_for_approval).run_id
    cancelled = d.env.client.submit("hold it", agent=waits_for_approval).run_id
    for run_id in (signalled, cancelled):
        _wait_until_waiting(d, run_id)
    open_run(page, d, signalled, OPERATE)
    # its own page says it waits, and for what, once its history has loaded (it said "running")
    page.wait_for_function("document.querySelector('#run-status').textContent === 'waiting'")
    page.locator("#timeline .ev[data-type='RunWaiting']").filter(has_text="waiting for the signal “approval”").wait_for()
    assert page.locator("#run-status").inner_text() == "waiting"
    assert "approval" in page.locator("#run-waiting").inner_text()
    assert page.locator("#signal-name").input_value() == "approval"
    page.fill("#signal-name", "approval")
    page.fill("#signal-payload", '{"by": "the night shift"}')
    page.click("#act-signal")
    page.locator("#action-result p").filter(has_text="signal approval sent").wait_for()
    assert any(q.startswith("Send signal “approval” to run") for q in page.dialogs), page.dialogs
    assert _ended(d.env, signalled) == "completed"
    assert d.env.client.run_state(signalled).result == "ship it: approved with {'by': 'the night shift'}"
    page.wait_for_function("document.querySelector('#run-status').textContent === 'completed'")
    assert "Ended" in page.locator("#run-head .facts").inner_text()  # from its RunCompleted, live
    shot(page, "07-signalled")

    page.goto(d.url + f"#/run/{cancelled}")
    page.locator("#act-resume").click()
    page.locator("#action-result p").filter(has_text="resumed").wait_for()
    page.locator("#act-cancel").click()
    page.locator("#action-result p").filter(has_text="failed").wait_for()
    state = d.env.client.run_state(cancelled)
    assert state.status == "failed" and state.error.type == "cancelled"
    assert page.locator("#run-status").inner_text() == "failed"
    assert page.locator("#act-cancel").count() == 0  # an ended run offers no control


def _wait_until_waiting(d: Debugged, run_id: str) -> None:
    """Until the run's function has recorded its wait (the signal has something to wake)."""
    deadline = time.monotonic() + 120  # a safety net, not a measurement
    while not any(r.event.type_name == "SignalAwaited" for r in d.store.read_all(run_id=run_id)):
        assert time.monotonic() < deadline, f"run {run_id} never waited"
        time.sleep(0.1)


def test_time_axis_finds_the_slow_call_and_the_runs_list_is_a_fork_tree(debugged, page):
    d = debugged
    open_run(page, d, RUN_A, READ)
    page.click("#axis-toggle")
    axis = page.locator("#timeaxis")
    axis.wait_for()
    assert page.locator("#timeline").is_hidden()
    assert axis.locator(".bar.llm").count() == 3 and axis.locator(".bar.tool").count() == 2
    recorded = {r.position: r.event for r in d.store.read_all(run_id=RUN_A)}
    slow = max((e for e in recorded.values() if e.type_name == "LlmCompleted"), key=lambda e: e.latency_s)
    slowest = axis.locator(".bar.slowest")
    assert slowest.count() == 1
    assert recorded[int(slowest.get_attribute("data-pos"))].event_id == slow.event_id  # the slept-on call
    assert f"LLM #{slow.call_index}" in page.locator("#slowest-link").inner_text()
    widths = axis.locator(".bar.llm").evaluate_all("bs => bs.map(b => b.getBoundingClientRect().width)")
    assert max(widths) == axis.locator(".bar.slowest").evaluate("b => b.getBoundingClientRect().width")
    shot(page, "08-time-axis")
    page.click("#slowest-link")
    assert page.locator("#detail h3").inner_text() == "LlmCompleted"

    # each chip carries the kind's own line (its describe), e.g. the run's submission
    title = page.locator("#timeline .ev[data-type='RunSubmitted']").get_attribute("title")
    assert title.startswith("submitted: What is the marker?")

    page.goto(d.url)
    row = page.locator(f"tr.run[data-run='{d.fork}']")
    row.wait_for()
    order = page.locator("tr.run").evaluate_all("rs => rs.map(r => [r.dataset.run, r.dataset.depth])")
    assert dict(order)[d.fork] == "1" and dict(order)[RUN_A] == "0"
    parent_row, fork_row = [r for r, _ in order].index(RUN_A), [r for r, _ in order].index(d.fork)
    assert fork_row > parent_row  # under the run it came from
    page.wait_for_function(f"document.querySelector(\"tr.run[data-run='{RUN_A}'] td.tokens\").textContent !== '…'")
    tokens = int(page.locator(f"tr.run[data-run='{RUN_A}'] td.tokens").inner_text())
    used = [e for e in recorded.values() if e.type_name == "LlmCompleted"]
    assert tokens == sum(e.prompt_tokens + e.completion_tokens for e in used)
    assert re.match(r"\d+\.\d s$", page.locator(f"tr.run[data-run='{RUN_A}'] td.duration").inner_text())
    page.fill("#run-search", "dbg-other")  # searches ids, goals, kinds, parentage
    visible = page.locator("tr.run:visible").evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert visible == [RUN_B]
    page.fill("#run-search", "")
    shot(page, "09-runs-tree")


def test_the_auth_off_notice_says_it_once(debugged, page):
    from actors.api.app import create_app
    from actors.runtime.client import Client

    with Client(settings=debugged.env.settings, start_ray=False) as client, serving(create_app(client=client, tokens={})) as url:
        page.goto(url)
        notice = page.locator("#notice")
        notice.wait_for()
        assert notice.inner_text().lower().count("auth is off") == 1
        assert json.dumps(notice.inner_text()).count("admin") == 1


def test_a_live_run_shows_its_open_calls_tokens_so_far_until_the_answer(debugged, page):
    d = debugged
    request = run_with_open_call(d.store, d.env.root.parent / "held-repo", RUN_HELD)
    data_dir = d.env.settings.data_dir
    write_progress(data_dir, request, 42, 3.2)  # as the provider writes it while the call streams
    open_run(page, d, RUN_HELD, READ)
    line = page.locator("#calls-open")
    line.wait_for()
    assert line.inner_text().strip() == "llm call 2: 42 tokens so far, 3 s"

    write_progress(data_dir, request, 97, 6.4)  # the page polls: the count moves
    page.wait_for_function("() => document.querySelector('#calls-open').innerText.includes('97 tokens so far, 6 s')")
    shot(page, "10-tokens-so-far")

    end_progress(data_dir, request)
    answer(d.store, RUN_HELD, request)  # the call's LlmCompleted comes on the live stream: the line goes
    page.locator("#timeline .ev[data-type='LlmCompleted']").nth(1).wait_for()
    line.wait_for(state="hidden")
