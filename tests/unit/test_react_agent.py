"""The ReAct agent's pure core driven in-process (no Ray): decisions, budgets, replay."""

from __future__ import annotations

import json

import pytest

from actors.agent.react import ReactAgent, StartAgent, next_effect
from actors.runtime.perform import LiveEffects, ReplayEffects, drive, local_invoker
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmError, LlmRequest, ReplayDivergence
from actors.runtime.shell import ActorShell, rebuild
from actors.tools.files import ReadFile, SearchFiles
from actors.agent.events import ToolSpec
from events.runs import Budget
from events.store import EventStore
from tests.support import fake_llm


def specs() -> list[ToolSpec]:
    return [
        ToolSpec(name=c.name, signature=c.signature(), description=c.description)
        for c in (SearchFiles, ReadFile)
    ]


def run_agent(tmp_path, script, *, budget=Budget(), max_iterations=10, store=None, provider=None):
    fake_llm.make_repo(tmp_path)
    store = store or EventStore("memory://")
    shell = ActorShell(ReactAgent(), "agent:t", store, run_id="t").load()
    shell.handle(
        StartAgent(
            key="start", goal="What is the marker?", root=str(tmp_path), tools=specs(),
            max_iterations=max_iterations, model="m", budget=budget,
        )
    )
    provider = provider or ScriptedProvider(script)
    tools = {"search_files": SearchFiles(root=str(tmp_path)), "read_file": ReadFile(root=str(tmp_path))}
    state = drive(shell, LiveEffects(LlmGateway(provider), local_invoker(tools)))
    return state, store.read_stream("agent:t"), store, provider


def types(events):
    return [e.type_name for e in events]


def test_search_read_answer(tmp_path):
    state, events, _, _ = run_agent(tmp_path, fake_llm.search_read_answer)
    assert state.status == "completed"
    assert state.answer == "<answer>The marker is ALPHA-7, in notes.txt.</answer>"
    assert types(events) == [
        "AgentStarted",
        "LlmRequested", "LlmCompleted", "StepDecided", "ToolCalled", "ToolReturned",
        "LlmRequested", "LlmCompleted", "StepDecided", "ToolCalled", "ToolReturned",
        "LlmRequested", "LlmCompleted", "AnswerGiven",
    ]  # fmt: skip
    search_result = events[5].output
    assert "notes.txt:2:" in search_result and "ALPHA-7" in search_result
    assert all(e.run_id == "t" for e in events)
    # each command's events name the event the decision followed from
    for before, after in zip(events, events[1:]):
        if after.command_id != before.command_id:
            assert after.causation_id == str(before.event_id)
    assert state == rebuild(ReactAgent(), events)
    # the second request shows the model what the first tool returned
    second = [e for e in events if e.type_name == "LlmRequested"][1]
    assert "ALPHA-7" in second.messages[-1]["content"]


def test_repeated_action_is_not_run_again(tmp_path):
    state, events, _, _ = run_agent(tmp_path, fake_llm.repeater)
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert [e.reason for e in rejected] == ["repeat", "repeat"]
    assert "already" in rejected[0].observation.lower()
    assert types(events).count("ToolCalled") == 1
    assert state.status == "completed"
    # two rejected steps in a row: the next request may only answer
    requests = [e for e in events if e.type_name == "LlmRequested"]
    assert requests[2].response_schema["properties"]["action"]["enum"] != ["answer"]
    assert requests[3].response_schema["properties"]["action"]["enum"] == ["answer"]
    assert "LAST step" in requests[3].messages[-1]["content"]


def test_unparseable_reply_becomes_an_observation(tmp_path):
    state, events, _, _ = run_agent(tmp_path, fake_llm.garbage_then_answer)
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert len(rejected) == 1 and rejected[0].reason == "unparseable"
    assert "JSON" in rejected[0].observation
    assert state.status == "completed"


def test_tool_error_is_fed_back(tmp_path):
    def reads_missing(request):
        if fake_llm.step_of(request) == 1:
            return '{"thought": "t", "action": "read_file", "args": {"path": "../etc/passwd"}}'
        return '{"thought": "t", "action": "answer", "args": {"answer": "no access"}}'

    state, events, _, _ = run_agent(tmp_path, reads_missing)
    returned = next(e for e in events if e.type_name == "ToolReturned")
    assert not returned.ok and returned.error.type == "tool_error"
    assert "outside" in returned.output.lower()
    assert state.status == "completed"


def test_iteration_limit_fails_with_structured_error(tmp_path):
    state, events, _, _ = run_agent(tmp_path, fake_llm.never_answers, max_iterations=3)
    assert state.status == "failed"
    assert (state.error.type, state.error.reason) == ("iteration_limit", "max_iterations")
    assert types(events).count("LlmCompleted") == 3


