"""Crash recovery of a function agent on SQLite and PostgreSQL (issue 35): its actor killed
mid-run is restarted by Ray and goes on from the log; no LLM call and no tool call that had
completed is made again (counted on the scripted model's side and on the tool's side effect),
the run completes, and the restarted actor's state is the fold of the log."""

from __future__ import annotations

import functools
import time
from collections import Counter

import pytest

from actors import Client
from actors.runtime.durable import FunctionBehaviour, FunctionState, function_stream
from actors.runtime.replay import replay_run
from actors.runtime.run import RunLifecycle, RunState, run_stream
from actors.runtime.settings import Settings
from actors.testing import ScriptedProvider
from tests.support.durable_agents import lines, tools_and_calls
from tests.support.function_agents import slow_reply


@pytest.fixture
def settings(tmp_path, durable_store_url):
    return Settings.from_env(data_dir=tmp_path / "data", store_url=durable_store_url)


def fold(behaviour, initial, events):
    state = initial
    for e in events:
        state = behaviour.evolve(state, e)
    return state


def test_a_killed_function_actor_repeats_no_completed_call_and_completes(ray_local, settings, tmp_path):
    ray = ray_local
    calls, effects = tmp_path / "calls.txt", tmp_path / "effects.txt"
    with Client(settings=settings, llm=ScriptedProvider(functools.partial(slow_reply, str(calls)))) as c:
        run = c.submit(str(effects), agent=tools_and_calls)
        stream = function_stream(run.run_id)
        deadline = time.monotonic() + 120
        while sum(e.type_name == "LlmCompleted" for e in c.store.read_stream(stream)) < 2:
            assert time.monotonic() < deadline, "two rounds not done in 120 s"
            time.sleep(0.1)
        before = c.store.read_stream(stream)
        ray.kill(ray.get_actor(stream), no_restart=False)  # Ray restarts it and re-sends serve
        result = run.wait(timeout=180)
        assert (result.status, result.answer) == ("completed", "reply to round 4"), result

        events = c.store.read_stream(stream)
        assert [e.version for e in events] == list(range(1, len(events) + 1))
        for kind in ("LlmRequested", "ToolCalled"):  # each call recorded once, at its index
            indices = Counter(e.call_index for e in events if e.type_name == kind)
            assert len(indices) == 5 and max(indices.values()) == 1
        prompts = {e.call_index: e.messages[-1]["content"] for e in before if e.type_name == "LlmRequested"}
        answered = {e.call_index for e in before if e.type_name == "LlmCompleted"}
        made = Counter(lines(calls))
        for index in answered:  # completed before the kill: never asked again
            assert made[prompts[index]] == 1, (prompts[index], made)
        returned = {e.call_index for e in before if e.type_name == "ToolReturned"}
        steps = {e.call_index: e.args["step"] for e in before if e.type_name == "ToolCalled"}
        done = Counter(lines(effects))
        for index in returned:  # a tool call recorded before the kill: its side effect happened once
            assert done[f"step {steps[index]}"] == 1, (steps[index], done)
        assert set(done) == {f"step {i}" for i in range(5)}

        served = ray.get(ray.get_actor(stream).state.remote())
        assert served["version"] == len(events)
        assert served["state"] == fold(FunctionBehaviour(), FunctionState(), events).model_dump(mode="json")
        lifecycle = fold(RunLifecycle(), RunState(), c.store.read_stream(run_stream(run.run_id)))
        assert lifecycle == c.run_state(run.run_id) and lifecycle.status == "completed"
        assert replay_run(c.store, run.run_id).ok
