"""A research run end to end on the embedded defaults: local Ray, a SQLite file, Qdrant local
mode, MiniLM and the real local llama.cpp model. Slow (several minutes): the plan, each step
and the report are real completions on the CPU."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.settings import Settings
from actors.runtime.replay import replay_run
from projections.research_history import ResearchHistory
from tests.support import fake_research
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def test_research_on_the_local_model_reports_with_sources(tmp_path):
    worker_path()
    repo = fake_research.make_repo(tmp_path / "repo")
    model = Settings.from_env().model_path  # assembled once by `make setup`
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}", gguf_path=model)
    with Client(settings=settings) as chorus:
        run = chorus.submit("Where are payments recorded?", agent="researcher", repo=str(repo), max_iterations=3)
        result = run.wait(timeout=1800)
        events = [r.event for r in chorus.events(run.run_id)]
        row = ResearchHistory.open(chorus.store).get(run.run_id)
        replay = replay_run(chorus.store, run.run_id)
    assert result.ok, result.error
    types = [e.type_name for e in events]
    assert types.count("PlanMade") == 1 and "ReportWritten" in types
    plan = next(e for e in events if e.type_name == "PlanMade")
    # the model's own plan, not the fallback of the objective itself
    assert plan.steps != ["Where are payments recorded?"]
    assert all(not s[:1].isdigit() for s in plan.steps)  # the model numbers its steps; we strip it
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert len(completions) >= 3 and all(e.completion_tokens > 0 for e in completions)
    assert row.status == "COMPLETED" and row.final_report == result.answer and len(result.answer) > 80
    # whatever the model chose to look at, the report lists the files the tools showed it
    shown = any(e.type_name == "ToolReturned" and "pkg/ledger.py:" in e.output for e in events)
    if shown:
        assert "pkg/ledger.py" in result.answer.split("## Sources")[-1]
    assert replay.ok and replay.llm_calls == len([e for e in events if e.type_name in ("LlmCompleted", "LlmFailed") and e.stream_id.startswith("agent:")])
