"""The run-wide budget ledger, in-process (no Ray): reservations, refusals, the count rebuilt
from the log, tool streams that serve a re-run what they recorded, and every workload's calls
(the agent's, the tools' own, a task workflow's; the researcher's in test_researcher.py) drawn on
one budget and counted from the log."""

from __future__ import annotations

import threading

import pytest

from actors.agent.replay import replay_agent_stream
from actors.agent.react import ReactAgent, StartAgent
from actors.runtime.budget import ledger_from_log, open_ledger, run_usage
from actors.runtime.ledger import (
    BUDGET_EXHAUSTED,
    BudgetExhausted,
    Ledger,
    Usage,
    estimate_tokens,
    usage_of,
)
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.replay import replay_run
from actors.runtime.run import RunLifecycle, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.runtime.tool_context import ToolContext
from actors.tasks.runner import prepare, serve, submit
from actors.tasks.workflow import task_stream
from actors.agent.events import ToolSpec
from events.effects import LlmCompleted, LlmRequested
from events.runs import Budget
from events.store import EventStore
from tests.support import fake_llm, fake_research
from tests.support.task_scripts import EXAMPLE, director_evaluator_script


def ask(text: str, max_tokens: int | None = None) -> LlmRequest:
    params = {"max_tokens": max_tokens} if max_tokens else {}
    return LlmRequest(model="m", messages=[{"role": "user", "content": text}], params=params)


def requests_in(store: EventStore, run_id: str) -> int:
    """LLM calls the log holds for the run, every stream of it."""
    return sum(isinstance(r.event, LlmRequested) for r in store.read_all(run_id=run_id))


def begin(store: EventStore, run_id: str, budget: Budget) -> None:
    ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load().handle(
        Submit(key="submit", goal="g", budget=budget)
    )


# -- the ledger itself (pure) -----------------------------------------------------------------


def test_a_call_over_the_call_limit_is_refused_naming_the_limit():
    ledger = Ledger(Budget(max_llm_calls=2))
    for _ in range(2):
        ledger.settle(ledger.reserve(), Usage(1, 10))
    with pytest.raises(BudgetExhausted) as refused:
        ledger.reserve()
    error = refused.value.error
    assert (error.type, error.reason, error.details["allowed"]) == (BUDGET_EXHAUSTED, "llm_calls", 2)
    assert isinstance(refused.value, LlmError)  # a tool that degrades on a failed call degrades on this too
    assert ledger.spent() == Usage(2, 20)


def test_calls_in_flight_hold_their_place_and_a_call_never_sent_gives_it_back():
    ledger = Ledger(Budget(max_llm_calls=2))
    a, _b = ledger.reserve(), ledger.reserve()
    with pytest.raises(BudgetExhausted):
        ledger.reserve()  # two in flight: the budget is taken until they settle
    ledger.settle(a, Usage())  # never sent (it raised before the model was called)
    ledger.reserve()
    assert ledger.spent() == Usage(0, 0)


def test_a_call_whose_estimate_would_pass_the_token_limit_is_refused_before_it_is_sent():
    request = ask("x" * 400, max_tokens=100)  # ~100 prompt tokens + a cap of 100
    assert estimate_tokens(request) == 200
    ledger = Ledger(Budget(max_tokens=250))
    hold = ledger.reserve(estimate_tokens(request))
    with pytest.raises(BudgetExhausted) as refused:
        ledger.reserve(estimate_tokens(request))  # 200 held + 200 > 250
    assert refused.value.error.reason == "tokens"
    ledger.settle(hold, Usage(1, 120))
    with pytest.raises(BudgetExhausted):
        ledger.reserve(estimate_tokens(request))  # 120 spent + 200 > 250
    assert ledger.reserve(100) == 100  # a smaller call still fits


def test_parallel_reservations_never_overshoot_the_budget():
    ledger = Ledger(Budget(max_llm_calls=5))
    granted, refused = [], []
    barrier = threading.Barrier(20)

    def worker():
        barrier.wait()
        try:
            granted.append(ledger.reserve())
        except BudgetExhausted:
            refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(granted), len(refused)) == (5, 15)


