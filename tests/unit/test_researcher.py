"""The Researcher's pure core: its phases, the calls it asks for, failures, the report."""

from __future__ import annotations

import json

from actors.agent.prompt import HistoryItem
from actors.research import prompts
from actors.research.researcher import Researcher, ResearchState, StartResearch
from actors.runtime.effects import CallLlm, CallTool
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.shell import ActorShell, rebuild
from events.agent import ToolSpec
from events.store import EventStore
from tests.support import fake_research

SEARCH = ToolSpec(name="repository_search", signature="repository_search(query: str)", description="search")
INDEX_OK = {"source": "/r", "root": "/r", "collection": "repo_r", "files": 3, "chunks": 5, "files_embedded": 3,
            "files_unchanged": 0, "files_removed": 0, "chunks_embedded": 5, "skipped_binary": 1,
            "skipped_large": 1, "skipped_empty": 0, "seconds": 0.1}


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


def run(script, index=_index_ok, repo="/r", max_iterations=4):
    shell = ActorShell(Researcher(), "agent:r1", EventStore("memory://"), run_id="r1").load()
    start = StartResearch(key="start", objective="Where are payments recorded?", repo_url=repo, root="/cwd",
                          tools=[SEARCH], max_iterations=max_iterations, model="m")
    shell.handle(start)
    tools = local_invoker({"index_repository": Tool(index), "repository_search": Tool(_search)})
    drive(shell, LiveEffects(LlmGateway(ScriptedProvider(script)), tools))
    return shell


def test_phases_run_in_order_and_the_report_cites_what_the_tools_showed():
    shell = run(fake_research.researcher)
    state: ResearchState = shell.state
    types = [e.type_name for e in shell.store.read_stream("agent:r1")]
    assert types[:4] == ["ResearchRequested", "IndexingStarted", "ToolCalled", "ToolReturned"]
    assert types[4:8] == ["IndexingCompleted", "LlmRequested", "LlmCompleted", "PlanMade"]
    assert types[8] == "AgentStarted" and types[-1] == "ReportWritten"
    assert state.status == "completed" and state.root == "/r"
    assert state.plan == ["Search the code for where payments are recorded", "Read the class found"]
    assert state.answer.startswith("# Where payments are recorded")
    assert state.answer.rstrip().endswith("- `pkg/ledger.py:1-14`")
    assert state.llm_calls == 4 and state.tool_calls == 2  # plan, 2 steps, report; index, search
    # the loop's calls are numbered in the run's sequence
    requested = [e.call_index for e in shell.store.read_stream("agent:r1") if e.type_name == "LlmRequested"]
    assert requested == [1, 2, 3, 4]
    assert rebuild(Researcher(), shell.store.read_stream("agent:r1")) == state


def test_next_effects_follow_the_phase():
    r = Researcher()
    s = ResearchState(status="indexing", repo_url="/r", tool_calls=0)
    assert r.next_effect(s) == CallTool(tool="index_repository", args={"source": "/r"}, call_index=1)
    s = ResearchState(status="planning", objective="o", llm_calls=0)
    effect = r.next_effect(s)
    assert isinstance(effect, CallLlm) and effect.request.response_schema == prompts.PLAN_SCHEMA
    assert r.next_effect(ResearchState(status="completed")) is None


def test_an_indexing_failure_fails_the_research_with_a_structured_error():
    shell = run(fake_research.researcher, index=_index_fails)
    state = shell.state
    assert state.status == "failed" and state.error.type == "indexing_failed"
    assert "does not exist" in state.error.message
    assert [e.type_name for e in shell.store.read_stream("agent:r1")][-1] == "ResearchFailed"


def test_without_a_repository_it_goes_straight_to_planning():
    shell = run(fake_research.researcher, repo=None)
    types = [e.type_name for e in shell.store.read_stream("agent:r1")]
    assert types[:2] == ["ResearchRequested", "ResearchStarted"] and "IndexingStarted" not in types


def never_answers(request):
    system = request.messages[0]["content"]
    if system == prompts.PLAN_SYSTEM:
        return '{"steps": ["look"]}'
    if system == prompts.REPORT_SYSTEM:
        return "# Partial report"
    n = len([m for m in request.messages if m["role"] == "assistant"])
    return json.dumps({"thought": f"look {n}", "action": "repository_search", "args": {"query": f"q{n}"}})


def test_the_step_limit_still_ends_in_a_report():
    shell = run(never_answers, max_iterations=2)
    types = [e.type_name for e in shell.store.read_stream("agent:r1")]
    assert "AgentFailed" in types and types[-1] == "ReportWritten"
    assert shell.state.status == "completed"


def test_plan_parsing_and_sources():
    assert prompts.parse_plan({"steps": ["1. a", "Step 2: b"]}, "", "o") == ["a", "b"]
    assert prompts.parse_plan(None, "- x\n- y", "o") == ["x", "y"]
    assert prompts.parse_plan(None, "", "objective") == ["objective"]
    history = [
        HistoryItem(thought="t", action="read_file", args={}, observation="a/b.py:3: x\nc.md:1-9 y\na/b.py:3: again"),
    ]
    assert prompts.sources(history) == ["a/b.py:3", "c.md:1-9"]
    assert prompts.final_report("", []).startswith("# Research report")


