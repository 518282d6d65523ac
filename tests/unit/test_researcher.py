"""The research lead (`actors.research.lead:research`), an agent function run in this process:
its phases, failures, budget, the report, a crash mid-run, and replay (a tampered fact is caught)."""

from __future__ import annotations

import json

import pytest

from actors.agent.kind import tool_specs
from actors.agent.patches import GROUNDED_PATCHES
from actors.agent.prompts import HistoryItem
from actors.research import prompts
from actors.research.kind import LEAD
from actors.runtime.ledger import BUDGET_EXHAUSTED
from actors.runtime.function_agent import replay_function_stream
from actors.testing.runner import _serve
from actors.runtime.tool_context import ToolContext
from actors.testing import ScriptedProvider, assert_replays, run_agent
from actors.agent.events import ToolSpec
from events.runs import Budget
from events.store import EventStore
from tests.support import fake_llm, fake_research

SEARCH = ToolSpec(name="repository_search", signature="repository_search(query: str)", description="search")
INDEX_OK = {"source": "/r", "root": "/r", "collection": "repo_r", "files": 3, "chunks": 5, "files_embedded": 3,
            "files_unchanged": 0, "files_removed": 0, "chunks_embedded": 5, "skipped_binary": 1,
            "skipped_large": 1, "skipped_empty": 0, "seconds": 0.1}
GOAL = "Where are payments recorded?"


class Tool:
    def __init__(self, fn):
        self.fn = fn

    def execute(self, **kw):
        return self.fn(**kw)


def _index_ok(source):
    return json.dumps({**INDEX_OK, "source": source})


def _index_fails(source):
    raise ValueError(f"repository path {source} does not exist")


def _search(query, **_):
    return "Answer: Ledger.record records payments.\nSources:\n- pkg/ledger.py:1-14 (score 0.61)"


def options(tools=(SEARCH,), repo="/r", max_iterations=4, **kw):
    return {"repo_url": repo, "root": "/cwd", "tools": [t.model_dump(mode="json") for t in tools],
            "max_iterations": max_iterations, **kw}


def run(script, index=_index_ok, store="memory://", budget=None, tools=None, **kw):
    tools = tools or {"index_repository": Tool(index), "repository_search": Tool(_search)}
    return run_agent(LEAD, GOAL, model=script, options=options(**kw), tools=tools, store=store, budget=budget)


def types(run):
    return [e.type_name for e in run.events if e.stream_id.startswith("function:")]


def test_phases_run_in_order_and_the_report_cites_what_the_tools_showed():
    done = run(fake_research.researcher)
    assert done.status == "completed"
    assert types(done)[:5] == ["FunctionStarted", "ResearchRequested", "IndexingStarted", "ToolCalled", "ToolReturned"]
    assert types(done)[5:10] == ["IndexingCompleted", "CallRecorded", "LlmRequested", "LlmCompleted", "PlanMade"]
    assert types(done)[10] == "AgentStarted" and types(done)[-2:] == ["ReportWritten", "FunctionCompleted"]
    plan = next(e for e in done.events if e.type_name == "PlanMade")
    assert plan.steps == ["Search the code for where payments are recorded", "Read the class found"]
    assert done.answer.startswith("# Where payments are recorded")
    assert done.answer.rstrip().endswith("- `pkg/ledger.py:1-14`")
    assert types(done).count("LlmCompleted") == 4 and types(done).count("ToolReturned") == 2  # plan, 2 steps, report
    folder = next(e for e in done.events if e.type_name == "CallRecorded")
    assert (folder.call, folder.args) == ("folder", {"path": "/r"})  # the tools work in the indexed folder
    assert assert_replays(done.store, done.run_id).llm_calls == 4


def test_an_indexing_failure_fails_the_research_with_a_structured_error():
    done = run(fake_research.researcher, index=_index_fails)
    assert done.status == "failed" and done.error.type == "indexing_failed"
    assert "does not exist" in done.error.message
    assert types(done)[-2:] == ["ResearchFailed", "FunctionFailed"]
    assert_replays(done.store, done.run_id)


def test_without_a_repository_it_goes_straight_to_planning():
    done = run(fake_research.researcher, repo=None)
    assert types(done)[1:3] == ["ResearchRequested", "ResearchStarted"] and "IndexingStarted" not in types(done)
    assert "CallRecorded" not in types(done)  # the tools stay in the run's folder


def never_answers(request):
    system = request.messages[0]["content"]
    if system == prompts.PLAN_SYSTEM:
        return '{"steps": ["look"]}'
    if system == prompts.REPORT_SYSTEM:
        return "# Partial report"
    n = len([m for m in request.messages if m["role"] == "assistant"])
    return json.dumps({"thought": f"look {n}", "action": "repository_search", "args": {"query": f"q{n}"}})


def test_the_step_limit_still_ends_in_a_report():
    done = run(never_answers, max_iterations=2)
    assert "AgentFailed" in types(done) and types(done)[-2] == "ReportWritten"
    assert done.status == "completed" and done.answer.startswith("# Partial report")


