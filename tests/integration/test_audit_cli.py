"""`chorus audit events | export | llm-calls | usage` as a user runs them: a fresh
process on a SQLite store file holding two runs (one finished, one that failed with a
call still pending)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from actors.runtime.cli_dialect import EVENT_FIELDS
from events import ErrorInfo
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.runs import RunCompleted, RunFailed, RunSubmitted
from events.store import EventStore
from tests.support.cli import chorus

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    url = f"sqlite:///{tmp_path / 'chorus.db'}"
    s = EventStore(url)
    s.append("run:A", [RunSubmitted(goal="why?", run_id="A", timestamp=at(0))], 0)
    s.append(
        "agent:A",
        [
            LlmRequested(model="qwen", messages=[{"role": "user", "content": "why?"}], params={"seed": 42},
                         request_hash="h1", call_index=1, run_id="A", timestamp=at(1)),
            LlmCompleted(request_hash="h1", call_index=1, content="because", prompt_tokens=100,
                         completion_tokens=10, latency_s=1.5, cost_usd=0.001, run_id="A", timestamp=at(2)),
            ToolCalled(tool="search", args={"q": "x"}, call_index=1, run_id="A", timestamp=at(3)),
            ToolReturned(tool="search", call_index=1, ok=True, output="found", run_id="A", timestamp=at(4)),
        ],
        0,
    )
    s.append("run:A", [RunCompleted(result="because", llm_calls=1, tokens=110, run_id="A", timestamp=at(5))], 1)
    s.append("run:B", [RunSubmitted(goal="how?", run_id="B", timestamp=at(10))], 0)
    s.append(
        "agent:B",
        [
            LlmRequested(model="qwen", messages=[{"role": "user", "content": "how?"}], request_hash="h1",
                         call_index=1, run_id="B", timestamp=at(11)),
            LlmFailed(request_hash="h1", call_index=1, run_id="B", timestamp=at(12),
                      error=ErrorInfo(type="llm_error", reason="timeout", message="no answer")),
            LlmRequested(model="qwen", messages=[{"role": "user", "content": "how?"}], request_hash="h2",
                         call_index=2, run_id="B", timestamp=at(13)),
        ],
        0,
    )
    s.append("run:B", [RunFailed(error=ErrorInfo(type="llm_error", reason="timeout", message="gave up"),
                                 run_id="B", timestamp=at(14))], 1)
    s.close()
    return {"CHORUS_STORE_URL": url, "CHORUS_DATA_DIR": str(tmp_path / "data")}


def test_events_by_run_type_and_time(env):
    r = chorus("audit", "events", "--run", "A", env=env)
    assert r.returncode == 0, r.stderr
    header, *lines = r.stdout.splitlines()
    assert header.split() == ["POSITION", "TIME", "STREAM@VERSION", "TYPE", "PAYLOAD"]
    assert lines[-1] == "6 event(s)"
    assert [line.split()[4] for line in lines[:-1]] == [
        "RunSubmitted", "LlmRequested", "LlmCompleted", "ToolCalled", "ToolReturned", "RunCompleted",
    ]
    assert lines[1].split()[3] == "agent:A@1" and '"content":"why?"' in lines[1]

    r = chorus("audit", "events", "--type", "LlmFailed", "--type", "RunFailed", "--json", env=env)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(e["run_id"], e["type"]) for e in rows] == [("B", "LlmFailed"), ("B", "RunFailed")]
    assert rows[0]["data"]["error"]["reason"] == "timeout"
    assert list(rows[0]) == list(EVENT_FIELDS)  # the one event shape, as `chorus events --json`

    r = chorus("audit", "events", "--since", "2025-03-01T12:00:11", "--until", "2025-03-01T12:00:13", env=env)
    assert [line.split()[4] for line in r.stdout.splitlines()[1:-1]] == ["LlmRequested", "LlmFailed"]


def test_export_and_the_llm_call_log(env, tmp_path):
    out = tmp_path / "audit.jsonl"
    r = chorus("audit", "export", "--out", str(out), "--run", "B", env=env)
    assert (r.returncode, r.stdout.strip()) == (0, f"wrote 5 events of run B to {out}")
    old = chorus("audit", "export", str(tmp_path / "old.jsonl"), "--run", "B", env=env)  # the hidden old spelling
    assert old.returncode == 0 and (tmp_path / "old.jsonl").read_text() == out.read_text()
    assert [json.loads(line)["type"] for line in out.read_text().splitlines()] == [
        "RunSubmitted", "LlmRequested", "LlmFailed", "LlmRequested", "RunFailed",
    ]

    r = chorus("audit", "llm-calls", env=env)
    header, *lines = r.stdout.splitlines()
    assert header.split()[:3] == ["POSITION", "STREAM#CALL", "STATUS"]
    assert lines[-1] == "3 LLM call(s)"
    assert [line.split()[1:3] for line in lines[:-1]] == [
        ["agent:A#1", "completed"], ["agent:B#1", "failed"], ["agent:B#2", "pending"],
    ]
    assert "seed=42" in lines[0] and "100+10 tokens" in lines[0] and "1.50s" in lines[0]

    r = chorus("audit", "llm-calls", "--json", env=env)
    assert [(c["stream_id"], c["status"]) for c in map(json.loads, r.stdout.splitlines())] == [
        ("agent:A", "completed"), ("agent:B", "failed"), ("agent:B", "pending"),
    ]

    calls = tmp_path / "llm_calls.jsonl"
    r = chorus("audit", "llm-calls", "--run", "A", "--out", str(calls), env=env)
    assert r.returncode == 0, r.stderr
    [call] = [json.loads(line) for line in calls.read_text().splitlines()]
    assert (call["messages"], call["response"], call["seed"], call["prompt_tokens"]) == (
        [{"role": "user", "content": "why?"}], "because", 42, 100,
    )


def test_usage_per_run_and_per_actor(env):
    r = chorus("audit", "usage", env=env)
    rows = [line.split() for line in r.stdout.splitlines()[1:]]
    assert rows == [
        ["A", "1", "0", "100", "10", "0.001000", "1.5"],
        ["B", "2", "1", "0", "0", "-", "0.0"],
        ["total", "3", "1", "100", "10", "0.001000", "1.5"],
    ]
    r = chorus("audit", "usage", "--run", "B", "--by", "actor", env=env)
    assert [line.split()[:3] for line in r.stdout.splitlines()[1:]] == [["agent:B", "2", "1"]]
    r = chorus("audit", "usage", "--json", env=env)
    assert [(u["key"], u["calls"]) for u in map(json.loads, r.stdout.splitlines())] == [("A", 1), ("B", 2)]


def test_bad_input_is_one_line_and_exit_2(env, tmp_path):
    for args, message in (
        (("audit", "events", "--run", "nope"), "chorus: error: unknown run 'nope': the audit trail holds no events of it"),
        (("audit", "export", str(tmp_path / "missing" / "a.jsonl")), "does not exist"),
        (("audit", "events", "--limit", "0"), "chorus: error: --limit must be positive, not 0"),
    ):
        r = chorus(*args, env=env)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    r = chorus("audit", "events", "--since", "yesterday", env=env)
    assert r.returncode == 2 and "not an ISO-8601 time: 'yesterday'" in r.stderr
    assert not (tmp_path / "missing").exists()
