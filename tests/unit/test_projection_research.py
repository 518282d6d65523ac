"""The research history view (seed 000's `research_history` table): statuses from the
research lifecycle events, the log stream from the agent's step events, the query API,
and rebuild-from-zero equal to incremental processing, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import ErrorInfo, Event
from events.store import EventStore, Recorded
from actors.agent.events import AgentStarted, AnswerGiven, StepDecided, StepRejected
from events.effects import LlmCompleted, LlmRequested, ToolCalled, ToolReturned
from actors.research.events import (
    IndexingCompleted,
    IndexingStarted,
    ReportWritten,
    ResearchFailed,
    ResearchRequested,
    ResearchStarted,
)
from events.runs import RunSubmitted
from projections import ProjectionRunner, ViewCursor
from actors.research.history import ResearchHistory, ResearchHistoryProjection, ResearchStep

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
TABLES = ResearchHistoryProjection.tables


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class Log:
    """Appends events to streams, keeping each stream's version."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.versions: dict[str, int] = {}

    def add(self, stream: str, *events: Event) -> list[Recorded]:
        recorded = self.store.append(stream, list(events), self.versions.get(stream, 0))
        self.versions[stream] = self.versions.get(stream, 0) + len(events)
        return recorded


def tool(run: str, i: int, name: str, output: str, t: float, ok: bool = True) -> list[Event]:
    return [
        ToolCalled(tool=name, args={"q": i}, call_index=i, run_id=run, timestamp=at(t)),
        ToolReturned(tool=name, call_index=i, ok=ok, output=output, run_id=run, timestamp=at(t + 0.5)),
    ]


def research_run(log: Log, run: str, t: float = 0, objective: str = "How does indexing work?") -> None:
    """A research run with a repository, three steps (one rejected, one failed tool), an answer and a report."""
    research, agent = f"research:{run}", f"agent:{run}"
    log.add(research, ResearchRequested(objective=objective, repo_url="https://git.example/repo", run_id=run, timestamp=at(t)))
    log.add(research, IndexingStarted(repo_url="https://git.example/repo", run_id=run, timestamp=at(t + 1)))
    log.add(research, IndexingCompleted(files=12, chunks=340, run_id=run, timestamp=at(t + 2)))
    log.add(
        agent,
        AgentStarted(goal=objective, root=".", tools=[], max_iterations=5, model="m", run_id=run, timestamp=at(t + 3)),
        LlmRequested(model="m", messages=[], request_hash="h1", call_index=1, run_id=run, timestamp=at(t + 3)),
        LlmCompleted(request_hash="h1", call_index=1, content="{}", run_id=run, timestamp=at(t + 4)),
        StepDecided(iteration=1, thought="search the index", action="repository_searcher", args={"query": "indexer"}, run_id=run, timestamp=at(t + 4)),
    )
    log.add(agent, *tool(run, 1, "repository_searcher", "indexer.py: class RepositoryIndexer", t + 5))
    log.add(
        agent,
        StepRejected(iteration=2, thought="search again", action="repository_searcher", args={"query": "indexer"},
                     reason="repeat", observation="You already ran that.", run_id=run, timestamp=at(t + 7)),
        StepDecided(iteration=3, thought="read it", action="read_file", args={"path": "nope.py"}, run_id=run, timestamp=at(t + 8)),
    )
    log.add(agent, *tool(run, 2, "read_file", "Error: no such file", t + 9, ok=False))
    log.add(agent, AnswerGiven(iteration=4, thought="enough", answer="<answer>chunks</answer>", run_id=run, timestamp=at(t + 11)))
    log.add(research, ReportWritten(final_report="# Indexing\n\nIt chunks.", run_id=run, timestamp=at(t + 12)))


def other_run(log: Log, run: str = "plain") -> None:
    """An ordinary agent run: its steps are not research."""
    log.add(f"run:{run}", RunSubmitted(goal="not research", run_id=run, timestamp=at(50)))
    log.add(
        f"agent:{run}",
        StepDecided(iteration=1, thought="x", action="search", args={}, run_id=run, timestamp=at(51)),
        *tool(run, 1, "search", "y", 52),
    )


@pytest.fixture
def store():
    s = EventStore("memory://")
    yield s
    s.close()


def history_of(store: EventStore, batch_size: int = 500) -> tuple[ProjectionRunner, ResearchHistory]:
    runner = ProjectionRunner(store, [ResearchHistoryProjection()], batch_size=batch_size)
    runner.run_once()
    return runner, ResearchHistory(runner.views)