@pytest.mark.parametrize(
    "budget, reason",
    [
        (Budget(max_llm_calls=2), "llm_calls"),
        (Budget(max_tokens=50), "tokens"),
        (Budget(max_wall_seconds=0.3), "wall_time"),
    ],
)
def test_budgets_end_the_run_as_failed(tmp_path, budget, reason):
    state, events, _, provider = run_agent(tmp_path, fake_llm.sleepy, budget=budget)
    assert state.status == "failed"
    assert (state.error.type, state.error.reason) == ("budget_exceeded", reason)
    exceeded = [e for e in events if e.type_name == "BudgetExceeded"]
    assert len(exceeded) == 1 and exceeded[0].error == state.error
    assert events[-1].type_name == "AgentFailed"
    if reason == "llm_calls":
        assert provider.calls == 2


def test_llm_failure_fails_the_agent(tmp_path):
    class Down:
        def complete(self, request):
            raise LlmError("unreachable", "connection refused")

    state, events, _, _ = run_agent(tmp_path, None, provider=Down())
    assert types(events)[-3:] == ["LlmRequested", "LlmFailed", "AgentFailed"]
    assert (state.error.type, state.error.reason) == ("llm_error", "unreachable")


def test_replay_reproduces_the_run_without_calls(tmp_path):
    _, original, store, _ = run_agent(tmp_path, fake_llm.search_read_answer)
    replay = ActorShell(ReactAgent(), "agent:replay", store, run_id="replay").load()
    replay.handle(StartAgent(**{**_start_fields(original[0]), "key": "start"}))
    (tmp_path / "notes.txt").unlink()  # no tool side effects or file reads in a replay
    drive(replay, ReplayEffects(original), on_events=None)
    replayed = store.read_stream("agent:replay")
    assert len(replayed) == len(original)
    for a, b in zip(original, replayed, strict=True):
        assert a.type_name == b.type_name and a.payload() == b.payload()


def test_replay_fails_closed_on_a_changed_request(tmp_path):
    _, original, store, _ = run_agent(tmp_path, fake_llm.search_read_answer)
    replay = ActorShell(ReactAgent(), "agent:replay2", store, run_id="r2").load()
    fields = _start_fields(original[0])
    fields["goal"] = "A different goal"
    replay.handle(StartAgent(**fields, key="start"))
    with pytest.raises(ReplayDivergence) as err:
        drive(replay, ReplayEffects(original))
    assert "LLM call 1" in str(err.value)


def test_next_effect_asks_for_the_step_schema(tmp_path):
    _, events, _, _ = run_agent(tmp_path, fake_llm.search_read_answer)
    state = rebuild(ReactAgent(), events[:1])
    effect = next_effect(state)
    assert isinstance(effect.request, LlmRequest)
    assert effect.request.response_schema["properties"]["action"]["enum"] == [
        "search_files", "read_file", "answer",
    ]  # fmt: skip


def _start_fields(started):
    return {
        "goal": started.goal, "root": started.root, "tools": started.tools,
        "max_iterations": started.max_iterations, "model": started.model,
        "params": started.params, "budget": started.budget,
    }  # fmt: skip


def test_the_same_thought_twice_makes_the_agent_answer(tmp_path):
    def restates(request):
        n = fake_llm.step_of(request)
        if n <= 5:
            return fake_llm._step("Reading the notes.", "read_file", path="notes.txt", start_line=n, end_line=n)
        return fake_llm._step("Answer.", "answer", answer="ALPHA-7")

    state, events, _, _ = run_agent(tmp_path, restates)
    requests = [e for e in events if e.type_name == "LlmRequested"]
    enums = [r.response_schema["properties"]["action"]["enum"] for r in requests]
    assert enums[1] != ["answer"] and enums[2] == ["answer"]
    assert state.status == "completed"


def test_a_long_run_keeps_prompt_and_state_bounded(tmp_path):
    from actors.agent.prompts import MAX_CONDENSED
    from actors.agent.react import HISTORY_KEPT

    state, events, _, _ = run_agent(tmp_path, fake_llm.searches_forever, max_iterations=60)
    assert state.status == "failed" and state.error.type == "iteration_limit"
    assert len(state.history) == HISTORY_KEPT and state.steps_dropped == 59 - HISTORY_KEPT
    requests = [e for e in events if e.type_name == "LlmRequested"]
    sizes = [len(json.dumps(r.messages)) for r in requests]
    assert max(sizes[40:]) - min(sizes[40:]) < 300  # flat once the baton is full
    goal_message = requests[-1].messages[1]["content"]
    assert f"({59 - MAX_CONDENSED - 2} earlier steps not shown)" in goal_message
    assert goal_message.count("\n") < MAX_CONDENSED + 10
    assert state == rebuild(ReactAgent(), events)
