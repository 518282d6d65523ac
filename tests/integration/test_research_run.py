"""A research run end to end on real Ray, a real SQLite file, real Qdrant (local mode) and the
real MiniLM embedder, with a scripted model: indexing, plan, search with map-reduce, report,
the research history, re-indexing, replay with nothing else present, and bad repositories."""

from __future__ import annotations

import shutil

import pytest

from actors import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.runtime.replay import replay_run
from actors.research.history import ResearchHistory
from tests.support import fake_research

pytestmark = pytest.mark.ray


@pytest.fixture
def client(ray_local, tmp_path):
    def make():
        settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
        return Client(settings=settings, llm=ScriptedProvider(fake_research.researcher))

    return make


def test_research_indexes_searches_and_reports_with_citations(client, tmp_path):
    repo = fake_research.make_repo(tmp_path / "repo")
    with client() as c:
        run = c.submit("Where are payments recorded?", kind="researcher", repo=str(repo))
        result = run.wait(timeout=300)
        records = c.events(run.run_id)
        everything = list(c.store.read_all(run_id=run.run_id))
        history = ResearchHistory.open(c.store)
        row = history.get(run.run_id)
        report = replay_run(c.store, run.run_id)
    assert result.ok, result.error
    assert "LEDGER-42" in result.answer and "## Sources" in result.answer
    assert "pkg/ledger.py:" in result.answer.split("## Sources")[1]
    types = [r.event.type_name for r in records]
    for t in ("ResearchRequested", "IndexingStarted", "IndexingCompleted", "PlanMade", "AgentStarted", "AnswerGiven", "ReportWritten"):
        assert t in types
    indexed = next(r.event for r in records if r.event.type_name == "IndexingCompleted")
    assert indexed.files == 3 and indexed.skipped == 3  # ledger, colours, README; png, dat, dump
    search = next(r.event for r in records if r.event.type_name == "ToolReturned" and r.event.tool == "repository_search")
    assert search.ok and search.output.startswith("Answer: Payments are recorded by Ledger.record")
    assert "pkg/ledger.py:1-" in search.output
    # the map and reduce calls are recorded in the searcher's own stream
    inner = [r.event for r in everything if r.event.stream_id == f"tool:repository_search:{run.run_id}"]
    assert [e.type_name for e in inner].count("LlmCompleted") >= 2
    assert row is not None and row.status == "COMPLETED" and row.final_report == result.answer
    assert row.indexed_files == 3 and [s.action for s in row.log_stream][:1] == ["repository_search"]
    assert report.ok, report.divergence and report.divergence.describe()


def test_reindexing_skips_unchanged_files_and_replay_needs_no_repository(client, tmp_path):
    repo = fake_research.make_repo(tmp_path / "repo")
    with client() as c:
        first = c.submit("Where are payments recorded?", kind="researcher", repo=str(repo))
        assert first.wait(timeout=300).ok
        (repo / "pkg" / "colours.py").write_text("RED = 10\n")
        second = c.submit("Where are payments recorded?", kind="researcher", repo=str(repo))
        assert second.wait(timeout=300).ok
        indexed = [r.event for r in c.events(second.run_id) if r.event.type_name == "IndexingCompleted"][0]
        shutil.rmtree(repo)
        shutil.rmtree(tmp_path / "data" / "qdrant")
        report = replay_run(c.store, second.run_id)
    assert indexed.files_unchanged == 2 and "2 unchanged and skipped" in indexed.summary
    assert report.ok and report.llm_calls >= 3 and report.tool_calls >= 2


def test_a_git_url_is_cloned_and_indexed(client, tmp_path):
    repo = fake_research.make_repo(tmp_path / "origin", git=True)
    with client() as c:
        run = c.submit("Where are payments recorded?", kind="researcher", repo=f"file://{repo}")
        result = run.wait(timeout=300)
    assert result.ok, result.error
    assert (tmp_path / "data" / "repos").is_dir()


@pytest.mark.parametrize(
    "source, reason",
    [("file:///nonexistent/repo.git", "cannot clone"), ("EMPTY", "no text files")],
)
def test_bad_repositories_fail_the_run_with_a_structured_error(client, tmp_path, source, reason):
    if source == "EMPTY":
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "only.bin").write_bytes(b"\0" * 10)
        source = str(tmp_path / "empty")
    with client() as c:
        run = c.submit("Anything?", kind="researcher", repo=source)
        result = run.wait(timeout=120)
        row = ResearchHistory.open(c.store).get(run.run_id)
    assert result.status == "failed" and result.error.type == "indexing_failed"
    assert reason in result.error.message
    assert row.status == "FAILED" and row.error.type == "indexing_failed"
