"""Agents as plain Python functions on local Ray (issue 35): the examples run end to end with
the scripted model; replay is identical with 0 live calls; a fork at an LLM call with another
model goes on; a killed actor is restarted and no completed LLM call is made again; a run
that waits for a signal lets go of its actor and `Client.signal` brings it to its end."""

from __future__ import annotations

import functools
import time
from collections import Counter
from pathlib import Path

import pytest

from actors import Client
from actors.runtime.durable import FunctionBehaviour, function_stream
from actors.testing.model import ScriptedProvider
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from examples.approval import release_notes
from examples.pipeline import critique
from tests.support.function_agents import notes_reply, six_steps, slow_reply


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")


def wait_for(check, what: str, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"not {what} in {limit} s"
        time.sleep(0.1)


def stream(c: Client, run_id: str) -> list:
    return c.store.read_stream(function_stream(run_id))


def test_the_pipeline_runs_replays_and_forks(ray_local, settings):
    with Client(settings=settings, llm=ScriptedProvider(["A one-line summary.", "A fair critique."])) as c:
        run = c.submit("Chorus records every LLM completion before it is used.", agent=critique)
        result = run.wait(timeout=120)
        assert result.status == "completed", result
        assert result.answer == "A fair critique."
        events = stream(c, run.run_id)
        assert [e.type_name for e in events].count("LlmCompleted") == 2
        returned = next(e for e in events if e.type_name == "ToolReturned")
        assert returned.ok and returned.output == "3 words"

        report = replay_run(c.store, run.run_id)
        assert report.ok, report.divergence.describe()
        assert report.llm_calls == 2 and report.tool_calls == 1

        # Fork right after the first LLM call, with another model for the calls after it.
        records = list(c.store.read_all(run_id=run.run_id))
        at = next(r.position for r in records if r.event.type_name == "LlmCompleted")
        fork = c.fork(run.run_id, at, model="other-model")
        assert fork.wait(timeout=120).status == "completed"
        forked = stream(c, fork.run_id)
        requested = [e for e in forked if e.type_name == "LlmRequested"]
        assert [e.model for e in requested][-1] == "other-model" and len(requested) == 2
        assert c.run_state(fork.run_id).forked_from == f"{run.run_id}@{at}"
        assert replay_run(c.store, fork.run_id).ok


def test_a_killed_actor_is_restarted_and_repeats_no_completed_call(ray_local, settings, tmp_path):
    ray = ray_local
    log = tmp_path / "calls.txt"
    with Client(settings=settings, llm=ScriptedProvider(functools.partial(slow_reply, str(log)))) as c:
        run = c.submit("go", agent=six_steps)
        name = function_stream(run.run_id)
        wait_for(lambda: [e.type_name for e in stream(c, run.run_id)].count("LlmCompleted") >= 2, "two calls done")
        done_before = {e.messages[-1]["content"] for e in stream(c, run.run_id) if e.type_name == "LlmRequested"}
        ray.kill(ray.get_actor(name), no_restart=False)  # Ray restarts it and re-sends serve
        result = run.wait(timeout=120)
        assert result.status == "completed", result
        assert result.answer == "reply to step 5"
        events = stream(c, run.run_id)
        indices = Counter(e.call_index for e in events if e.type_name == "LlmRequested")
        assert sorted(indices) == [1, 2, 3, 4, 5, 6] and max(indices.values()) == 1
        assert [e.version for e in events] == list(range(1, len(events) + 1))
        made = Counter(Path(log).read_text().splitlines())
        for prompt in done_before:  # recorded before the kill: never asked again
            assert made[prompt] == 1, (prompt, made)
        assert replay_run(c.store, run.run_id).ok


def test_the_approval_agent_waits_and_a_signal_completes_it(ray_local, settings):
    with Client(settings=settings, llm=ScriptedProvider(notes_reply)) as c:
        run = c.submit("version 2.0", agent=release_notes)
        run.wait(timeout=120)  # serve returns: the actor is let go of while it waits
        state = ActorShell(FunctionBehaviour(), function_stream(run.run_id), c.store).load().state
        assert state.status == "waiting" and state.waiting_for == "approval"
        run_state = c.run_state(run.run_id)
        assert (run_state.status, run_state.waiting_for) == ("waiting", "approval")  # what `chorus runs` shows
        assert replay_run(c.store, run.run_id).ok
        result = c.signal(run.run_id, "approval", {"ok": False, "note": "shorter"}).wait(timeout=120)
        assert result.status == "completed", result
        assert result.answer == "Revised notes."
        types = [e.type_name for e in stream(c, run.run_id)]
        assert types.count("LlmRequested") == 2 and "SignalConsumed" in types
        report = replay_run(c.store, run.run_id)
        assert report.ok and report.llm_calls == 2
        with pytest.raises(ValueError, match="no more signals"):
            c.signal(run.run_id, "approval", {"ok": True})


def test_resuming_a_run_that_waits_for_a_person_leaves_it_waiting_and_a_signal_completes_it(ray_local, settings):
    """`chorus resume` on a run waiting for a signal has nothing to do (no actor is started
    for it to be let go of again): the signal then completes it, and the log holds no failure."""
    with Client(settings=settings, llm=ScriptedProvider(notes_reply)) as c:
        run = c.submit("version 2.0", agent=release_notes)
        run.wait(timeout=120)
        resumed = c.resume(run.run_id)
        assert c.run_state(run.run_id).status == "waiting"
        result = c.signal(resumed.run_id, "approval", {"ok": True}).wait(timeout=120)
        assert result.status == "completed", result
        types = [r.event.type_name for r in c.store.read_all(run_id=run.run_id)]
        assert "RunFailed" not in types, types
        assert replay_run(c.store, run.run_id).ok
