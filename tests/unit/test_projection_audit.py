"""The audit trail view on the in-memory store: events by run, actor, type and time; the
JSONL exports; the LLM call log; token and cost totals per run and per actor."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from events import ErrorInfo
from events.store import EventStore
from actors.agent.events import StepDecided
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.runs import RunCompleted, RunFailed, RunStarted, RunSubmitted
from projections import AuditProjection, AuditTrail, ProjectionRunner
from projections import audit_query
from projections.files import write_atomically

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def request(i: int, run: str, t: float, **params) -> LlmRequested:
    return LlmRequested(
        model="qwen", messages=[{"role": "user", "content": f"q{i}"}], params=params,
        request_hash=f"h{i}", call_index=i, run_id=run, timestamp=at(t),
    )


def completed(i: int, run: str, t: float, prompt: int, completion: int, cost: float | None = None) -> LlmCompleted:
    return LlmCompleted(
        request_hash=f"h{i}", call_index=i, content=f"a{i}", parsed={"answer": i},
        prompt_tokens=prompt, completion_tokens=completion, latency_s=0.25 * i,
        model="qwen-served", cost_usd=cost, run_id=run, timestamp=at(t),
    )


def failed(i: int, run: str, t: float) -> LlmFailed:
    return LlmFailed(
        request_hash=f"h{i}", call_index=i, run_id=run, timestamp=at(t),
        error=ErrorInfo(type="llm_error", reason="timeout", message="no answer in 300s"),
    )


@pytest.fixture
def store():
    s = EventStore("memory://")
    # run A: two agents; run B: one agent with a failure and a call still pending.
    s.append("run:A", [RunSubmitted(goal="why?", run_id="A", timestamp=at(0))], 0)
    s.append("run:A", [RunStarted(lead_stream="agent-a1", run_id="A", timestamp=at(1))], 1)
    s.append("agent-a1", [request(1, "A", 2, seed=42, temperature=0.0), completed(1, "A", 3, 100, 10, 0.001)], 0)
    s.append(
        "agent-a1",
        [
            StepDecided(iteration=1, thought="look", action="search", args={"q": "x"}, run_id="A", timestamp=at(4)),
            ToolCalled(tool="search", args={"q": "x"}, call_index=1, run_id="A", timestamp=at(5)),
            ToolReturned(tool="search", call_index=1, ok=True, output="found", run_id="A", timestamp=at(6)),
        ],
        2,
    )
    s.append("agent-a2", [request(1, "A", 7), completed(1, "A", 8, 50, 5)], 0)  # no cost known
    s.append("agent-a1", [request(2, "A", 9, seed=43), completed(2, "A", 10, 200, 20, 0.002)], 5)
    s.append("run:A", [RunCompleted(result="because", llm_calls=3, tokens=385, run_id="A", timestamp=at(11))], 2)
    s.append("run:B", [RunSubmitted(goal="how?", run_id="B", timestamp=at(20))], 0)
    s.append("agent-b1", [request(1, "B", 21), failed(1, "B", 22)], 0)
    s.append("agent-b1", [request(2, "B", 23)], 2)  # pending: the run died before an answer
    s.append(
        "run:B",
        [RunFailed(error=ErrorInfo(type="llm_error", reason="timeout", message="gave up"), run_id="B", timestamp=at(24))],
        1,
    )
    yield s
    s.close()


@pytest.fixture
def trail(store) -> AuditTrail:
    return AuditTrail.open(store)


def test_every_event_is_in_the_trail_in_log_order(store, trail):
    events = trail.events()
    assert [e.position for e in events] == list(range(1, store.max_position() + 1))
    first = events[0]
    assert (first.run_id, first.stream_id, first.version, first.type) == ("A", "run:A", 1, "RunSubmitted")
    assert first.timestamp == at(0)
    assert first.payload["goal"] == "why?"
    assert first.event_id == str(store.read_stream("run:A")[0].event_id)
    # Nested models come back as JSON objects.
    [run_failed] = trail.events(types="RunFailed")
    assert run_failed.payload["error"] == {"type": "llm_error", "reason": "timeout", "message": "gave up", "details": None}


def test_events_by_run_actor_type_and_time(trail):
    assert {e.run_id for e in trail.events(run_id="B")} == {"B"}
    assert len(trail.events(run_id="B")) == 5
    assert [e.version for e in trail.events(stream_id="agent-a1")] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.type for e in trail.events(run_id="A", types=["ToolCalled", "ToolReturned"])] == ["ToolCalled", "ToolReturned"]
    assert trail.events(types=[]) == []
    window = trail.events(since=at(7), until=at(10))
    assert [e.timestamp for e in window] == [at(7), at(8), at(9)]
    # Naive datetimes are UTC; other zones are converted.
    assert trail.events(since=at(24).replace(tzinfo=None))[0].type == "RunFailed"
    plus_two = timezone(timedelta(hours=2))
    assert len(trail.events(since=at(20).astimezone(plus_two))) == 5
    assert [e.type for e in trail.events(run_id="A", stream_id="run:A", since=at(1))] == ["RunStarted", "RunCompleted"]


def test_paging_through_a_long_trail(trail, monkeypatch):
    monkeypatch.setattr(audit_query, "_PAGE", 3)
    everything = trail.events()
    assert [e.position for e in trail.events(limit=5)] == [1, 2, 3, 4, 5]
    assert [e.position for e in trail.events(after_position=15)] == [p.position for p in everything[15:]]
    assert [e.position for e in trail.iter_events(run_id="A")] == [e.position for e in everything if e.run_id == "A"]


def test_the_llm_call_log_pairs_requests_with_their_results(trail):
    calls = trail.llm_calls()
    assert [(c.stream_id, c.call_index, c.status) for c in calls] == [
        ("agent-a1", 1, "completed"),
        ("agent-a2", 1, "completed"),
        ("agent-a1", 2, "completed"),
        ("agent-b1", 1, "failed"),
        ("agent-b1", 2, "pending"),
    ]
    first = calls[0]
    assert first.messages == [{"role": "user", "content": "q1"}]
    assert (first.model, first.response_model, first.seed, first.temperature) == ("qwen", "qwen-served", 42, 0.0)
    assert (first.content, first.parsed, first.prompt_tokens, first.completion_tokens) == ("a1", {"answer": 1}, 100, 10)
    assert (first.latency_s, first.cost_usd, first.tokens) == (0.25, 0.001, 110)
    assert (first.requested_at, first.completed_at) == (at(2), at(3))
    assert first.result_position == first.position + 1
    failure = calls[3]
    assert failure.error == {"type": "llm_error", "reason": "timeout", "message": "no answer in 300s", "details": None}
    assert (failure.content, failure.seed) == (None, None)
    assert calls[4].completed_at is None
    assert [c.call_index for c in trail.llm_calls(run_id="B")] == [1, 2]
    assert len(trail.llm_calls(stream_id="agent-a1")) == 2


def test_a_retried_call_pairs_with_the_latest_request_and_a_lone_result_is_kept():
    s = EventStore("memory://")
    s.append("agent", [request(1, "R", 0)], 0)
    s.append("agent", [request(1, "R", 1), completed(1, "R", 2, 7, 3)], 1)  # same call, asked again
    s.append("agent", [completed(2, "R", 3, 1, 1)], 3)  # a result whose request is not in the log
    calls = AuditTrail.open(s).llm_calls()
    assert [(c.position, c.status) for c in calls] == [(1, "pending"), (2, "completed"), (4, "completed")]
    assert calls[2].messages is None and calls[2].result_position == 4


def test_token_and_cost_totals_per_run_and_per_actor(trail):
    a, b = trail.usage_by_run()
    assert (a.key, a.calls, a.failed, a.prompt_tokens, a.completion_tokens, a.tokens) == ("A", 3, 0, 350, 35, 385)
    assert a.cost_usd == pytest.approx(0.003)
    assert a.priced_calls == 2  # agent-a2's call had no known cost
    assert (b.key, b.calls, b.failed, b.tokens, b.cost_usd, b.priced_calls) == ("B", 2, 1, 0, None, 0)
    assert a.latency_s == pytest.approx(0.25 + 0.25 + 0.5)
    assert [u.key for u in trail.usage_by_run("B")] == ["B"]
    actors = {u.key: u for u in trail.usage_by_actor()}
    assert set(actors) == {"agent-a1", "agent-a2", "agent-b1"}
    assert (actors["agent-a1"].calls, actors["agent-a1"].tokens) == (2, 330)
    assert actors["agent-a2"].cost_usd is None
    assert [u.key for u in trail.usage_by_actor("A")] == ["agent-a1", "agent-a2"]


def test_export_jsonl_writes_one_object_per_event(trail, tmp_path):
    path = tmp_path / "audit.jsonl"
    assert trail.export_jsonl(path) == len(trail.events())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["position"] for r in lines] == [e.position for e in trail.events()]
    assert lines[0] == {
        "position": 1, "event_id": lines[0]["event_id"], "run_id": "A", "stream_id": "run:A", "version": 1,
        "type": "RunSubmitted", "type_version": 3, "timestamp": "2025-03-01T12:00:00.000000+00:00",
        "causation_id": None, "command_id": None,
        "payload": {"goal": "why?", "kind": "react", "params": {}, "forked_from": None,
                    "budget": {"max_llm_calls": 500, "max_tokens": None, "max_wall_seconds": None}},  # Budget()'s default
    }
    # One run only, replacing the file atomically: nothing else is left in the folder.
    assert trail.export_jsonl(path, run_id="B") == 5
    assert {json.loads(line)["run_id"] for line in path.read_text().splitlines()} == {"B"}
    assert os.listdir(tmp_path) == ["audit.jsonl"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_export_llm_calls_writes_llm_calls_jsonl(trail, tmp_path):
    path = tmp_path / "llm_calls.jsonl"
    assert trail.export_llm_calls(path, run_id="A") == 3
    first = json.loads(path.read_text().splitlines()[0])
    assert {k: first[k] for k in ("model", "seed", "temperature", "response", "prompt_tokens", "completion_tokens", "latency_s")} == {
        "model": "qwen", "seed": 42, "temperature": 0.0, "response": "a1",
        "prompt_tokens": 100, "completion_tokens": 10, "latency_s": 0.25,
    }
    assert first["messages"] == [{"role": "user", "content": "q1"}]
    assert first["params"] == {"seed": 42, "temperature": 0.0}
    assert trail.export_llm_calls(path) == 5


def test_an_export_that_fails_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "audit.jsonl"
    path.write_text("old\n")

    def lines():
        yield "new 1\n"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomically(path, lines())
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["audit.jsonl"]


def test_an_export_into_a_missing_folder_is_one_clear_error(trail, tmp_path):
    with pytest.raises(FileNotFoundError, match="folder .*nowhere does not exist"):
        trail.export_jsonl(tmp_path / "nowhere" / "audit.jsonl")


def test_rebuilding_the_audit_trail_gives_the_same_tables(store):
    runner = ProjectionRunner(store, [AuditProjection()], batch_size=2)
    runner.run_once()
    incremental = runner.views.dump(AuditProjection.tables)
    runner.rebuild("audit")
    assert runner.views.dump(AuditProjection.tables) == incremental
    assert len(incremental["llm_calls"]) == 5
