"""A research run end to end on the embedded defaults, kept short: local Ray, a SQLite file,
Qdrant local mode, MiniLM and the real local llama.cpp model for its three calls (the plan,
one step that must answer, the report); then the run replays with no model.

What a longer research run on this model does (the model's own plan, its numbering
stripped, tool steps, a report that lists the files the tools showed) is asserted on the
recorded run `tests/fixtures/runs/local_model_research.jsonl` by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.research.history import ResearchHistory
from tests.support import fake_research
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def test_research_on_the_local_model_plans_reports_and_replays(tmp_path):
    worker_path()
    repo = fake_research.make_repo(tmp_path / "repo")
    model = Settings.from_env().model_path  # assembled once by `make setup`
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}", gguf_path=model)
    with Client(settings=settings) as chorus:
        run = chorus.submit("Where are payments recorded?", kind="researcher", repo=str(repo), max_iterations=1)
        result = run.wait(timeout=1800)
        events = [r.event for r in chorus.events(run.run_id)]
        row = ResearchHistory.open(chorus.store).get(run.run_id)
        replay = replay_run(chorus.store, run.run_id)
    assert result.ok, result.error
    types = [e.type_name for e in events]
    assert types.count("PlanMade") == 1 and types.count("ReportWritten") == 1
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert len(completions) == 3 and all(e.completion_tokens > 0 for e in completions)  # plan, step, report
    assert row.status == "COMPLETED" and row.final_report == result.answer
    assert replay.ok, replay.divergence and replay.divergence.describe()
    assert replay.llm_calls == len([e for e in events if e.type_name in ("LlmCompleted", "LlmFailed")])
