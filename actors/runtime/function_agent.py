"""Runs of agent functions (`@agent`, actors.runtime.durable) on Ray: the run kind and the
thin Ray shell that serves one.

A run of kind "function" records the function's import path in its params (`agent`), so a
Ray worker imports it by that path: no packaging, no entry point. The lead stream is
`function:RUN`; signals wait on `signals:RUN`. A function that waits for a signal lets go of
its actor (its `serve` returns "waiting"); `signal` records the signal and serves the run
again, and the function re-runs from its log to where it waited.

Waiting shows on the function's stream (its state's status "waiting", `SignalAwaited` in
`chorus log`); the run's own lifecycle, which has no such status, stays "running" meanwhile
(`chorus runs`), as a run whose actor died does until it is resumed.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from itertools import groupby
from typing import TYPE_CHECKING, Any, ClassVar

from actors.runtime.behaviour import Behaviour
from actors.runtime.budget import close_ledger, open_ledger, run_usage
from actors.runtime.durable import (
    DEFAULT_PARAMS,
    SLEEP,
    FunctionBehaviour,
    LiveDurable,
    Outcome,
    ReplayDurable,
    StartFunction,
    agent_path,
    call_of,
    function_stream,
    load_agent,
    run_function,
    signal_stream,
)
from actors.runtime.durable import NonDeterminismError as NonDeterminismError
from actors.runtime.import_path import ImportPathError, is_import_path
from actors.runtime.ledger import Usage
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.perform import LiveEffects, ray_invoker
from actors.runtime.progress import short
from actors.runtime.registry import Registry, load_workloads
from actors.runtime.replay import ReplayReport, replay_stream, run_records
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Wait, run_stream
from actors.runtime.runkind import FUNCTION_KIND, HttpPolicy, Reading, RunKind, Running, Wording
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.runtime.spawn import spawn_actor
from actors.runtime.timers import schedule_wake, timer_actor
from actors.runtime.tool_host import RunTools
from actors.runtime.wire import from_wire
from events.base import Event
from events.durable import FunctionForked, FunctionStarted, SignalConsumed, SignalSent
from events.errors import ErrorInfo
from events.runs import Budget
from events.store import ConcurrencyError, EventStore, Recorded

if TYPE_CHECKING:
    from actors.runtime.client import Client, RunHandle

KIND = FUNCTION_KIND
FINISHED = ("FunctionCompleted", "FunctionFailed")


class FunctionActor:
    """Serves one function run: rehydrates its stream, runs the function from the top with
    live effects (what the log holds is served from it), and closes the run, or lets go of
    it while it waits for a signal. Ray restarts it after a crash and re-sends `serve`."""

    def __init__(self, settings: Settings, run_id: str, llm: Any | None = None) -> None:
        self.settings = settings
        self.run_id = run_id
        self.store = EventStore(settings.store_url)
        # A worker Ray started (or restarted after a kill) has imported no workload: their event
        # types (a research run's, a plugin's) must be known before the stream is read.
        load_workloads()
        self.run = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        with contextlib.suppress(ImportPathError, ValueError):
            load_agent(self.run.state.params.get("agent") or "")  # its module may define the events it emits
        self.shell = ActorShell(
            FunctionBehaviour(), function_stream(run_id), self.store, run_id=run_id,
            snapshot_every=settings.snapshot_every,
        ).load()  # fmt: skip
        self.llm = llm
        self.gateway = LlmGateway(llm if llm is not None else provider_from_settings(settings))
        # The run's budget in this process; it moves to a LedgerActor only when a tool that
        # makes calls of its own is created (`share_ledger`).
        self.ledger = open_ledger(self.store, run_id, shared=True, streams=None)
        self.tools = RunTools(run_id, settings, llm, self.ledger)

    def serve(self, start: Any) -> dict[str, Any]:
        start = from_wire(start)
        self.shell.handle(start, causation_id=self.run.last_event_id)
        begin_serving(self.run, self.shell)
        try:
            try:
                fn = load_agent(self.shell.state.agent)
            except ImportPathError as e:
                error = ErrorInfo(type="config_error", reason="ImportPathError", message=str(e))
                self.run.handle(Fail(key="finish", error=error), causation_id=self.shell.last_event_id)
                return self._summary("failed", error=error.model_dump())
            invoke = ray_invoker(self.call_tool, timeout_s=self.settings.llm_timeout_s)
            effects = LiveDurable(LiveEffects(self.gateway, invoke, self.ledger), self.store, self.run_id)
            outcome = run_until_settled(self.shell, fn, effects)
        except Exception as e:
            error = ErrorInfo(type="runtime_error", reason=type(e).__name__, message=str(e)[:500])
            self.run.handle(Fail(key="finish", error=error), causation_id=self.shell.last_event_id)
            self._finish()
            raise
        used = record_outcome(self.run, self.shell, outcome)
        if outcome.until is not None:  # a durable timer: the timer actor serves the run again then
            schedule_wake(self.settings, self.run_id, outcome.until, self.llm)
        self._finish()
        if outcome.status == "waiting":
            return self._summary("waiting", waiting_for=outcome.waiting_for, until=outcome.until)
        return self._summary(outcome.status, answer=outcome.result, llm_calls=used.calls, tokens=used.tokens)

    def _summary(self, status: str, **more: Any) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": status, "replayed_on_load": self.shell.replayed_on_load, **more}

    def _finish(self) -> None:
        self.shell.snapshot()
        self.run.snapshot()
        close_ledger(self.ledger)
        self.tools.stop()
        self.store.close()

    def state(self) -> dict[str, Any]:
        return {"version": self.shell.version, "state": self.shell.state.model_dump(mode="json")}

    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """Send a call to a tool in the run's folder as it is then (a function may move to
        another with `ctx.use_folder`: the tool is made anew there); its Ray object ref. A tool
        that makes calls of its own (`uses_context`) draws on the run's budget."""
        return self.tools.call(name, args, root=self.shell.state.root)

