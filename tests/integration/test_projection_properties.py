"""Property tests of rule 3 on every backend (memory, SQLite, PostgreSQL), with hypothesis:

- for random event sequences (the real event types, appended to a real store), processed
  incrementally in random batch sizes with appends in between, a rebuild from position 0
  gives exactly the same view;
- a runner killed at a random point (an exception inside apply, mid-batch; or stopped
  between batches) and restarted (on a new store object, as a new process would) gives
  that view too: every event exactly once, no gaps.

The store of one test accumulates the examples' events (each example writes streams of
its own), so later examples also run over a longer log.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import ErrorInfo, Event
from events.store import EventStore, Recorded
from actors.agent.events import AnswerGiven, StepDecided
from events.effects import (
    LlmCompleted,
    LlmFailed,
    LlmRequested,
    ToolCalled,
    ToolReturned,
)
from events.runs import RunSubmitted
from projections import AuditProjection, ProjectionRunner, ViewCursor

KINDS = ("run", "step", "tool", "llm_ok", "llm_fail", "llm_pending", "llm_orphan", "llm_again", "answer")
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12) | st.just("nul\x00byte")

step = st.tuples(st.integers(0, 3), st.sampled_from(KINDS), TEXT)
plans = st.lists(step, min_size=1, max_size=30)

_examples = itertools.count()


class Crash(Exception):
    pass


class CrashingAudit(AuditProjection):
    """The audit projection, killed inside apply after `after` events (mid-batch)."""

    def __init__(self, after: int) -> None:
        self.left = after

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        if self.left < len(records):
            super().apply_batch(c, records[: self.left])
            raise Crash(f"killed after {self.left} more events")
        super().apply_batch(c, records)
        self.left -= len(records)


def events_for(kind: str, text: str, run: str, calls: dict[str, int], stream: str) -> list[Event]:
    def next_call() -> int:
        calls[stream] = calls.get(stream, 0) + 1
        return calls[stream]

    def req(i: int) -> LlmRequested:
        return LlmRequested(
            model="m", messages=[{"role": "user", "content": text}], params={"seed": i, "temperature": 0.5},
            request_hash=f"h{i}", call_index=i, run_id=run,
        )

    def done(i: int) -> LlmCompleted:
        return LlmCompleted(
            request_hash=f"h{i}", call_index=i, content=text, prompt_tokens=len(text), completion_tokens=i,
            latency_s=0.1, cost_usd=0.5 if i % 2 else None, run_id=run,
        )

    if kind == "run":
        return [RunSubmitted(goal=text, run_id=run)]
    if kind == "step":
        return [StepDecided(iteration=1, thought=text, action="search", args={"q": text}, run_id=run)]
    if kind == "tool":
        return [
            ToolCalled(tool="search", args={"q": text}, call_index=1, run_id=run),
            ToolReturned(tool="search", call_index=1, ok=True, output=text, run_id=run),
        ]
    if kind == "llm_ok":
        i = next_call()
        return [req(i), done(i)]
    if kind == "llm_fail":
        i = next_call()
        error = ErrorInfo(type="llm_error", reason="timeout", message=text)
        return [req(i), LlmFailed(request_hash=f"h{i}", call_index=i, error=error, run_id=run)]
    if kind == "llm_pending":
        return [req(next_call())]
    if kind == "llm_orphan":
        return [done(next_call())]
    if kind == "llm_again":  # the same call asked twice, answered once
        i = next_call()
        return [req(i), req(i), done(i)]
    return [AnswerGiven(iteration=2, thought=text, answer=f"<answer>{text}</answer>", run_id=run)]


def append_plan(store: EventStore, plan: list[tuple[int, str, str]], after_each=None) -> None:
    example = next(_examples)
    calls: dict[str, int] = {}
    versions: dict[str, int] = {}
    for i, (s, kind, text) in enumerate(plan):
        stream = f"x{example}-agent-{s}"
        events = events_for(kind, text, f"run-{example}-{s % 2}", calls, stream)
        store.append(stream, events, versions.get(stream, 0))
        versions[stream] = versions.get(stream, 0) + len(events)
        if after_each is not None:
            after_each(i)


def view(runner: ProjectionRunner) -> dict:
    return runner.views.dump(AuditProjection.tables)


def assert_exactly_once(runner: ProjectionRunner, store: EventStore) -> None:
    # Each event counted once, none left out (an event applied twice would count twice).
    [row] = runner.views.query("SELECT SUM(events) AS n, MAX(last_position) AS last FROM audit_streams")
    assert (int(row["n"] or 0), int(row["last"] or 0)) == (store.max_position(), store.max_position())


def examples(store_url: str, memory: int, durable: int):
    return settings(
        max_examples=memory if store_url == "memory://" else durable,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )


@pytest.fixture
def store(store_url):
    s = EventStore(store_url)
    yield s
    s.close()


def reopened(store: EventStore) -> EventStore:
    """What a restarted process would open (the same object for memory://)."""
    return store if store.backend == "popo" else EventStore(store.url)


def test_incremental_processing_equals_a_rebuild(store, store_url):
    @examples(store_url, memory=40, durable=8)
    @given(plan=plans, cuts=st.sets(st.integers(0, 29)), batch=st.integers(1, 7))
    def check(plan, cuts, batch):
        runner = ProjectionRunner(store, [AuditProjection()], batch_size=batch)
        append_plan(store, plan, after_each=lambda i: runner.run_once() if i in cuts else None)
        runner.run_once()
        incremental = view(runner)
        assert_exactly_once(runner, store)
        runner.rebuild("audit")
        assert view(runner) == incremental

    check()


def test_a_runner_killed_anywhere_and_restarted_gives_the_same_view(store, store_url):
    @examples(store_url, memory=40, durable=8)
    @given(
        plan=plans,
        kill=st.one_of(
            st.tuples(st.just("crash"), st.integers(0, 60)),
            st.tuples(st.just("stop"), st.integers(0, 6)),
        ),
        batches=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    )
    def check(plan, kill, batches):
        append_plan(store, plan)
        how, when = kill
        if how == "crash":
            first = ProjectionRunner(store, [CrashingAudit(after=when)], batch_size=batches[0])
            try:
                first.run_once()
            except Crash:
                pass
        else:
            ProjectionRunner(store, [AuditProjection()], batch_size=batches[0]).run_once(max_batches=when)
        again = reopened(store)
        try:
            restarted = ProjectionRunner(again, [AuditProjection()], batch_size=batches[1])
            restarted.run_once()
            assert_exactly_once(restarted, again)
            got = view(restarted)
            restarted.rebuild("audit")
            assert view(restarted) == got
        finally:
            if again is not store:
                again.close()

    check()