EXPECTED_LOG = [
    ResearchStep(
        position=7, actor="agent:R1", iteration=1, thought="search the index", action="repository_searcher",
        args={"query": "indexer"}, observation="indexer.py: class RepositoryIndexer", ok=True, rejected=None,
    ),
    ResearchStep(
        position=10, actor="agent:R1", iteration=2, thought="search again", action="repository_searcher",
        args={"query": "indexer"}, observation="You already ran that.", ok=None, rejected="repeat",
    ),
    ResearchStep(
        position=11, actor="agent:R1", iteration=3, thought="read it", action="read_file",
        args={"path": "nope.py"}, observation="Error: no such file", ok=False, rejected=None,
    ),
    ResearchStep(
        position=14, actor="agent:R1", iteration=4, thought="enough", action="answer",
        args={"answer": "<answer>chunks</answer>"}, observation=None, ok=None, rejected=None,
    ),
]


def test_a_research_run_becomes_one_row_with_its_steps_and_report(store):
    log = Log(store)
    research_run(log, "R1")
    _, history = history_of(store)
    record = history.get("R1")
    assert record is not None
    assert (record.id, record.run_id, record.objective, record.repo_url) == (
        1, "R1", "How does indexing work?", "https://git.example/repo",
    )
    assert (record.status, record.final_report, record.error) == ("COMPLETED", "# Indexing\n\nIt chunks.", None)
    assert (record.indexed_files, record.indexed_chunks) == (12, 340)
    assert (record.created_at, record.updated_at) == (at(0), at(12))
    assert record.log_stream == EXPECTED_LOG
    assert history.get(1) == record


def test_the_status_follows_the_seed_lifecycle(store):
    """PENDING → INDEXING → RUNNING → COMPLETED, seen by a runner catching up after each append."""
    log = Log(store)
    runner = ProjectionRunner(store, [ResearchHistoryProjection()])
    history = ResearchHistory(runner.views)
    seen = []

    def step(stream: str, *events: Event) -> None:
        log.add(stream, *events)
        runner.run_once()
        record = history.get("R")
        seen.append(None if record is None else (record.status, len(record.log_stream), record.updated_at))

    step("research:R", ResearchRequested(objective="o", repo_url="u", run_id="R", timestamp=at(0)))
    step("research:R", IndexingStarted(repo_url="u", run_id="R", timestamp=at(1)))
    step("research:R", IndexingCompleted(files=1, chunks=2, run_id="R", timestamp=at(2)))
    step("agent:R", StepDecided(iteration=1, thought="t", action="a", args={}, run_id="R", timestamp=at(3)))
    step("agent:R", *tool("R", 1, "a", "out", 4))
    step("research:R", ReportWritten(final_report="done", run_id="R", timestamp=at(6)))
    assert seen == [
        ("PENDING", 0, at(0)),
        ("INDEXING", 0, at(1)),
        ("RUNNING", 0, at(2)),
        ("RUNNING", 1, at(3)),
        ("RUNNING", 1, at(4.5)),  # the tool's result filled the step's observation
        ("COMPLETED", 1, at(6)),
    ]
    assert history.get("R").log_stream[0].observation == "out"


def test_a_run_without_a_repository_and_a_failed_run(store):
    log = Log(store)
    log.add("research:A", ResearchRequested(objective="no repo", run_id="A", timestamp=at(0)))
    log.add("research:A", ResearchStarted(lead_stream="agent:A", run_id="A", timestamp=at(1)))
    _, history = history_of(store)
    a = history.get("A")
    assert (a.status, a.repo_url, a.indexed_files) == ("RUNNING", None, None)

    error = ErrorInfo(type="budget_exceeded", reason="llm_calls", message="10 calls used", details={"limit": 10})
    log.add("research:A", ResearchFailed(error=error, run_id="A", timestamp=at(2)))
    history_of(store)
    a = history.get("A")
    assert (a.status, a.error, a.final_report) == ("FAILED", error, None)

    # A resumed run leaves FAILED: the latest lifecycle event decides, the old error goes.
    log.add("research:A", ResearchStarted(lead_stream="agent:A2", run_id="A", timestamp=at(3)))
    log.add("research:A", ReportWritten(final_report="late", run_id="A", timestamp=at(4)))
    history_of(store)
    a = history.get("A")
    assert (a.status, a.error, a.final_report, a.updated_at) == ("COMPLETED", None, "late", at(4))


def test_other_runs_and_unrequested_runs_leave_no_rows(store):
    log = Log(store)
    other_run(log)
    # Lifecycle and step events of a run whose request is not in the log.
    log.add("research:ghost", IndexingStarted(repo_url="u", run_id="ghost", timestamp=at(60)))
    log.add("agent:ghost", StepDecided(iteration=1, thought="t", action="a", args={}, run_id="ghost", timestamp=at(61)))
    research_run(log, "R1", t=100)
    runner, history = history_of(store)
    assert [r.run_id for r in history.list()] == ["R1"]
    assert history.get("plain") is None and history.get("ghost") is None and history.get(2) is None
    assert len(runner.views.dump(TABLES)["research_history"]) == 1


