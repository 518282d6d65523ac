"""The runtime on a real local Ray with a real SQLite file: runs, crash recovery, budgets."""

from __future__ import annotations

import time

import pytest

from actors import Client
from actors.agent.react import ReactAgent
from actors.agent.actor import agent_stream
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell, rebuild
from events.runs import Budget
from tests.support import fake_llm

pytestmark = pytest.mark.ray


@pytest.fixture
def client(ray_local, tmp_path):
    def make(script, url=None):
        settings = Settings.from_env(
            data_dir=tmp_path / "data", store_url=url or f"sqlite:///{tmp_path / 'chorus.db'}"
        )
        return Client(settings=settings, llm=ScriptedProvider(script))

    return make


def test_a_goal_becomes_a_run(client, tmp_path):
    fake_llm.make_repo(tmp_path)
    with client(fake_llm.search_read_answer) as c:
        run = c.submit("What is the marker?", root=tmp_path)
        seen = [rec.event.type_name for rec in run.events()]  # live, until the run ends
        result = run.wait(timeout=60)
        records = c.events(run.run_id)
    assert result.ok and "ALPHA-7" in result.answer
    assert seen[0] == "RunSubmitted" and seen[-1] == "RunCompleted"
    assert [r.event.type_name for r in records] == seen
    assert all(r.event.run_id == run.run_id for r in records)
    positions = [r.position for r in records]
    assert positions == sorted(positions)
    streams = {r.event.stream_id for r in records}
    assert streams == {f"run:{run.run_id}", agent_stream(run.run_id)}


def test_killed_actor_resumes_without_lost_or_duplicated_events(client, tmp_path, ray_local):
    ray = ray_local
    fake_llm.make_repo(tmp_path)
    with client(fake_llm.slow_reader) as c:
        run = c.submit("Read the notes line by line", root=tmp_path, max_iterations=12)
        stream = agent_stream(run.run_id)
        deadline = time.monotonic() + 180
        while c.store.stream_version(stream) < 8:  # mid-run: a few steps recorded
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.05)
        version_at_kill = c.store.stream_version(stream)
        ray.kill(run._actor, no_restart=False)
        result = run.wait(timeout=120)
        events = c.store.read_stream(stream)
        summary = ray.get(run._actor.state.remote())
        run_types = [e.type_name for e in c.store.read_stream(f"run:{run.run_id}")]

    assert result.ok, result.error
    assert version_at_kill < len(events)
    assert [e.version for e in events] == list(range(1, len(events) + 1))  # none lost
    assert len({e.event_id for e in events}) == len(events)
    llm_calls = [e.call_index for e in events if e.type_name == "LlmRequested"]
    tool_calls = [e.call_index for e in events if e.type_name == "ToolCalled"]
    assert llm_calls == list(range(1, 10)) and tool_calls == list(range(1, 9))  # none twice
    rebuilt = rebuild(ReactAgent(), events)
    assert summary["version"] == len(events)
    assert summary["state"] == rebuilt.model_dump(mode="json")
    assert run_types == ["RunSubmitted", "RunStarted", "RunCompleted"]


def test_budget_ends_the_run_as_failed(client, tmp_path):
    fake_llm.make_repo(tmp_path)
    with client(fake_llm.never_answers) as c:
        run = c.submit("loop", root=tmp_path, budget=Budget(max_llm_calls=2))
        result = run.wait(timeout=60)
        types = [r.event.type_name for r in c.events(run.run_id)]
    assert result.status == "failed"
    assert (result.error.type, result.error.reason) == ("budget_exceeded", "llm_calls")
    assert types.count("LlmCompleted") == 2
    assert types[-3:] == ["BudgetExceeded", "AgentFailed", "RunFailed"]


def test_rehydrating_from_snapshot_matches_the_log(client, tmp_path):
    fake_llm.make_repo(tmp_path)
    with client(fake_llm.search_read_answer) as c:
        run = c.submit("What is the marker?", root=tmp_path)
        run.wait(timeout=60)
        stream = agent_stream(run.run_id)
        shell = ActorShell(ReactAgent(), stream, c.store, snapshot_every=5).load()
        shell.snapshot()
        again = ActorShell(ReactAgent(), stream, c.store).load()
        from_log = rebuild(ReactAgent(), c.store.read_stream(stream))
    assert again.replayed_on_load == 0
    assert again.state == from_log


def test_a_third_party_tool_needs_only_the_decorator(client, tmp_path):
    from tests.support import word_tool

    with client(word_tool.counts_words) as c:
        run = c.submit("How many words?", root=tmp_path, tools=["word_count"])
        result = run.wait(timeout=60)
        returned = [r.event for r in c.events(run.run_id) if r.event.type_name == "ToolReturned"]
    assert result.ok and "3 words" in result.answer
    assert [(e.tool, e.output) for e in returned] == [("word_count", "3 words")]


def test_a_runs_tools_share_one_worker_each_made_once(client, tmp_path):
    """Two distinct tools of a run are served by one actor (one Python worker, not one per
    tool: actors.runtime.tool_host), each tool made on its first call and kept."""
    from tests.support import pid_tools

    with client(pid_tools.CallsEachTwice()) as c:
        run = c.submit("Which processes?", root=tmp_path, tools=["pid_a", "pid_b"])
        result = run.wait(timeout=60)
        outputs = [r.event.output.split() for r in c.events(run.run_id) if r.event.type_name == "ToolReturned"]
    assert result.ok
    assert [(tool, calls) for tool, _, calls in outputs] == [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2")]
    assert len({pid for _, pid, _ in outputs}) == 1


def test_fork_continues_from_a_position_and_leaves_the_original_alone(client, tmp_path):
    from actors.runtime.replay import diff_runs

    fake_llm.make_repo(tmp_path)
    with client(fake_llm.search_read_answer) as c:
        original = c.submit("What is the marker?", root=tmp_path)
        original.wait(timeout=60)
        records = c.events(original.run_id)
        first_tool = next(r for r in records if r.event.type_name == "ToolReturned")
        fork = c.fork(original.run_id, first_tool.position, model="another-model")
        result = fork.wait(timeout=60)
        forked = [r.event for r in c.events(fork.run_id)]
        after = c.events(original.run_id)
        diff = diff_runs(c.store, original.run_id, fork.run_id)
    assert result.ok and "ALPHA-7" in result.answer
    assert [r.event.event_id for r in after] == [r.event.event_id for r in records]  # untouched
    submitted = forked[0]
    assert submitted.forked_from == f"{original.run_id}@{first_tool.position}"
    agent = [e for e in forked if e.stream_id == f"agent:{fork.run_id}"]
    copied = [e.type_name for e in agent[: agent.index(next(e for e in agent if e.type_name == "AgentForked"))]]
    assert copied[-1] == "ToolReturned" and copied.count("LlmCompleted") == 1
    live = [e for e in agent[len(copied):] if e.type_name == "LlmRequested"]
    assert [e.call_index for e in live] == [2, 3] and {e.model for e in live} == {"another-model"}
    assert diff.shared == len(copied) and diff.first_b.type_name == "AgentForked"
