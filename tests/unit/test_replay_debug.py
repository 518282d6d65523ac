"""Replay, fixtures, state, diff and the timeline on recorded runs (no Ray, no model)."""

from __future__ import annotations

import json

import pytest

import actors.agent.react as react
from actors.runtime.run import UnknownRun
from events.runs import Budget
from events.store import EventStore
from actors.runtime.replay import UnknownStream, diff_runs, state_at, timeline
from actors.runtime.replay import FixtureError, export_run, load_fixture
from actors.runtime.replay import replay_run
from actors.runtime.replay.fixtures import sealed_text
from tests.support import fake_llm
from tests.support.recording import record_run


@pytest.fixture
def store():
    with EventStore("memory://") as s:
        yield s


def test_replay_reproduces_the_run_with_no_live_calls(store, tmp_path):
    run_id = record_run(store, tmp_path)
    (tmp_path / "notes.txt").unlink()  # a replay reads no files and calls no model
    report = replay_run(store, run_id)
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.streams == [f"agent:{run_id}"]
    assert report.events == len(store.read_stream(f"agent:{run_id}"))
    assert (report.llm_calls, report.tool_calls) == (3, 2)


def test_a_code_change_that_alters_a_prompt_diverges(store, tmp_path, monkeypatch):
    run_id = record_run(store, tmp_path)
    original = react.build_messages
    monkeypatch.setattr(
        react, "build_messages", lambda *a, **k: [*original(*a, **k)[:-1], {"role": "user", "content": "changed"}]
    )
    report = replay_run(store, run_id)
    assert not report.ok
    d = report.divergence
    assert d.version == 2 and d.expected.type_name == "LlmRequested"
    assert "LLM call 1" in d.reason
    assert "expected: LlmRequested" in d.describe()


def test_a_changed_decision_is_reported_expected_against_actual(store, tmp_path, monkeypatch):
    run_id = record_run(store, tmp_path)
    monkeypatch.setattr(react, "wrap_answer", lambda text: f"<answer>{text.upper()}</answer>")
    report = replay_run(store, run_id)
    d = report.divergence
    assert d.expected.type_name == d.actual.type_name == "AnswerGiven"
    assert d.expected.answer != d.actual.answer and "ALPHA-7" in d.actual.answer


def test_time_budgets_replay_the_same_through_the_recorded_clock(store, tmp_path):
    run_id = record_run(store, tmp_path, script=fake_llm.sleepy, budget=Budget(max_wall_seconds=0.3))
    assert any(e.type_name == "BudgetExceeded" for e in store.read_stream(f"agent:{run_id}"))
    assert replay_run(store, run_id).ok


def test_fixture_round_trip_and_bad_fixtures(store, tmp_path):
    run_id = record_run(store, tmp_path)
    path = tmp_path / "run.jsonl"
    count = export_run(store, run_id, path)
    loaded, loaded_id = load_fixture(path)
    assert loaded_id == run_id and count == len(list(loaded.read_all()))
    assert replay_run(loaded, run_id).ok

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[-1] == {"seal": rows[-2]["digest"], "events": count}  # export seals the file
    rows = rows[:-1]
    rows[3]["schema_version"] = 9
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(json.dumps(r) for r in rows) + "\n" + json.dumps({"seal": rows[-1]["digest"], "events": count}))
    with pytest.raises(FixtureError, match="line 4: its digest does not follow"):
        load_fixture(edited)  # an edited line breaks the chain
    newer = tmp_path / "newer.jsonl"
    newer.write_text(sealed_text([{k: v for k, v in r.items() if k != "digest"} for r in rows]))
    with pytest.raises(FixtureError, match="event 4: .* newer than this code"):
        load_fixture(newer)  # resealed, the version itself is refused
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(FixtureError, match="cannot read fixture"):
        load_fixture(broken)


def test_state_at_any_version(store, tmp_path):
    run_id = record_run(store, tmp_path)
    version, first = state_at(store, f"agent:{run_id}", 1)
    assert (version, first.status, first.history) == (1, "running", [])
    latest_version, latest = state_at(store, f"agent:{run_id}")
    assert latest.status == "completed" and latest_version == store.stream_version(f"agent:{run_id}")
    _, run = state_at(store, f"run:{run_id}")
    assert run.status == "completed"
    with pytest.raises(ValueError, match="outside"):
        state_at(store, f"agent:{run_id}", 999)
    with pytest.raises(UnknownStream):
        state_at(store, "agent:nope")


def test_diff_finds_where_runs_part(store, tmp_path):
    a = record_run(store, tmp_path, run_id="a")
    b = record_run(store, tmp_path, run_id="b")
    c = record_run(store, tmp_path, run_id="c", script=fake_llm.garbage_then_answer)
    same = diff_runs(store, a, b)
    assert same.first_a is None and same.first_b is None
    assert same.shared == len(store.read_stream("agent:a"))
    other = diff_runs(store, a, c)
    assert other.shared == 2  # AgentStarted and the first request are the same fact
    assert (other.first_a.type_name, other.first_b.type_name) == ("LlmCompleted", "LlmCompleted")
    assert "rejected steps" in "\n".join(other.lines())


def test_timeline_marks_errors_and_unknown_runs(store, tmp_path):
    run_id = record_run(store, tmp_path, script=fake_llm.garbage_then_answer)
    lines = timeline(store, run_id)
    rejected = [line for line in lines if "step not run" in line]
    assert rejected and all(line.endswith("<-- !") for line in rejected)
    assert any("ALPHA-7" in line for line in lines)
    with pytest.raises(UnknownRun):
        timeline(store, "nope")
