"""Your own agents (examples/pipeline.py: summarise, then critique, with a @tool; examples/approval.py:
waits for a signal) end to end on
the embedded defaults: local Ray, a SQLite file, the real local llama.cpp server. Two short
completions on the CPU; then the run replays from its log with no model."""

from __future__ import annotations

import pytest

from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.sdk import Client
from examples.pipeline import critique
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]

TEXT = "Chorus records every model completion and tool result before it is used, so a run replays with no model."


def test_the_pipeline_example_runs_on_the_local_model_and_replays(tmp_path):
    worker_path()
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = chorus.submit(TEXT, agent=critique, llm_params={"temperature": 0.0, "max_tokens": 48})
        result = run.wait(timeout=1200)
        events = [r.event for r in chorus.events(run.run_id)]
        report = replay_run(chorus.store, run.run_id)
    assert result.ok, result.error
    assert result.answer and result.answer.strip()
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert len(completions) == 2 and all(e.completion_tokens > 0 for e in completions)
    assert any(e.type_name == "ToolReturned" and e.output.endswith("words") for e in events)
    assert report.ok and report.llm_calls == 2, report.divergence  # served from the log: replay makes no live call


def test_the_approval_example_waits_for_its_signal_on_the_local_model_and_replays(tmp_path):
    from examples.approval import release_notes

    worker_path()
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = chorus.submit("version 2.0", agent=release_notes, llm_params={"temperature": 0.0, "max_tokens": 32})
        waiting = run.wait(timeout=1200)
        result = run.signal("approval", {"ok": True}).wait(timeout=600)
        events = [r.event for r in chorus.events(run.run_id)]
        report = replay_run(chorus.store, run.run_id)
    assert waiting.status == "waiting", waiting
    assert result.ok and result.answer.strip(), result.error
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert len(completions) == 1 and completions[0].content == result.answer  # the draft, approved as it was
    assert [e.type_name for e in events if e.type_name.startswith("Signal")].count("SignalConsumed") == 1
    assert report.ok and report.llm_calls == 1, report.divergence
