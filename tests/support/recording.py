"""Runs recorded the way the runtime records them, in-process (no Ray), for fast tests."""

from __future__ import annotations

from actors.agent.react import ReactAgent, StartAgent
from actors.agent.actor import agent_stream
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.tools.files import ReadFile, SearchFiles
from actors.agent.events import ToolSpec
from events.runs import Budget
from events.store import EventStore
from tests.support import fake_llm


def record_run(store: EventStore, root, script=fake_llm.search_read_answer, run_id: str = "abc123",
               budget: Budget = Budget(), goal: str = "What is the marker?") -> str:  # fmt: skip
    fake_llm.make_repo(root)
    run = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    run.handle(Submit(key="submit", goal=goal, budget=budget))
    agent = ActorShell(ReactAgent(), agent_stream(run_id), store, run_id=run_id).load()
    tools = {"search_files": SearchFiles(root=str(root)), "read_file": ReadFile(root=str(root))}
    specs = [ToolSpec(name=n, signature=t.signature(), description=t.description) for n, t in tools.items()]
    agent.handle(
        StartAgent(key="start", goal=goal, root=str(root), tools=specs, model="m", budget=budget),
        causation_id=run.last_event_id,
    )
    run.handle(Start(key="start", lead_stream=agent.stream_id), causation_id=agent.last_event_id)
    state = drive(agent, LiveEffects(LlmGateway(ScriptedProvider(script)), local_invoker(tools)))
    if state.status == "completed":
        run.handle(Complete(key="finish", result=state.answer), causation_id=agent.last_event_id)
    else:
        run.handle(Fail(key="finish", error=state.error), causation_id=agent.last_event_id)
    return run_id
