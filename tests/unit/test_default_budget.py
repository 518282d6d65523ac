"""`Budget()` is finite (issue 35): a function agent that calls the model in a loop forever
stops at the default limit with a budget-exhausted error; the limit can be raised; a log
written when `Budget()` was unlimited (`budget: {}`) still reads back unlimited and replays."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from actors.runtime.budget import open_ledger, run_budget
from actors.runtime.ledger import BUDGET_EXHAUSTED, Ledger
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.shell import ActorShell
from actors.testing import assert_replays, run_agent
from events.codec import decode_event, packb
from events.runs import DEFAULT_MAX_LLM_CALLS, Budget
from events.store import EventStore
from tests.support.durable_agents import loops_forever, makes_calls


def llm_calls(run) -> int:
    return sum(1 for e in run.events if e.type_name == "LlmRequested")


def test_budget_has_a_finite_default_on_llm_calls_that_can_be_raised_or_lifted():
    assert Budget().max_llm_calls == DEFAULT_MAX_LLM_CALLS
    assert Budget(max_llm_calls=DEFAULT_MAX_LLM_CALLS * 4).max_llm_calls == DEFAULT_MAX_LLM_CALLS * 4
    assert Budget.unlimited().max_llm_calls is None


def test_an_agent_looping_on_the_model_forever_stops_at_the_default_limit():
    run = run_agent(loops_forever, "go", model=["again"])
    assert run.status == "failed"
    assert run.error is not None and run.error.type == BUDGET_EXHAUSTED
    assert f"its budget allows {DEFAULT_MAX_LLM_CALLS}" in run.error.message
    assert llm_calls(run) == DEFAULT_MAX_LLM_CALLS == run.provider.calls  # the refused call was never sent
    assert "BudgetExceeded" in [e.type_name for e in run.events]
    assert_replays(run.store, run.run_id)


def test_a_raised_limit_is_the_one_that_holds():
    run = run_agent(loops_forever, "go", model=["again"], budget=Budget(max_llm_calls=DEFAULT_MAX_LLM_CALLS + 7))
    assert run.status == "failed" and run.error.type == BUDGET_EXHAUSTED
    assert llm_calls(run) == DEFAULT_MAX_LLM_CALLS + 7


def v1_run_submitted(run_id: str, budget: dict) -> bytes:
    """RunSubmitted as it was stored at schema v1, when `Budget()` meant no limit."""
    payload = {"goal": "go", "agent": "function", "params": {}, "budget": budget, "forked_from": None}
    return packb([1, uuid.uuid4(), run_id, None, "submit", datetime.now(timezone.utc), payload])


def test_an_old_run_submitted_with_an_empty_budget_reads_back_unlimited():
    event = decode_event("RunSubmitted", "run:old", 1, v1_run_submitted("old", {}))
    assert event.budget == Budget.unlimited()
    kept = decode_event("RunSubmitted", "run:old", 1, v1_run_submitted("old", {"max_llm_calls": 3}))
    assert kept.budget == Budget(max_llm_calls=3)  # a limit it recorded stays


def test_an_old_agent_started_with_no_budget_reads_back_unlimited():
    payload = {"goal": "g", "root": ".", "tools": [], "max_iterations": 3, "model": "m"}
    data = packb([1, uuid.uuid4(), "old", None, "start", datetime.now(timezone.utc), payload])
    assert decode_event("AgentStarted", "agent:old", 1, data).budget == Budget.unlimited()


def test_a_run_recorded_unlimited_keeps_running_past_the_default_and_replays(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'old.db'}")
    run_id = "recordedold"
    store.append_encoded([(run_stream(run_id), 0, [("RunSubmitted", v1_run_submitted(run_id, {}))])])
    assert ActorShell(RunLifecycle(), run_stream(run_id), store).load().state.budget == Budget.unlimited()
    assert run_budget(store, run_id) == Budget.unlimited() and open_ledger(store, run_id) is None
    # The old meaning holds for a run served today: past the default limit, to its end.
    run = run_agent(makes_calls, str(DEFAULT_MAX_LLM_CALLS + 5), model=["again"], store=store, run_id=run_id)
    assert run.status == "completed" and llm_calls(run) == DEFAULT_MAX_LLM_CALLS + 5
    assert_replays(store, run_id)
    store.close()


def test_a_run_submitted_today_has_a_ledger_and_no_run_recorded_means_no_limit():
    run = run_agent(makes_calls, "1", model=["ok"])
    assert isinstance(open_ledger(run.store, run.run_id), Ledger)  # Budget() limits: a ledger
    assert open_ledger(EventStore("memory://"), "none") is None  # a tool's calls outside any run