def begin_serving(run: ActorShell[Any], shell: ActorShell[Any]) -> None:
    """The run is served: started, or started again after it waited (a key per start)."""
    key = "start" if run.state.status in ("new", "submitted") else f"start:{run.version}"
    run.handle(Start(key=key, lead_stream=shell.stream_id), causation_id=shell.last_event_id)


def run_until_settled(shell: ActorShell[Any], fn: Any, effects: LiveDurable) -> Outcome:
    """`run_function`, again at once if a signal came while it was deciding to wait."""
    while True:
        outcome = run_function(shell, fn, effects, shell.store.read_stream(shell.stream_id))
        if outcome.status != "waiting" or outcome.waiting_for == SLEEP:
            return outcome
        if effects.signal(outcome.waiting_for or "", outcome.nth, 0) is None:
            return outcome


def record_outcome(run: ActorShell[Any], shell: ActorShell[Any], outcome: Outcome) -> Usage:
    """Close the run's lifecycle as the function ended (RunCompleted / RunFailed), or record
    that it waits (RunWaiting: `chorus runs` shows it); returns the run's usage."""
    cause = shell.last_event_id
    if outcome.status == "waiting":
        run.handle(Wait(key=f"wait:{run.version}", waiting_for=outcome.waiting_for or "", until=outcome.until), causation_id=cause)
        return Usage()
    used = run_usage(shell.store, shell.run_id)  # the function's calls and those its tools made
    if outcome.status == "completed":
        command: Any = Complete(key="finish", result=outcome.result or "", llm_calls=used.calls, tokens=used.tokens)
    else:
        command = Fail(key="finish", error=outcome.error)
    run.handle(command, causation_id=cause)
    return used