def test_usage_is_counted_as_the_audit_view_counts_it():
    req = LlmRequested(model="m", messages=[], request_hash="h", call_index=1).stamp(run_id="r")
    done = LlmCompleted(request_hash="h", call_index=1, content="", prompt_tokens=3, completion_tokens=4).stamp(run_id="r")
    orphan = LlmCompleted(request_hash="x", call_index=9, content="", prompt_tokens=1).stamp(run_id="r")
    assert usage_of([req, done, orphan]) == Usage(2, 8)  # a result with no request is a call too


def test_the_ledger_rebuilt_from_the_log_continues_the_count(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    begin(store, "r", Budget(max_llm_calls=3))
    first = ToolContext(run_id="r", tool="t", store_url=store.url, provider=ScriptedProvider(["a"]),
                        ledger=ledger_from_log(store, "r"))
    first.complete(ask("one"))
    first.complete(ask("two"))
    # A crash: the ledger is gone; the next one starts from what the log holds.
    ledger = open_ledger(store, "r")
    assert isinstance(ledger, Ledger) and ledger.spent() == run_usage(store, "r")
    assert ledger.spent().calls == 2
    ledger.reserve()
    with pytest.raises(BudgetExhausted):
        ledger.reserve()
    assert open_ledger(EventStore("memory://"), "none") is None  # no budget: nothing to draw on


# -- tools: keyed streams, and the budget inside them ---------------------------------------------


def test_a_tool_rerun_after_a_crash_is_served_what_its_previous_life_recorded(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    live = ScriptedProvider(lambda r: f"answer to {r.messages[-1]['content']}")
    first = ToolContext(run_id="r", tool="semantic_file_search", store_url=url, provider=live)
    before = [first.complete(ask("hyde")).content, first.complete_many([ask("map 1"), ask("map 2"), ask("hyde")])]
    assert live.calls == 4
    # The tool actor dies and the agent runs the same tool call again, in a new life.
    again = ScriptedProvider(lambda r: "a different answer")
    second = ToolContext(run_id="r", tool="semantic_file_search", store_url=url, provider=again)
    after = [second.complete(ask("hyde")).content, second.complete_many([ask("map 1"), ask("map 2"), ask("hyde")])]
    assert again.calls == 0 and [after[0], [r.content for r in after[1]]] == [before[0], [r.content for r in before[1]]]
    assert second.complete(ask("something new")).content == "a different answer"  # past the log: live
    assert again.calls == 1
    store = EventStore(url)
    assert requests_in(store, "r") == 5 and store.stream_version("tool:semantic_file_search:r") == 10


def test_a_tools_parallel_calls_are_reserved_before_any_is_sent(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    begin(store, "r", Budget(max_llm_calls=3))
    provider = ScriptedProvider(["note"])
    context = ToolContext(run_id="r", tool="repository_search", store_url=store.url, provider=provider,
                          ledger=open_ledger(store, "r"))
    results = context.complete_many([ask(f"map {i}") for i in range(6)])
    assert [isinstance(r, LlmResult) for r in results] == [True] * 3 + [False] * 3
    assert all(isinstance(r, BudgetExhausted) for r in results[3:])
    assert provider.calls == 3 and requests_in(store, "r") == 3
    with pytest.raises(BudgetExhausted):
        context.complete(ask("reduce"))


def test_tools_sharing_a_ledger_cannot_overshoot_together(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    begin(store, "r", Budget(max_llm_calls=7))
    ledger = open_ledger(store, "r")
    providers = [ScriptedProvider(["x"]) for _ in range(4)]
    contexts = [ToolContext(run_id="r", tool=f"t{i}", store_url=store.url, provider=p, ledger=ledger)
                for i, p in enumerate(providers)]
    threads = [threading.Thread(target=c.complete_many, args=([ask(f"q{i}") for i in range(5)],)) for c in contexts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(p.calls for p in providers) == 7 and requests_in(store, "r") == 7


# -- every workload, in-process --------------------------------------------------------------------


class ThinkingTool:
    """A tool that calls the model itself, twice per use (as semantic_file_search does)."""

    uses_context = True

    def __init__(self, context):
        self.context = context

    def execute(self, **args):
        hyde = self.context.complete(ask(f"hyde {args}")).content
        return self.context.complete(ask(f"keywords {hyde}")).content


SEARCH = ToolSpec(name="search_files", signature="search_files(query: str)", description="search")


def run_react(store, run_id, budget, agent_budget=Budget()):
    begin(store, run_id, budget)
    ledger = open_ledger(store, run_id)
    provider = ScriptedProvider(fake_llm.never_answers)
    tool = ThinkingTool(ToolContext(run_id=run_id, tool="search_files", store_url=store.url, provider=provider, ledger=ledger))
    shell = ActorShell(ReactAgent(), f"agent:{run_id}", store, run_id=run_id).load()
    shell.handle(StartAgent(key="start", goal="find it", root=".", tools=[SEARCH], max_iterations=20, model="m",
                            budget=agent_budget))
    fake = ScriptedProvider(lambda r: fake_llm._step("Search.", "search_files", query=f"q{fake_llm.step_of(r)}"))
    drive(shell, LiveEffects(LlmGateway(fake), local_invoker({"search_files": tool}), ledger))
    return shell


def test_a_react_runs_budget_counts_the_calls_its_tools_make(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    shell = run_react(store, "r", Budget(max_llm_calls=5))
    state = shell.state
    assert state.status == "failed" and (state.error.type, state.error.reason) == (BUDGET_EXHAUSTED, "llm_calls")
    # step 1, its tool's 2 calls, step 2, its tool's first call: 5; the tool's 6th is refused, then the agent's.
    assert requests_in(store, "r") == 5 and state.llm_calls == 2
    types = [e.type_name for e in store.read_stream("agent:r")]
    assert types[-2:] == ["BudgetExceeded", "AgentFailed"]
    returned = [e for e in store.read_stream("agent:r") if e.type_name == "ToolReturned"]
    assert not returned[-1].ok and BUDGET_EXHAUSTED in returned[-1].output
    # A refusal replays: the recorded stop is served where the call was refused.
    original = store.read_stream("agent:r")
    replayed, divergence = replay_agent_stream(ReactAgent(), "agent:r", original, "r")
    assert divergence is None and len(replayed) == len(original)


def test_a_task_workflow_makes_at_most_its_budget_of_calls_and_replays(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    start = prepare(EXAMPLE.read_text(), params={"goal": "a haiku"}, workspace=".")
    submit(store, "w", start, budget=Budget(max_llm_calls=3))
    provider = ScriptedProvider(director_evaluator_script(3))  # would take 6 calls
    result = serve(store, "w", start, provider)
    assert result.status == "FAILED" and result.error.type == BUDGET_EXHAUSTED
    assert provider.calls == 3 and requests_in(store, "w") == 3
    assert "BudgetExceeded" in [e.type_name for e in store.read_stream(task_stream("w"))]
    report = replay_run(store, "w")
    assert report.ok, report.divergence and report.divergence.describe()
    assert store.read_stream(run_stream("w"))[-1].type_name == "RunFailed"


def test_a_completed_runs_totals_are_its_logs(tmp_path):
    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    start = prepare(EXAMPLE.read_text(), params={"goal": "a haiku"}, workspace=".")
    submit(store, "w", start)
    serve(store, "w", start, ScriptedProvider(director_evaluator_script(2)))
    completed = store.read_stream(run_stream("w"))[-1]
    assert completed.type_name == "RunCompleted"
    assert (completed.llm_calls, completed.tokens) == (run_usage(store, "w").calls, run_usage(store, "w").tokens)
    assert completed.llm_calls == 4 and completed.tokens > 0