def test_a_tool_result_fills_only_its_own_actors_pending_step(store):
    """Two agents of one run (map-reduce workers): each result pairs with its actor's
    step; a second result, or one after a rejected step, changes nothing."""
    log = Log(store)
    log.add("research:M", ResearchRequested(objective="o", run_id="M", timestamp=at(0)))
    log.add("agent:M-1", StepDecided(iteration=1, thought="one", action="search", args={}, run_id="M", timestamp=at(1)))
    log.add("agent:M-2", StepDecided(iteration=1, thought="two", action="search", args={}, run_id="M", timestamp=at(2)))
    log.add("agent:M-2", *tool("M", 1, "search", "for two", 3))
    log.add("agent:M-2", *tool("M", 2, "search", "stray", 4))  # no step waits for it
    log.add("agent:M-1", *tool("M", 1, "search", "for one", 5))
    log.add(
        "agent:M-1",
        StepRejected(iteration=2, thought="", action="", args={}, reason="unparseable", observation="say JSON", run_id="M", timestamp=at(6)),
    )
    log.add("agent:M-1", *tool("M", 2, "search", "after a rejection", 7))
    _, history = history_of(store)
    steps = history.get("M").log_stream
    assert [(s.actor, s.thought, s.observation, s.rejected) for s in steps] == [
        ("agent:M-1", "one", "for one", None),
        ("agent:M-2", "two", "for two", None),
        ("agent:M-1", "", "say JSON", "unparseable"),
    ]
    assert history.get("M").updated_at == at(6)  # the ignored results changed nothing


def test_ids_count_requests_in_log_order_and_a_repeated_request_changes_nothing(store):
    log = Log(store)
    for i, run in enumerate(["first", "second", "third"]):
        log.add(f"research:{run}", ResearchRequested(objective=run, run_id=run, timestamp=at(i)))
    log.add("research:first-again", ResearchRequested(objective="again", run_id="first", timestamp=at(9)))
    _, history = history_of(store, batch_size=1)
    assert [(r.id, r.run_id, r.objective, r.updated_at) for r in history.list()] == [
        (3, "third", "third", at(2)),
        (2, "second", "second", at(1)),
        (1, "first", "first", at(0)),
    ]


def test_list_filters_by_status_and_objective(store):
    log = Log(store)
    research_run(log, "done-1", t=0, objective="How does the Registry work?")
    log.add("research:p", ResearchRequested(objective="Where is ÜBER-config read?", run_id="p", timestamp=at(20)))
    research_run(log, "done-2", t=30, objective="What does the registry register?")
    log.add("research:f", ResearchRequested(objective="registry of tools", run_id="f", timestamp=at(50)))
    log.add("research:f", ResearchFailed(error=ErrorInfo(type="t", reason="r", message="m"), run_id="f", timestamp=at(51)))
    _, history = history_of(store)

    def ids(**query) -> list[str]:
        return [r.run_id for r in history.list(**query)]

    assert ids() == ["f", "done-2", "p", "done-1"]  # newest first
    assert ids(status="COMPLETED") == ["done-2", "done-1"]
    assert ids(status="failed") == ["f"]
    assert ids(status=["PENDING", "FAILED"]) == ["f", "p"]
    assert ids(status=[]) == []
    assert ids(status="RUNNING") == []
    assert ids(objective="REGISTRY") == ["f", "done-2", "done-1"]
    assert ids(objective="über") == ["p"]
    assert ids(objective="registry", status="COMPLETED", limit=1) == ["done-2"]
    assert ids(limit=2) == ["f", "done-2"]
    assert ids(limit=0) == []
    with pytest.raises(ValueError, match=r"^unknown research status 'DONE' \(known: PENDING, INDEXING, RUNNING, COMPLETED, FAILED\)$"):
        history.list(status="DONE")


def test_open_catches_up(store):
    research_run(Log(store), "R1")
    assert ResearchHistory.open(store, catch_up=False).list() == []
    assert [r.status for r in ResearchHistory.open(store).list()] == ["COMPLETED"]


# -- rebuild from zero equals incremental ------------------------------------------------------


