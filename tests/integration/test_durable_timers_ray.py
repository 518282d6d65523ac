"""Durable timers on local Ray (issue 35): a sleep longer than `IN_PLACE_S` lets go of the
run's actor, the run shows as waiting, and the store's timer actor serves it again at its
recorded time; a `wait_for` with a long timeout times out the same way, even when the timer
actor itself was killed meanwhile (restarted, it rebuilds its timers from the log)."""

from __future__ import annotations

import functools

import pytest

from actors import Client
from actors.runtime.durable import IN_PLACE_S, SLEEP, function_stream
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.runtime.timers import timer_actor_name
from actors.testing import ScriptedProvider
from tests.support.durable_agents import lines, naps, waits_with_timeout
from tests.support.function_agents import slow_reply

LONG = IN_PLACE_S + 2  # just long enough to be durable


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")


def test_a_long_sleep_suspends_the_run_and_the_timer_actor_wakes_it(ray_local, settings, tmp_path):
    ray = ray_local
    log = tmp_path / "calls.txt"
    with Client(settings=settings, llm=ScriptedProvider(functools.partial(slow_reply, str(log)))) as c:
        run = c.submit(str(LONG), agent=naps)
        assert run.wait(timeout=120).status == "waiting"  # serve returned: nothing holds the run
        state = c.run_state(run.run_id)
        assert (state.status, state.waiting_for) == ("waiting", SLEEP) and state.wake_at is not None
        row = next(r for r in c.runs() if r["run_id"] == run.run_id)
        assert (row["status"], row["waiting_for"], row["wake_at"]) == ("waiting", SLEEP, state.wake_at)
        ray.kill(ray.get_actor(function_stream(run.run_id)), no_restart=True)  # not even an idle actor
        result = c.get_run(run.run_id).wait(timeout=120)  # follows the log until the run ends
        assert result.status == "completed", result
        assert result.answer == "reply to before the nap / reply to after the nap"
        assert lines(log) == ["before the nap", "after the nap"]  # the first call was not made again
        report = replay_run(c.store, run.run_id)
        assert report.ok and report.llm_calls == 2


def test_a_long_wait_for_times_out_durably_across_a_timer_actor_restart(ray_local, settings):
    ray = ray_local
    with Client(settings=settings, llm=ScriptedProvider(["unused"])) as c:
        run = c.submit(str(LONG), agent=waits_with_timeout)
        assert run.wait(timeout=120).status == "waiting"
        assert c.run_state(run.run_id).waiting_for == "go"
        timers = ray.get_actor(timer_actor_name(settings.store_url))
        assert run.run_id in ray.get(timers.pending.remote())
        ray.kill(timers, no_restart=False)  # Ray restarts it; it finds the timer in the log again
        result = c.get_run(run.run_id).wait(timeout=120)
        assert (result.status, result.answer) == ("completed", "timed out")
        consumed = next(e for e in c.store.read_stream(function_stream(run.run_id)) if e.type_name == "SignalConsumed")
        assert consumed.timed_out
        assert replay_run(c.store, run.run_id).ok
