"""The in-process runner: an agent function run to its end (or its next wait) without Ray,
recording exactly what a run on Ray records, and the replay assertion."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from actors.runtime.budget import open_ledger
from actors.runtime.durable import (
    DEFAULT_PARAMS,
    FunctionBehaviour,
    LiveDurable,
    StartFunction,
    agent_path,
    function_stream,
    load_agent,
    signal_stream,
)
from actors.runtime.function_agent import (
    begin_serving,
    record_outcome,
    run_until_settled,
)
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects
from actors.runtime.registry import Registry
from actors.runtime.replay import ReplayReport, replay_run
from actors.runtime.run import RunLifecycle, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.testing.model import ScriptedProvider
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
    clock: Callable[[], datetime] | None = None
    waiting_for: str | None = None
    wake_at: datetime | None = None  # waiting on a durable timer: when it is due

    @property
    def events(self) -> list[Any]:
        return [r.event for r in self.store.read_all(run_id=self.run_id)]

    def signal(self, name: str, payload: Any = None) -> LocalRun:
        """Send a signal and run the function on from its log (as `Client.signal` does)."""
        stream = signal_stream(self.run_id)
        sent = SignalSent(name=name, data=payload).stamp(run_id=self.run_id)
        self.store.append(stream, [sent], self.store.stream_version(stream))
        return self.resume()

    def resume(self) -> LocalRun:
        """Serve the run again (as the timer actor does when a durable timer is due, or
        `chorus resume`): the function re-runs from its log."""
        return _serve(self.store, self.run_id, self.provider, self.tools, self.clock)


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
    clock: Callable[[], datetime] | None = None,
    root: str = ".",
    options: dict[str, Any] | None = None,
) -> LocalRun:
    """Run an agent function to its end (or its first wait for a signal) in this process.

    `model`: a provider (`ScriptedProvider`, any object with `complete(request)`), a list of
    replies served in order, or a function of the request. `store`: an EventStore or its URL
    (a temporary `sqlite:///...` keeps the log). `tools`: name -> an object with `execute`,
    used instead of creating the registered tool. `clock`: what "now" is (a function
    returning an aware datetime), so a test can pass a durable timer's time at once:
    a long `ctx.sleep` comes back "waiting" with `wake_at`; move the clock on and `resume()`.
    `root`: the folder the run's tools work in; `options`: the function's keyword arguments."""
    provider = model if hasattr(model, "complete") else ScriptedProvider(list(model) if isinstance(model, (list, tuple)) else model)
    store = store if isinstance(store, EventStore) else EventStore(store)
    run_id = run_id or uuid.uuid4().hex[:12]
    path = agent_path(function)
    load_agent(path)
    params = dict(DEFAULT_PARAMS if llm_params is None else llm_params)
    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    lifecycle.handle(Submit(
        key="submit", goal=goal, kind="function", budget=budget or Budget(),
        params={"agent": path, "root": root, "model": "scripted", "llm_params": params},
    ))  # fmt: skip
    shell = ActorShell(FunctionBehaviour(), function_stream(run_id), store, run_id=run_id).load()
    shell.handle(StartFunction(key="start", agent=path, goal=goal, model="scripted", params=params, root=root, options=options or {}))
    return _serve(store, run_id, provider, dict(tools or {}), clock)


def _serve(
    store: EventStore, run_id: str, provider: Any, tools: dict[str, Any], clock: Callable[[], datetime] | None
) -> LocalRun:
    shell = ActorShell(FunctionBehaviour(), function_stream(run_id), store, run_id=run_id).load()
    lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    begin_serving(lifecycle, shell)

    def invoke(name: str, args: dict[str, Any]) -> str:
        if name not in tools:
            tools[name] = Registry.tool_class(name)(root=shell.state.root)
        return tools[name].execute(**args)

    ledger = open_ledger(store, run_id)  # the run's budget, in this process (its tools' calls too)
    effects = LiveDurable(LiveEffects(LlmGateway(provider), invoke, ledger), store, run_id, clock)
    outcome = run_until_settled(shell, load_agent(shell.state.agent), effects)
    record_outcome(lifecycle, shell, outcome)
    state = lifecycle.state
    return LocalRun(
        run_id, store, state.status, outcome.result, outcome.error, provider, tools, clock,
        waiting_for=state.waiting_for, wake_at=state.wake_at,
    )  # fmt: skip


def assert_replays(store: EventStore, run_id: str) -> ReplayReport:
    """Replay the run from its log (no model, no tools) and fail with the first difference
    unless it reproduces every event; returns the report (its `llm_calls` were served)."""
    report = replay_run(store, run_id)
    assert report.ok, f"run {run_id} does not replay:\n{report.divergence.describe()}"  # type: ignore[union-attr]
    return report