def test_a_new_research_run_reads_the_definition_its_question_names_before_its_loop_asks_the_model():
    find = ToolSpec(name="find_definition", signature="find_definition(name: str)", description="definitions")
    start = Researcher.make_start(goal="Where does Ledger.record store payments?", root="/cwd", tools=[SEARCH, find])
    assert start.lookups and start.grounded
    shell = ActorShell(Researcher(), "agent:r2", EventStore("memory://"), run_id="r2").load()
    shell.handle(start.model_copy(update={"model": "m", "max_iterations": 3}))
    seen = []

    def definition(name, **_):
        seen.append(name)
        return "method Ledger.record is defined in pkg/ledger.py line 3.\npkg/ledger.py, lines 3-4 of 4:\n3: def record(self, p):\n4:     self.rows.append(p)"

    def script(request):
        if request.messages[-1]["content"].startswith("Objective:"):  # the plan
            return '{"steps": ["find_definition Ledger.record"]}'
        if not request.messages[1]["content"].startswith("Goal:"):  # the report
            return "# Report"
        assert "Looked up for you, the definition of Ledger.record" in request.messages[-1]["content"]
        return json.dumps({"thought": "Line 4.", "action": "answer",
                           "args": {"answer": "In self.rows.", "source": "pkg/ledger.py:4", "quote": "self.rows.append(p)"}})

    tools = local_invoker({"repository_search": Tool(_search), "find_definition": Tool(definition)})
    drive(shell, LiveEffects(LlmGateway(ScriptedProvider(script)), tools))
    events = shell.store.read_stream("agent:r2")
    auto = [e for e in events if e.type_name == "StepDecided" and e.auto]
    assert seen == ["Ledger.record"] and [e.args for e in auto] == [{"name": "Ledger.record"}]
    assert shell.state.status == "completed" and "self.rows.append(p)" in shell.state.agent.answer
    assert shell.state == rebuild(Researcher(), events)


def test_a_report_that_states_its_answer_opens_with_the_loops_checked_answer_or_says_none_was_found():
    grounded = "Ledger.record records payments.\n\nEvidence: pkg/ledger.py:3: def record(self, payment):"
    report = prompts.final_report("# Payments\n\nThey are recorded by the ledger.", [], answer=grounded)
    assert report.startswith("# Payments\n\n## Answer\n\nLedger.record records payments.")
    assert "Evidence: pkg/ledger.py:3: def record(self, payment):" in report
    assert report.index("## Answer") < report.index("## Report\n\nThey are recorded")  # the model's text follows
    assert prompts.final_report("no title here", [], answer="x").startswith(
        "# Research report\n\n## Answer\n\nx\n\n## Report\n\nno title here"
    )
    assert prompts.stated_answer("<answer>Not found in the code</answer>") == "Not found in the code"
    assert prompts.stated_answer(None).startswith(prompts.NO_ANSWER)  # the step limit came first
    assert prompts.stated_answer("<answer> </answer>") == prompts.NO_ANSWER


def test_a_run_stating_its_answer_carries_the_loops_answer_and_one_recorded_before_does_not():
    new = run(fake_research.researcher)
    state = new.state
    assert state.states_answer is False  # `run` builds the command itself, as runs recorded before did
    assert "## Answer" not in state.answer

    shell = ActorShell(Researcher(), "agent:r2", EventStore("memory://"), run_id="r2").load()
    start = Researcher.make_start(goal="Where are payments recorded?", root="/cwd", tools=[SEARCH], repo="/r",
                                  max_iterations=4, model="m", grounded=False)
    assert start.states_answer is False  # states its answer when grounded (a grounded loop's answer is checked)
    grounded = Researcher.make_start(goal="q", root="/cwd", tools=[SEARCH], repo="/r", grounded=True)
    assert grounded.states_answer is True
    shell.handle(start.model_copy(update={"states_answer": True}))
    tools = local_invoker({"index_repository": Tool(_index_ok), "repository_search": Tool(_search)})
    drive(shell, LiveEffects(LlmGateway(ScriptedProvider(fake_research.researcher)), tools))
    report = shell.state.answer
    assert report.startswith("# Where payments are recorded\n\n## Answer\n\n")
    assert prompts.stated_answer(shell.state.agent.answer) in report
    assert rebuild(Researcher(), shell.store.read_stream("agent:r2")) == shell.state


def test_a_grounded_research_loop_starts_with_the_agents_rule_revision_and_older_runs_with_none():
    from actors.agent.lookups import RULES
    from actors.runtime.registry import Registry

    find = Registry.tool_class("find_definition")
    tools = [SEARCH, ToolSpec(name="find_definition", signature=find.signature(), description=find.description)]
    assert Researcher.make_start(goal="q", root="/cwd", tools=tools, grounded=True).rules == RULES
    assert Researcher.make_start(goal="q", root="/cwd", tools=[SEARCH], grounded=False).rules == 0
    shell = run(fake_research.researcher)  # a command built without the field, as runs recorded before
    started = next(e for e in shell.store.read_stream("agent:r1") if e.type_name == "AgentStarted")
    assert started.rules == 0 and shell.state.agent.rules == 0
    shell = ActorShell(Researcher(), "agent:r3", EventStore("memory://"), run_id="r3").load()
    start = StartResearch(key="start", objective="Where are payments recorded?", repo_url="/r", root="/cwd",
                          tools=[SEARCH], max_iterations=4, model="m", rules=RULES)
    shell.handle(start)
    invoke = local_invoker({"index_repository": Tool(_index_ok), "repository_search": Tool(_search)})
    drive(shell, LiveEffects(LlmGateway(ScriptedProvider(fake_research.researcher)), invoke))
    started = next(e for e in shell.store.read_stream("agent:r3") if e.type_name == "AgentStarted")
    assert started.rules == RULES and rebuild(Researcher(), shell.store.read_stream("agent:r3")) == shell.state