def test_plan_parsing_and_sources():
    assert prompts.parse_plan({"steps": ["1. a", "Step 2: b"]}, "", "o") == ["a", "b"]
    assert prompts.parse_plan(None, "- x\n- y", "o") == ["x", "y"]
    assert prompts.parse_plan(None, "", "objective") == ["objective"]
    history = [
        HistoryItem(thought="t", action="read_file", args={}, observation="a/b.py:3: x\nc.md:1-9 y\na/b.py:3: again"),
    ]
    assert prompts.sources(history) == ["a/b.py:3", "c.md:1-9"]
    assert prompts.final_report("", []).startswith("# Research report")


def test_a_grounded_run_reads_the_definition_its_question_names_before_its_loop_asks_and_states_its_answer():
    find = ToolSpec(name="find_definition", signature="find_definition(name: str)", description="definitions")
    seen = []

    def definition(name, **_):
        seen.append(name)
        return "method Ledger.record is defined in pkg/ledger.py line 3.\npkg/ledger.py, lines 3-4 of 4:\n3: def record(self, p):\n4:     self.rows.append(p)"

    def script(request):
        if request.messages[0]["content"].startswith("You plan research"):  # the plan
            return '{"steps": ["find_definition: Ledger.record"]}'
        if not request.messages[1]["content"].startswith("Goal:"):  # the report
            return "# Report\n\nThe ledger."
        assert "Looked up for you, the definition of Ledger.record" in request.messages[-1]["content"]
        return json.dumps({"thought": "Line 4.", "action": "answer",
                           "args": {"answer": "In self.rows.", "source": "pkg/ledger.py:4", "quote": "self.rows.append(p)"}})

    tools = {"index_repository": Tool(_index_ok), "repository_search": Tool(_search), "find_definition": Tool(definition)}
    done = run_agent(LEAD, "Where does Ledger.record store payments?", model=script, tools=tools, options=options(
        tools=(SEARCH, find), max_iterations=3, grounded=True, lookups=True, states_answer=True, patches=list(GROUNDED_PATCHES)))
    auto = [e for e in done.events if e.type_name == "StepDecided" and e.auto]
    assert seen == ["Ledger.record"] and [e.args for e in auto] == [{"name": "Ledger.record"}]
    started = next(e for e in done.events if e.type_name == "AgentStarted")
    assert started.patches == [*GROUNDED_PATCHES, "definition_checks"] and started.grounded  # a loop with lookups has it
    assert done.answer.startswith("# Report\n\n## Answer\n\n") and "self.rows.append(p)" in done.answer
    assert_replays(done.store, done.run_id)


def test_the_plan_and_the_report_draw_on_the_run_budget_and_a_refusal_replays(tmp_path):
    from tests.unit.test_ledger import ThinkingTool  # a tool that makes a model call of its own

    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    fake = ScriptedProvider(lambda r: fake_llm._step("Search.", "search_files", query="payments")
                            if "Step" in str(r.messages[-1]["content"]) else fake_research.researcher(r))
    holder = {}

    class Thinking:
        def execute(self, **kw):
            if "tool" not in holder:
                from actors.runtime.budget import open_ledger

                context = ToolContext(run_id=holder["run"], tool="search_files", store_url=store.url,
                                      provider=ScriptedProvider(["x"]), ledger=open_ledger(store, holder["run"]))
                holder["tool"] = ThinkingTool(context)
            return holder["tool"].execute(**kw)

    holder["run"] = "r"
    spec = tool_specs(["search_files"])
    done = run_agent(LEAD, GOAL, model=fake, store=store, run_id="r", budget=Budget(max_llm_calls=2),
                     tools={"search_files": Thinking()}, options=options(tools=spec, repo=None))
    # The plan (1) and the first step (2) spend it: the tool's own call and the next step are refused.
    assert done.status == "failed" and done.error.type == BUDGET_EXHAUSTED
    assert types(done)[-4:] == ["BudgetExceeded", "AgentFailed", "ResearchFailed", "FunctionFailed"]
    assert sum(e.type_name == "LlmRequested" for e in done.events) == 2
    assert_replays(store, "r")


class Killed(BaseException):
    """The process dies here (not an error the function could catch)."""


def test_a_run_killed_mid_loop_resumes_without_repeating_a_completed_call(tmp_path):
    calls = []

    def dies_at_the_third(request):
        calls.append(request)
        if len(calls) == 3:
            raise Killed()
        return fake_research.researcher(request)

    store = EventStore(f"sqlite:///{tmp_path / 'k.db'}")
    with pytest.raises(Killed):
        run(dies_at_the_third, store=store)
    run_id = next(r.event.run_id for r in store.read_all())
    before = len(calls)
    resumed = _serve(store, run_id, ScriptedProvider(lambda r: (calls.append(r), fake_research.researcher(r))[1]),
                     {"index_repository": Tool(_index_ok), "repository_search": Tool(_search)}, None)
    assert resumed.status == "completed"
    assert len(calls) - before == 2  # the third call (cut off) and the report; the plan and step 1 came from the log
    assert_replays(store, run_id)


def test_a_tampered_fact_in_the_log_is_a_divergence_in_replay():
    done = run(fake_research.researcher)
    stream = f"function:{done.run_id}"
    original = [e for e in done.events if e.stream_id == stream]
    tampered = [e.model_copy(update={"steps": ["something else"]}) if e.type_name == "PlanMade" else e for e in original]
    replayed, divergence = replay_function_stream(stream, tampered, done.run_id)
    assert divergence is not None and "PlanMade" in divergence.describe()
    assert replay_function_stream(stream, original, done.run_id)[1] is None
