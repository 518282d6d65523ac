"""Durable timers and the "waiting" run status (issue 35), in-process with a clock the test
moves: a long `ctx.sleep` and a long `ctx.wait_for(..., timeout=)` suspend the run (it is
"waiting", with what for and until when, in the lifecycle and the runs view), served again
before its time it waits on, at its time it goes on; replay is identical."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from actors.runtime.durable import IN_PLACE_S, SLEEP
from actors.testing import assert_replays, run_agent
from projections.runs import RunsView, status_label
from tests.support.durable_agents import approval_then_done, naps, waits_with_timeout

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def types(run) -> list[str]:
    return [e.type_name for e in run.events]


def view_row(run) -> dict:
    return RunsView.open(run.store).get(run.run_id)


def test_a_long_sleep_suspends_the_run_and_it_completes_once_its_time_has_come():
    clock = Clock()
    run = run_agent(naps, "3600", model=["first", "second"], clock=clock)
    assert (run.status, run.waiting_for, run.wake_at) == ("waiting", SLEEP, T0 + timedelta(hours=1))
    assert run.provider.calls == 1 and types(run).count("RunWaiting") == 1
    row = view_row(run)
    assert row["status"] == "waiting" and row["waiting_for"] == SLEEP and row["wake_at"] == T0 + timedelta(hours=1)

    clock.now = T0 + timedelta(minutes=59)  # served again too early: it waits on, nothing repeated
    early = run.resume()
    assert early.status == "waiting" and early.provider.calls == 1
    assert types(early).count("LlmRequested") == 1 and types(early).count("RunWaiting") == 2  # waits again
    assert view_row(early)["wake_at"] == T0 + timedelta(hours=1)  # the recorded time, not a new one

    clock.now = T0 + timedelta(hours=1)
    done = run.resume()
    assert (done.status, done.answer) == ("completed", "first / second")
    assert done.provider.calls == 2 and types(done).count("LlmRequested") == 2
    assert view_row(done)["status"] == "completed" and view_row(done)["waiting_for"] is None
    report = assert_replays(done.store, done.run_id)
    assert report.llm_calls == 2


def test_a_sleep_up_to_the_threshold_sleeps_in_place():
    run = run_agent(naps, "0.01", model=["first", "second"])
    assert run.status == "completed" and "RunWaiting" not in types(run)
    assert IN_PLACE_S > 0.01


def test_a_wait_for_with_a_long_timeout_times_out_durably():
    clock = Clock()
    run = run_agent(waits_with_timeout, "600", clock=clock)
    assert (run.status, run.waiting_for, run.wake_at) == ("waiting", "go", T0 + timedelta(minutes=10))
    awaited = next(e for e in run.events if e.type_name == "SignalAwaited")
    assert awaited.until == T0 + timedelta(minutes=10) and awaited.timeout_s == 600
    clock.now = T0 + timedelta(minutes=10, seconds=1)
    done = run.resume()
    assert (done.status, done.answer) == ("completed", "timed out")
    consumed = next(e for e in done.events if e.type_name == "SignalConsumed")
    assert consumed.timed_out and consumed.data is None
    assert_replays(done.store, done.run_id)


def test_a_signal_before_the_timeout_wins():
    clock = Clock()
    run = run_agent(waits_with_timeout, "600", clock=clock)
    assert run.status == "waiting"
    done = run.signal("go", 7)
    assert (done.status, done.answer) == ("completed", "got 7")
    assert_replays(done.store, done.run_id)


def test_a_run_waiting_for_a_signal_shows_as_waiting_with_its_name():
    run = run_agent(approval_then_done, "ship it")
    assert run.status == "waiting" and run.waiting_for == "approval" and run.wake_at is None
    row = view_row(run)
    assert row["status"] == "waiting" and status_label(row) == "waiting:approval"
    assert [r["run_id"] for r in RunsView.open(run.store).list(status="waiting")] == [run.run_id]
    done = run.signal("approval", {"ok": True})
    assert (done.status, done.answer) == ("completed", "approved: {'ok': True}")
    row = view_row(done)
    assert (row["status"], row["waiting_for"], status_label(row)) == ("completed", None, "completed")
    assert types(done).count("RunStarted") == 2  # started, and started again after it waited
