"""A tool that takes no arguments (patch argless_tools, actors/agent/patches.py): new runs call
it with empty args; a run recorded without the patch replays its refusal as it ran."""

from __future__ import annotations

import json
from pathlib import Path

from actors.agent.events import ToolSpec
from actors.agent.parsing import argless_tools
from actors.agent.react import ReactAgent, StartAgent
from actors.runtime.function_tool import make_tool_class
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects, ReplayEffects, drive, local_invoker
from actors.runtime.shell import ActorShell
from actors.testing.model import ScriptedProvider
from events.store import EventStore


def current_time() -> str:
    """The time now."""
    return "12:34"


def word_count(text: str) -> int:
    """How many words the text has."""
    return len(text.split())


TOOLS = (make_tool_class(current_time), make_tool_class(word_count))
SPECS = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in TOOLS]
SCRIPT = [
    json.dumps({"thought": "ask the clock", "action": "current_time", "args": {}}),
    json.dumps({"thought": "done", "action": "answer", "args": {"answer": "It is 12:34."}}),
]


def run(tmp_path: Path, patches: list[str]):
    store = EventStore("memory://")
    shell = ActorShell(ReactAgent(), "agent:t", store, run_id="t").load()
    shell.handle(StartAgent(key="start", goal="What time is it?", root=str(tmp_path), tools=SPECS, max_iterations=3, model="m", patches=patches))
    tools = {c.name: c(root=str(tmp_path)) for c in TOOLS}
    state = drive(shell, LiveEffects(LlmGateway(ScriptedProvider(SCRIPT)), local_invoker(tools)))
    return state, store.read_stream("agent:t")


def test_the_tools_that_take_no_arguments_are_the_ones_whose_signature_is_empty() -> None:
    assert [s.signature for s in SPECS] == ["current_time()", "word_count(text: str)"]
    assert argless_tools(SPECS) == {"current_time"}


def test_a_new_run_calls_a_tool_with_no_arguments_and_answers_from_it(tmp_path: Path) -> None:
    start = ReactAgent.make_start(goal="What time is it?", root=str(tmp_path), tools=SPECS)
    assert "argless_tools" in start.patches
    state, events = run(tmp_path, start.patches)
    assert state.status == "completed" and "It is 12:34." in (state.answer or "")
    called = [e for e in events if e.type_name == "ToolReturned"]
    assert [(e.tool, e.ok, e.output) for e in called] == [("current_time", True, "12:34")]
    assert not [e for e in events if e.type_name == "StepRejected"]


def test_a_run_recorded_without_the_patch_refused_the_call_and_replays_so(tmp_path: Path) -> None:
    state, events = run(tmp_path, ["files_prompt"])
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert rejected and "current_time needs its arguments" in rejected[0].observation
    assert not [e for e in events if e.type_name == "ToolCalled"]
    replay_store = EventStore("memory://")
    shell = ActorShell(ReactAgent(), "agent:t", replay_store, run_id="t").load()
    shell.handle(ReactAgent().start_command(events[0]))
    drive(shell, ReplayEffects(events))
    assert [e.type_name for e in replay_store.read_stream("agent:t")] == [e.type_name for e in events]


def test_empty_args_for_a_tool_that_takes_arguments_are_still_refused_with_the_patch(tmp_path: Path) -> None:
    """The patch opens empty args to `name()` tools only: a model sending `{}` to word_count
    (or an unknown tool) is told what is missing, and nothing runs."""
    script = [
        json.dumps({"thought": "count", "action": "word_count", "args": {}}),
        json.dumps({"thought": "who", "action": "rm_rf", "args": {}}),
        json.dumps({"thought": "done", "action": "answer", "args": {"answer": "Not found"}}),
    ]
    store = EventStore("memory://")
    shell = ActorShell(ReactAgent(), "agent:h", store, run_id="h").load()
    start = ReactAgent.make_start(goal="Count the words", root=str(tmp_path), tools=SPECS)
    shell.handle(start.model_copy(update={"max_iterations": 3}))
    tools = {c.name: c(root=str(tmp_path)) for c in TOOLS}
    drive(shell, LiveEffects(LlmGateway(ScriptedProvider(script)), local_invoker(tools)))
    events = store.read_stream("agent:h")
    rejected = [e.observation for e in events if e.type_name == "StepRejected"]
    assert len(rejected) == 2 and "word_count needs its arguments" in rejected[0]
    assert not [e for e in events if e.type_name == "ToolCalled"]