def test_rebuilding_gives_the_same_table_on_every_backend(store_url):
    """memory, SQLite and PostgreSQL: appends interleaved with catching up in small
    batches, then a rebuild from position 0 gives the same rows, and the same records."""
    s = EventStore(store_url)
    try:
        log = Log(s)
        runner = ProjectionRunner(s, [ResearchHistoryProjection()], batch_size=3)
        research_run(log, "R1", objective="nul \x00 and ünïcode")
        runner.run_once()
        other_run(log)
        log.add("research:R2", ResearchRequested(objective="second", run_id="R2", timestamp=at(70)))
        runner.run_once()
        log.add("agent:R2", StepDecided(iteration=1, thought="t\x00", action="a", args={"k": "v\x00"}, run_id="R2", timestamp=at(71)))
        log.add("research:R2", ResearchFailed(error=ErrorInfo(type="t", reason="r", message="m"), run_id="R2", timestamp=at(72)))
        runner.run_once()
        incremental = runner.views.dump(TABLES)
        records = ResearchHistory(runner.views).list()
        assert [(r.run_id, r.status, len(r.log_stream)) for r in records] == [("R2", "FAILED", 1), ("R1", "COMPLETED", 4)]
        assert records[1].objective == "nul \ufffd and ünïcode"  # PostgreSQL text holds no NUL
        assert records[1].log_stream == EXPECTED_LOG
        assert records[0].log_stream[0].args == {"k": "v\x00"}  # JSON keeps it

        [result] = runner.rebuild("research")
        assert result.position == s.max_position()
        assert runner.views.dump(TABLES) == incremental
        assert ResearchHistory(runner.views).list() == records
    finally:
        s.close()


KINDS = ("request", "index", "indexed", "start", "report", "fail", "step", "tool", "reject", "answer")
plan_steps = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(KINDS), st.sampled_from(["a", "b"]), st.text(max_size=6)),
    min_size=1,
    max_size=40,
)
_examples = itertools.count()


def event_for(kind: str, run: str, text: str, i: int) -> list[Event]:
    if kind == "request":
        return [ResearchRequested(objective=text, repo_url=text or None, run_id=run)]
    if kind == "index":
        return [IndexingStarted(repo_url=text, run_id=run)]
    if kind == "indexed":
        return [IndexingCompleted(files=i, chunks=2 * i, run_id=run)]
    if kind == "start":
        return [ResearchStarted(lead_stream=text, run_id=run)]
    if kind == "report":
        return [ReportWritten(final_report=text, run_id=run)]
    if kind == "fail":
        return [ResearchFailed(error=ErrorInfo(type="t", reason="r", message=text), run_id=run)]
    if kind == "step":
        return [StepDecided(iteration=i, thought=text, action="search", args={"q": text}, run_id=run)]
    if kind == "tool":
        return tool(run, i, "search", text, i)
    if kind == "reject":
        return [StepRejected(iteration=i, thought=text, action="x", args={}, reason="repeat", observation=text, run_id=run)]
    return [AnswerGiven(iteration=i, thought=text, answer=text, run_id=run)]


def append_plan(log: Log, plan, after_each=None) -> None:
    example = next(_examples)
    for i, (run, kind, actor, text) in enumerate(plan):
        run_id = f"x{example}-{run}"
        stream = f"research:{run_id}" if kind in KINDS[:6] else f"agent:{run_id}-{actor}"
        log.add(stream, *event_for(kind, run_id, text, i))
        if after_each is not None:
            after_each(i)


class Crash(Exception):
    pass


class CrashingResearch(ResearchHistoryProjection):
    """Killed inside apply_batch after `left` more events, mid-batch."""

    def __init__(self, left: int) -> None:
        self.left = left

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        if self.left < len(records):
            super().apply_batch(c, records[: self.left])
            raise Crash
        super().apply_batch(c, records)
        self.left -= len(records)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plan_steps, cuts=st.sets(st.integers(0, 39)), batch=st.integers(1, 6), crash=st.integers(0, 50))
def test_property_incremental_and_crashed_runs_equal_a_rebuild(plan, cuts, batch, crash):
    """Random research and step events over a few runs: catching up at random points in
    random batch sizes, or a runner killed mid-batch and restarted, gives the rebuilt view."""
    with EventStore("memory://") as s:
        log = Log(s)
        runner = ProjectionRunner(s, [ResearchHistoryProjection()], batch_size=batch)
        append_plan(log, plan, after_each=lambda i: runner.run_once() if i in cuts else None)
        runner.run_once()
        incremental = runner.views.dump(TABLES)
        runner.rebuild("research")
        assert runner.views.dump(TABLES) == incremental
        one_by_one = ProjectionRunner(s, [ResearchHistoryProjection()], batch_size=1)
        one_by_one.rebuild("research")
        assert one_by_one.views.dump(TABLES) == incremental
        runner.views.close()

    with EventStore("memory://") as s:
        append_plan(Log(s), plan)
        try:
            ProjectionRunner(s, [CrashingResearch(crash)], batch_size=batch + 1).run_once()
        except Crash:
            pass
        restarted = ProjectionRunner(s, [ResearchHistoryProjection()], batch_size=batch)
        restarted.run_once()
        got = restarted.views.dump(TABLES)
        ids = [r["id"] for r in restarted.views.query("SELECT id FROM research_history ORDER BY id")]
        assert ids == list(range(1, len(ids) + 1))  # each request counted once, none skipped
        restarted.rebuild("research")
        assert restarted.views.dump(TABLES) == got
        restarted.views.close()
