"""A goal end to end on the embedded defaults, kept to one real call: local Ray, a SQLite
file, the real local llama.cpp server with Qwen2.5-Coder-1.5B, one iteration (the model must
answer at once); then the run replays with no model.

Longer agent runs on this model (a search, a read, then the answer from what was read) are
asserted on the recorded runs tests/fixtures/runs/local_model_sqlite_recorder_question.jsonl
and local_model_projection_thread_question.jsonl by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from tests.support import fake_llm
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def test_the_agent_makes_one_call_to_the_local_model_and_replays(tmp_path):
    worker_path()
    repo = tmp_path / "repo"
    repo.mkdir()
    fake_llm.make_repo(repo)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = chorus.submit(
            "What is the marker in the notes?", root=repo, max_iterations=1,
            llm_params={"temperature": 0.0, "max_tokens": 96},
        )  # fmt: skip
        result = run.wait(timeout=1200)
        events = [r.event for r in chorus.events(run.run_id)]
        report = replay_run(chorus.store, run.run_id)
    # an answer (the plain agent is not grounded: no verify step), or none on the only iteration there was
    assert result.ok or result.error.type == "iteration_limit", result.error
    [completion] = [e for e in events if e.type_name in ("LlmCompleted", "LlmFailed")]
    assert completion.type_name == "LlmCompleted" and completion.completion_tokens > 0
    after = events[events.index(completion) :]
    assert completion.content and not any(e.type_name == "ToolCalled" for e in after)  # the last step only answers
    assert all(e.run_id == run.run_id for e in events)
    assert report.ok and report.llm_calls == 1, report.divergence and report.divergence.describe()