class FunctionRunning(Running):
    """How a function run runs: the function served by `FunctionActor` on Ray, resumed,
    woken by its durable timers and sent signals."""

    def submit(
        self,
        client: Client,
        goal: str,
        *,
        run_id: str,
        budget: Budget,
        function: Any = None,
        root: str = ".",
        model: str | None = None,
        llm_params: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> RunHandle:
        """`function`: the agent function, or its import path ("package.module:name");
        `options`: keyword arguments it is called with besides the goal (JSON values)."""
        if function is None:
            raise ValueError("name the agent function: Client.submit(goal, agent=my_agent) or agent='pkg.mod:my_agent'")
        try:
            path = agent_path(function)
        except ValueError as e:
            raise ValueError(str(e)) from None
        try:
            load_agent(path)  # before anything is written
        except ImportPathError as e:
            raise ValueError(str(e)) from None  # one line naming the path and what to install
        return self.start(client, goal, run_id=run_id, budget=budget, path=path, root=str(root), model=model,
                          llm_params=llm_params, options=options or {})  # fmt: skip

    def start(
        self, client: Client, goal: str, *, run_id: str, budget: Budget, path: str, root: str, model: str | None,
        llm_params: dict[str, Any] | None, options: dict[str, Any],
    ) -> RunHandle:
        """Record the run of the function at `path` and serve it (a run kind built on a
        function of its own calls this from its `submit`)."""
        try:
            json.dumps(options)
        except (TypeError, ValueError) as e:
            raise ValueError(f"an agent's options must be JSON values: {e}") from None
        settings = client.ensure_llm()
        client.ensure_ray()
        params = dict(DEFAULT_PARAMS if llm_params is None else llm_params)
        chosen = model or settings.llm_model
        client.begin_run(
            run_id, goal=goal, kind=self.kind.name,
            params={"agent": path, "root": root, "model": chosen, "llm_params": params, **({"options": options} if options else {})},
            budget=budget,
        )  # fmt: skip
        start = StartFunction(key="start", agent=path, goal=goal, model=chosen, params=params, root=root, options=options)
        return self._spawn(client, run_id, settings, start)

    def _spawn(self, client: Client, run_id: str, settings: Settings, start: StartFunction) -> RunHandle:
        name = function_stream(run_id)
        _let_go(name)  # the actor that served it before it waited
        return client.spawn(run_id, FunctionActor, name, (settings, run_id, client.llm), (start,))

    def resume(self, client: Client, run_id: str, **options: Any) -> RunHandle:
        if options:
            raise ValueError(f"resuming a function run takes no options, not {', '.join(sorted(options))}")
        start = start_of(client.store, run_id)
        if _waits_for_a_person(client, run_id):
            return client.get_run(run_id)  # nothing to serve until the signal comes (it serves the run)
        settings = client.ensure_llm()
        client.ensure_ray()
        if client.run_state(run_id).wake_at is not None:
            timer_actor(settings)  # back after a restart: it rebuilds every due timer from the log
        return self._spawn(client, run_id, settings, start)

    def wake(self, settings: Settings, run_id: str, llm: Any = None) -> Any:
        """The timer actor's call when the run's durable timer is due (`wake`)."""
        return wake(settings, run_id, llm)

    def signal(self, client: Client, run_id: str, name: str, payload: Any = None, sent_by: str | None = None) -> RunHandle:
        """Record the signal, then serve the run again if its function waits (it takes the
        signal at its next `wait_for(name)`; sent early, it waits there for it)."""
        if not name or len(name) > 200:
            raise ValueError("a signal needs a name of 1 to 200 characters")
        json.dumps(payload)  # TypeError/ValueError for what the log cannot hold
        stream = signal_stream(run_id)
        event = SignalSent(name=name, data=payload, sent_by=sent_by).stamp(run_id=run_id)
        for attempt in range(5):
            try:
                client.store.append(stream, [event], client.store.stream_version(stream))
                break
            except ConcurrencyError:
                if attempt == 4:
                    raise
        state = ActorShell(FunctionBehaviour(), function_stream(run_id), client.store, run_id=run_id).load().state
        if state.status == "waiting":
            return self.resume(client, run_id)
        return client.get_run(run_id)

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        """The function's events up to position `at` (whole calls) copied into a new run, then
        `FunctionForked`; the function re-runs served from that prefix, then live (with
        `model` / `llm_params` for the calls after it, if given)."""
        records = run_records(client.store, run_id)
        stream = function_stream(run_id)
        lead = sorted((r for r in records if r.event.stream_id == stream), key=lambda r: r.event.version)
        if not lead:
            raise ValueError(f"run {run_id} has no agent function to fork")
        if at < lead[0].position or at > records[-1].position:
            raise ValueError(f"position {at} is outside run {run_id} (its function spans {lead[0].position}..{lead[-1].position})")
        prefix = [r.event for r in lead if r.position <= at]
        while len(prefix) < len(lead) and prefix[-1].command_id == lead[len(prefix)].event.command_id:
            prefix.pop()  # whole commands only: a call's events were appended together
        if prefix[-1].type_name in FINISHED:
            raise ValueError(f"the function of run {run_id} had finished by position {at}; fork at an earlier position")
        original = client.run_state(run_id)
        settings = client.ensure_llm()
        client.ensure_ray()
        new_id = uuid.uuid4().hex[:12]
        origin = f"{run_id}@{at}"
        client.begin_run(
            new_id, goal=original.goal, kind=self.kind.name,
            params={**original.params, "forked_from": origin, "fork_model": model, "fork_llm_params": llm_params},
            budget=original.budget, forked_from=origin,
        )  # fmt: skip
        copies = [
            type(e).model_validate(
                {**e.payload(), "timestamp": e.timestamp, "command_id": e.command_id, "causation_id": e.causation_id, "run_id": new_id}
            )
            for e in prefix
        ]
        after = max((call_of(e) or 0 for e in prefix), default=0)
        new_stream = function_stream(new_id)
        client.store.append(new_stream, copies, 0)
        forked = FunctionForked(origin_run=run_id, origin_position=at, after_call=after, model=model, params=llm_params)
        client.store.append(new_stream, [forked.stamp(run_id=new_id, command_id="fork")], len(copies))
        return self._spawn(client, new_id, settings, StartFunction.of(prefix[0]))


class FunctionReading(Reading):
    """How a function run is read: its `function:ID` stream, re-run against its recording."""

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        if stream_id.startswith("function:") or isinstance(first, FunctionStarted):
            return FunctionBehaviour()
        return None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        stream = function_stream(run_id)
        events = sorted((r.event for r in records if r.event.stream_id == stream), key=lambda e: e.version)
        if not events:
            raise ValueError(f"run {run_id} has no agent function events")
        return events

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        report = ReplayReport(run_id)
        stream = function_stream(run_id)
        original = sorted((r.event for r in records if r.event.stream_id == stream), key=lambda e: e.version)
        if not original:
            return report  # replay_run reports "nothing to re-execute"
        replayed, divergence = replay_function_stream(stream, original, run_id)
        report.add(stream, original, replayed)
        report.divergence = divergence
        return report

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe_function(event, brief)


@Registry.register_run_kind
class FunctionRun(RunKind):
    """Runs of an agent written as a plain Python function (`@agent`)."""

    name = KIND
    running: ClassVar[type[Running]] = FunctionRunning
    reading: ClassVar[type[Reading]] = FunctionReading
    wording = Wording(
        summary="an agent written as a plain Python function (@agent), by its import path",
        lead="agent",
        noun="a function agent",
        lead_label="agent functions",
        tallies={"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "SignalConsumed": "signals"},
        error_types=frozenset({"FunctionFailed"}),
    )
    # The function is code named by import path: over HTTP only an admin may name one.
    http = HttpPolicy(import_options=frozenset({"function"}))


def replay_function_stream(stream: str, original: list[Event], run_id: str) -> tuple[list[Event], Any]:
    """Re-run the function against its own recording in a scratch store (`replay_stream`).
    A fork's copied prefix (up to its `FunctionForked`) is taken as given: it was the other
    run's, and that run's replay checks it."""
    cut = next((i for i, e in enumerate(original) if isinstance(e, FunctionForked)), 0)

    def begin(shell: ActorShell[Any]) -> None:
        for key, group in groupby(original[: cut + 1], key=lambda e: e.command_id):
            events = [type(e).model_validate({**e.payload(), "timestamp": e.timestamp}) for e in group]
            shell.record(events, key, causation_id=events[0].causation_id)

    def execute(shell: ActorShell[Any], effects: Any) -> None:
        try:
            fn = load_agent(shell.state.agent)
        except ImportPathError as e:
            raise ValueError(str(e)) from None  # one line naming the path and what to install
        run_function(shell, fn, ReplayDurable(original, effects, stream), shell.store.read_stream(stream))

    return replay_stream(FunctionBehaviour(), stream, original, run_id, begin=begin, execute=execute, expected=(NonDeterminismError,))


def describe_function(e: Event, brief: bool = False) -> str | None:
    t = e.type_name
    d: Any = e
    if t == "FunctionStarted":
        return f"agent {d.agent} started"
    if t == "FunctionForked":
        return f"forked from {d.origin_run}@{d.origin_position} after call {d.after_call}" + (f", model {d.model}" if d.model else "")
    if t == "CallRecorded":
        if d.call == "agent":
            return f"[{d.call_index}] agent {d.args.get('agent')}: {short(str(d.args.get('goal', '')))}"
        return f"[{d.call_index}] {d.call}({', '.join(f'{k}={v}' for k, v in d.args.items())}) = {d.value}" if brief else ""
    if t == "SignalAwaited":
        return f"[{d.call_index}] waiting for signal {d.name!r} (chorus signal {e.run_id} {d.name} JSON)"
    if t == "SignalConsumed":
        got = "timed out" if d.timed_out else f"got {short(json.dumps(d.data, default=str), 80)}"
        return f"[{d.call_index}] signal {d.name!r}: {got}"
    if t == "SignalSent":
        return f"signal {d.name!r} sent" + (f" by {d.sent_by}" if d.sent_by else "")
    if t == "FunctionCompleted":
        return "agent returned" + (f": {short(d.result)}" if brief else "")
    if t == "FunctionFailed":
        return f"! FunctionFailed: {d.error.line()}"
    return None


def _waits_for_a_person(client: Client, run_id: str) -> bool:
    """The run waits in `wait_for(name)` with no timer, and no signal of that name is there
    that its function has not taken: resuming it would start an actor with nothing to do (and
    a signal arriving meanwhile would let go of that actor while it starts)."""
    run = client.run_state(run_id)
    if run.status != "waiting" or run.wake_at is not None or not run.waiting_for:
        return False
    name = run.waiting_for
    sent = sum(isinstance(e, SignalSent) and e.name == name for e in client.store.read_stream(signal_stream(run_id)))
    taken = sum(
        isinstance(e, SignalConsumed) and e.name == name and not e.timed_out
        for e in client.store.read_stream(function_stream(run_id))
    )  # fmt: skip
    return sent <= taken


def start_of(store: EventStore, run_id: str) -> StartFunction:
    """The command that started the run's function, to serve it again."""
    events = store.read_stream(function_stream(run_id))
    if not events:
        raise ValueError(f"run {run_id}'s agent function never started: there is nothing to resume (submit it again)")
    return StartFunction.of(events[0])


def wake(settings: Settings, run_id: str, llm: Any = None) -> Any:
    """Serve again a run waiting on a durable timer (the timer actor calls this when it is
    due): the ref of its new actor's `serve`, or None when the run no longer waits."""
    store = EventStore(settings.store_url)
    load_workloads()  # the timer actor's process reads the function's stream next
    try:
        state = ActorShell(RunLifecycle(), run_stream(run_id), store).load().state
        if state.status != "waiting":
            return None  # ended, or served again already
        start = start_of(store, run_id)
    finally:
        store.close()
    name = function_stream(run_id)
    _let_go(name)
    return spawn_actor(settings.placement, FunctionActor, name, (settings, run_id, llm), (start,))[1]


def _let_go(name: str) -> None:
    """Stop the idle actor of that name, if any, and wait until its name is free."""
    import ray

    if not ray.is_initialized():
        return
    try:
        actor = ray.get_actor(name)
    except ValueError:
        return
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get_actor(name)
        except ValueError:
            return
        time.sleep(0.1)


def is_function_agent(agent: Any) -> bool:
    """Whether `agent` (Client.submit's) names an agent function rather than a run kind."""
    return callable(agent) or (isinstance(agent, str) and is_import_path(agent) and agent not in Registry.names()["run_kinds"])
