"""What the local model (Qwen2.5-Coder-1.5B on llama.cpp) did in longer runs, asserted on
their recorded logs with no model and no network (issue 38): the end-to-end tests in
tests/e2e/ keep one short live call per workload, and the properties that need several
calls (cycles, retries, escalations, tool steps, refused answers) are checked here on the
fixtures tests/fixtures/runs/local_model_*.jsonl, each also replayed with today's code.

Every fixture here was recorded from a real run on the local model; re-record one with
`chorus export RUN_ID --out tests/fixtures/runs/NAME.jsonl` (and seal it) only when it lacks
what an assertion needs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from actors.agent.policy import unwrap_answer
from actors.codeqa.answer import relied_on
from actors.codeqa.orchestrator import TOOLS as CODEQA_TOOLS
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import builder_stream, scheduler_stream, verifier_stream
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.workspace_files import workspace_snapshot
from actors.runtime.replay import load_fixture, replay_run
from actors.runtime.shell import ActorShell
from actors.simulation import invariants
from actors.simulation.session import Canonical
from events.effects import LlmCompleted, LlmFailed
from actors.relay.events import BatonPassed, EscalationRaised, TurnVerified, WorkspaceChanged
from actors.simulation.events import CycleCommitted, SynthCognized
from actors.research.history import ResearchHistory

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"


@pytest.fixture
def recorded(request):
    """(store, run id, events) of the fixture named by the test's parameter, after checking
    it replays identically with as many calls as it recorded, all served from the log."""
    store, run_id = load_fixture(RUNS / f"local_model_{request.param}.jsonl")
    with store:
        events = [r.event for r in store.read_all(run_id=run_id)]
        report = replay_run(store, run_id)
        assert report.ok, report.divergence and report.divergence.describe()
        assert report.llm_calls == len([e for e in events if isinstance(e, (LlmCompleted, LlmFailed))]) > 0
        assert all(e.run_id == run_id for e in events)
        yield store, run_id, events


def result_of(events) -> str:
    [done] = [e for e in events if e.type_name == "RunCompleted"]
    return done.result


def answer_of(events) -> str:
    return unwrap_answer(result_of(events))


def shown(events) -> str:
    """Everything the tools showed the model."""
    return "\n".join(e.output for e in events if e.type_name == "ToolReturned")


@pytest.mark.parametrize("recorded", ["simulation_lighthouse"], indirect=True)
def test_three_cycles_of_the_lighthouse_each_ask_every_synth_once(recorded):
    store, run_id, events = recorded
    canonical = Canonical.load(store, run_id)
    cycles = [e for e in events if isinstance(e, CycleCommitted)]
    cognized = [e for e in events if isinstance(e, SynthCognized)]
    assert [c.cycle for c in cycles] == [1, 2, 3] and len(canonical.synths) == 3
    # three synths, three cycles, one microcycle each: every synth once a cycle
    assert Counter((e.cycle, e.stream_id) for e in cognized) == {(c, s): 1 for c in (1, 2, 3) for s in {e.stream_id for e in cognized}}
    assert len(cognized) == 9
    valid = [e for e in cognized if e.response is not None]
    assert len(valid) >= 6, [e.error for e in cognized]  # the model mostly answers from its menu
    assert all((e.response is None) == (e.error is not None) for e in cognized)
    assert all(st.llm_calls >= 3 for st in canonical.synths.values())
    for cycle in cycles:  # each cycle names the calls its synths' cognitions used
        used = {e.stream_id.rsplit(":", 1)[-1]: e.call_index for e in cognized if e.cycle == cycle.cycle}
        assert {synth: calls[-1] for synth, calls in cycle.llm_calls.items()} == used
    assert invariants.check_all(canonical.world) == []  # the committed world is a consistent one


@pytest.mark.parametrize("recorded", ["relay_two_items"], indirect=True)
def test_a_two_item_relay_retries_escalates_and_its_tree_is_its_log(recorded, tmp_path):
    store, run_id, events = recorded
    state = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store).load().state
    builder_calls = [e for e in store.read_stream(builder_stream(run_id)) if isinstance(e, LlmCompleted)]
    checks = [e for e in store.read_stream(verifier_stream(run_id)) if e.type_name == "ToolReturned"]
    assert state.status == "done" and state.passed + state.escalated == 2
    batons = [e for e in events if isinstance(e, BatonPassed)]
    verdicts = [e for e in events if isinstance(e, TurnVerified)]
    assert 2 <= len(batons) <= 4 and len(verdicts) == len(batons) == len(builder_calls)
    assert len(checks) >= 2 * len(verdicts)  # ruff and pytest ran on every turn
    # the model wrote the module the roadmap names (a reply with no file edits changes nothing)
    changes = [c for e in events if isinstance(e, WorkspaceChanged) for c in e.changes]
    assert any("def slugify" in (c["content"] or "") for c in changes)
    # an item the verifier never passed is escalated to a human, with the run going on
    escalations = [e for e in events if isinstance(e, EscalationRaised)]
    assert len(escalations) == state.escalated and state.item_status.count("passed") == state.passed
    assert all(v.status == "PASSED" for v in verdicts) == (state.escalated == 0)
    # the workspace is the fold of its log: the recorded changes, applied to a git working tree
    ws = GitWorkspace(tmp_path / "ws").init()
    ws.apply(changes)
    assert workspace_snapshot(tmp_path / "ws") == state.files


@pytest.mark.parametrize("recorded", ["research"], indirect=True)
def test_research_plans_with_the_model_steps_through_tools_and_reports_its_sources(recorded):
    store, run_id, events = recorded
    types = [e.type_name for e in events]
    assert types.count("PlanMade") == 1 and types.count("ReportWritten") == 1
    plan = next(e for e in events if e.type_name == "PlanMade")
    objective = next(e for e in events if e.type_name == "ResearchRequested").objective
    assert plan.steps != [objective]  # the model's own plan, not the fallback of the objective itself
    assert all(not s[:1].isdigit() for s in plan.steps)  # the model numbers its steps; we strip it
    assert "ToolCalled" in types[types.index("AgentStarted") :]  # the agent used its tools
    completions = [e for e in events if isinstance(e, LlmCompleted)]
    assert len(completions) >= 3 and all(e.completion_tokens > 0 for e in completions)
    report = next(e for e in events if e.type_name == "ReportWritten").final_report
    row = ResearchHistory.open(store).get(run_id)
    assert row.status == "COMPLETED" and row.final_report == report == result_of(events) and len(report) > 80
    # the report lists the files the tools showed it
    assert "pkg/ledger.py:" in shown(events) and "pkg/ledger.py" in report.split("## Sources")[-1]


@pytest.mark.parametrize("recorded", ["grounded_base_class_question"], indirect=True)
def test_refused_answers_lead_to_the_definitions_then_to_a_quoted_right_answer(recorded):
    _, _, events = recorded
    started = next(e for e in events if e.type_name == "AgentStarted")
    assert started.grounded and "find_definition" in [t.name for t in started.tools]
    refused = [e for e in events if e.type_name == "StepRejected" and e.reason == "answer_refused"]
    assert len(refused) >= 2  # the model's unconfirmed answers were not given
    # after each refused answer, the verify step reads a definition the question names
    after = [events[events.index(r) + 1] for r in refused]
    assert all(e.type_name == "StepDecided" and e.action == "find_definition" for e in after), after
    answer = answer_of(events)
    assert "DispatchError" in answer  # the right answer, not a confident wrong one
    _, evidence = answer.split("\n\nEvidence: ")
    assert evidence.startswith("shipping/errors.py:12: ")
    assert evidence.split(": ", 1)[1] in shown(events)  # the line the agent checked, as a tool showed it


@pytest.mark.parametrize(
    ("recorded", "source"),
    [("codeqa_cipher_question", "eventsourcing/cipher.py"), ("sqlite_recorder_question", "sqlite.py"),
     ("projection_thread_question", "projection.py")],
    indirect=["recorded"],
)  # fmt: skip
def test_an_agent_answers_from_what_its_tools_showed(recorded, source):
    _, _, events = recorded
    started = next(e for e in events if e.type_name == "AgentStarted")
    called = [e.tool for e in events if e.type_name == "ToolReturned"]
    assert called and set(called) <= {t.name for t in started.tools}
    completions = [e for e in events if isinstance(e, LlmCompleted)]
    assert len(completions) == len(called) + 1 and all(e.completion_tokens > 0 for e in completions)
    answer = answer_of(events)
    assert source in answer and source in shown(events)


@pytest.mark.parametrize("recorded", ["codeqa_cipher_question"], indirect=True)
def test_a_code_answer_names_the_lines_it_relied_on(recorded):
    _, _, events = recorded
    started = next(e for e in events if e.type_name == "AgentStarted")
    assert {t.name for t in started.tools} <= set(CODEQA_TOOLS)  # the tools of its day (find_definition came later)
    sources = relied_on(events, answer_of(events))
    assert [s.line() for s in sources if "cipher.py" in s.line()], [s.line() for s in sources]


@pytest.mark.parametrize("recorded", ["task_director_evaluator"], indirect=True)
def test_the_director_drafts_and_the_evaluator_accepts_in_one_round(recorded):
    _, _, events = recorded
    returned = [e for e in events if e.type_name == "TaskReturned"]
    assert [(e.task, e.status) for e in returned] == [("director", "COMPLETE"), ("evaluator", "COMPLETE")]
    finished = next(e for e in events if e.type_name == "WorkflowFinished")
    assert finished.status == "COMPLETE" and finished.content["draft"] == returned[0].content
    assert finished.content["rounds"] == 1 and returned[1].content["accepted"] is True
