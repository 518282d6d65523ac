"""A goal end to end on the embedded defaults: local Ray, a SQLite file, the real local
llama.cpp server with Qwen2.5-Coder-1.5B. Slow (a minute or more): every step is a real
completion on the CPU."""

from __future__ import annotations

import pytest

from actors import Client
from actors.agent.policy import unwrap_answer
from actors.runtime.settings import Settings
from tests.support.ray_env import worker_path
from tests.support import fake_llm

pytestmark = [pytest.mark.llm, pytest.mark.ray]


def test_the_agent_answers_from_the_files_with_the_local_model(tmp_path):
    worker_path()
    repo = tmp_path / "repo"
    repo.mkdir()
    fake_llm.make_repo(repo)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = chorus.submit("What is the marker in the notes?", root=repo, max_iterations=5)
        result = run.wait(timeout=1200)
        events = [r.event for r in chorus.events(run.run_id)]
    assert result.ok, result.error
    assert "ALPHA-7" in unwrap_answer(result.answer)
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert completions and all(e.completion_tokens > 0 for e in completions)
    assert any(e.type_name == "ToolReturned" and "ALPHA-7" in e.output for e in events)
    assert all(e.run_id == run.run_id for e in events)
