"""The testing kit for your own agents: a scripted model, an in-process runner (no Ray), and
a replay assertion.

    from actors.testing import ScriptedProvider, assert_replays, run_agent

    def test_my_agent():
        run = run_agent(my_agent, "a goal", model=["first reply", "second reply"])
        assert run.status == "completed" and "second" in run.answer
        assert_replays(run.store, run.run_id)       # identical, 0 live calls

The runner records exactly what a run on Ray records (the same `run:ID` and `function:ID`
streams, on a `memory://` store unless you give one), so `chorus log`-style readers, replay
and fork work on it. A function that waits for a signal comes back with status "waiting";
`run.signal(name, payload)` delivers one and runs it on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import actors.runtime.function_agent  # noqa: F401  (registers the "function" run kind)
from actors.runtime.budget import open_ledger, run_usage
from actors.runtime.durable import (
    DEFAULT_PARAMS,
    FunctionBehaviour,
    LiveDurable,
    StartFunction,
    agent_path,
    function_stream,
    load_agent,
    run_function,
    signal_stream,
)
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.testing import ScriptedProvider
from actors.runtime.perform import LiveEffects
from actors.runtime.registry import Registry
from actors.runtime.replay import ReplayReport, replay_run
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Submit, run_stream
from actors.runtime.shell import ActorShell
from events.durable import SignalSent
from events.errors import ErrorInfo
from events.runs import Budget
from events.store import EventStore

__all__ = ["LocalRun", "ScriptedProvider", "assert_replays", "run_agent"]


@dataclass
class LocalRun:
    """A run made in this process: its id, the store holding its log, and how it stands."""

    run_id: str
    store: EventStore
    status: str
    answer: str | None
    error: ErrorInfo | None
    provider: Any
    tools: dict[str, Any]

    @property
    def events(self) -> list[Any]:
        return [r.event for r in self.store.read_all(run_id=self.run_id)]

    def signal(self, name: str, payload: Any = None) -> LocalRun:
        """Send a signal and run the function on from its log (as `Client.signal` does)."""
        stream = signal_stream(self.run_id)
        sent = SignalSent(name=name, data=payload).stamp(run_id=self.run_id)
        self.store.append(stream, [sent], self.store.stream_version(stream))
        return _serve(self.store, self.run_id, self.provider, self.tools)


def run_agent(
    function: Callable[..., Any] | str,
    goal: str,
    *,
    model: Any = ("ok",),
    store: EventStore | str = "memory://",
    run_id: str | None = None,
    llm_params: dict[str, Any] | None = None,
    budget: Budget | None = None,
    tools: dict[str, Any] | None = None,
) -> LocalRun:
    """Run an agent function to its end (or its first wait for a signal) in this process.

    `model`: a provider (`ScriptedProvider`, any object with `complete(request)`), a list of
    replies served in order, or a function of the request. `store`: an EventStore or its URL
    (a temporary `sqlite:///...` keeps the log). `tools`: name -> an object with `execute`,
    used instead of creating the registered tool."""
    provider = model if hasattr(model, "complete") else ScriptedProvider(list(model) if isinstance(model, (list, tuple)) else model)
    store = store if isinstance(store, EventStore) else EventStore(store)
    run_id = run_id or uuid.uuid4().hex[:12]
    path = agent_path(function)
    load_agent(path)
    params = dict(DEFAULT_PARAMS if llm_params is None else llm_params)
    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    lifecycle.handle(Submit(
        key="submit", goal=goal, agent="function", budget=budget or Budget(),
        params={"agent": path, "root": ".", "model": "scripted", "llm_params": params},
    ))  # fmt: skip
    shell = ActorShell(FunctionBehaviour(), function_stream(run_id), store, run_id=run_id).load()
    shell.handle(StartFunction(key="start", agent=path, goal=goal, model="scripted", params=params))
    return _serve(store, run_id, provider, dict(tools or {}))


def _serve(store: EventStore, run_id: str, provider: Any, tools: dict[str, Any]) -> LocalRun:
    shell = ActorShell(FunctionBehaviour(), function_stream(run_id), store, run_id=run_id).load()
    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    lifecycle.handle(Start(key="start", lead_stream=shell.stream_id))

    def invoke(name: str, args: dict[str, Any]) -> str:
        if name not in tools:
            tools[name] = Registry.tool_class(name)(root=shell.state.params.get("root", "."))
        return tools[name].execute(**args)

    ledger = open_ledger(store, run_id, streams=[shell.stream_id])  # the run's budget, in this process
    effects = LiveDurable(LiveEffects(LlmGateway(provider), invoke, ledger), store, run_id)
    outcome = run_function(shell, load_agent(shell.state.agent), effects, store.read_stream(shell.stream_id))
    if outcome.status == "completed":
        used = run_usage(store, run_id, [shell.stream_id])
        lifecycle.handle(Complete(key="finish", result=outcome.result or "", llm_calls=used.calls, tokens=used.tokens))
    elif outcome.status == "failed":
        lifecycle.handle(Fail(key="finish", error=outcome.error))
    status = "waiting" if outcome.status == "waiting" else lifecycle.state.status
    return LocalRun(run_id, store, status, outcome.result, outcome.error, provider, tools)


def assert_replays(store: EventStore, run_id: str) -> ReplayReport:
    """Replay the run from its log (no model, no tools) and fail with the first difference
    unless it reproduces every event; returns the report (its `llm_calls` were served)."""
    report = replay_run(store, run_id)
    assert report.ok, f"run {run_id} does not replay:\n{report.divergence.describe()}"  # type: ignore[union-attr]
    return report
