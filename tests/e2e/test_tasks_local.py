"""A task workflow end to end on the embedded defaults: local Ray, a SQLite file, and the real
local llama.cpp server with Qwen2.5-Coder-1.5B. Slow: each LLM call is a real completion on
the CPU."""

from __future__ import annotations

import pytest

from actors import Client
from actors.runtime.settings import Settings
from actors.tasks.client import result_of, submit_task
from events.store import EventStore
from actors.runtime.replay import replay_run
from tests.support import fake_llm
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]

WORKFLOW = """
(let ((summary (call summarize-file :path "notes.txt")))
  (if (ok? summary)
      summary
      (system:run_script "head -n 2 notes.txt")))
"""


def test_a_workflow_summarizes_a_file_with_the_local_model_and_replays(tmp_path):
    worker_path()
    repo = tmp_path / "repo"
    repo.mkdir()
    fake_llm.make_repo(repo)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = submit_task(chorus, WORKFLOW, workspace=repo)
        run.wait(timeout=1200)
        result = result_of(chorus, run)
        events = [r.event for r in chorus.events(run.run_id)]
    assert result.status == "COMPLETE", result.notes
    assert isinstance(result.content, str) and result.content.strip()
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert len(completions) == 1 and completions[0].completion_tokens > 0
    read = next(e for e in events if e.type_name == "ToolReturned")
    assert read.tool == "system:read_files" and "ALPHA-7" in read.output
    assert "ALPHA-7" in next(e for e in events if e.type_name == "LlmRequested").messages[-1]["content"]
    assert all(e.run_id == run.run_id for e in events)
    with EventStore(settings.store_url) as store:
        report = replay_run(store, run.run_id)
    assert report.ok and report.llm_calls == 1 and report.tool_calls == 1
