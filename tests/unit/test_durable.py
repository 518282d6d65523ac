"""Agent functions' durable context without Ray (actors.runtime.durable, actors.testing):
every call recorded before it returns, a re-run served from the log in order, a changed
call a non-determinism error naming both, a wait for a signal suspended and resumed."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from actors.runtime.durable import FunctionBehaviour, NonDeterminismError, agent, function_stream
from actors.runtime.shell import ActorShell
from actors.testing import ScriptedProvider, assert_replays, run_agent

CHANGED = {"on": False}


@agent
def two_calls(ctx, goal: str) -> str:
    first = ctx.llm(f"one: {goal}")
    n = ctx.random()
    when = ctx.now()
    second = ctx.llm("two: changed" if CHANGED["on"] else f"two: {first}")
    return f"{second} {0 <= n < 1} {when.year > 2000}"


class Verdict(BaseModel):
    ok: bool
    why: str


@agent
def structured(ctx, goal: str) -> str:
    v = ctx.llm(goal, schema=Verdict)
    return f"{v.ok}/{v.why}"


@agent
def child(ctx, goal: str) -> str:
    return ctx.llm(f"child {goal}")


@agent
def parent(ctx, goal: str) -> str:
    return "parent got " + ctx.agent(child, goal)


@agent
def gated(ctx, goal: str) -> str:
    draft = ctx.llm(f"draft {goal}")
    approval = ctx.wait_for("approval")
    if not approval.get("ok"):
        return "rejected"
    return ctx.llm(f"final {draft}")


def test_a_run_records_every_call_and_replays_identically():
    provider = ScriptedProvider(["A", "B"])
    run = run_agent(two_calls, "g", model=provider)
    assert run.status == "completed" and run.answer.startswith("B True True")
    types = [e.type_name for e in run.store.read_stream(function_stream(run.run_id))]
    assert types == ["FunctionStarted", "LlmRequested", "LlmCompleted", "CallRecorded", "CallRecorded",
                     "LlmRequested", "LlmCompleted", "FunctionCompleted"]
    report = assert_replays(run.store, run.run_id)
    assert report.llm_calls == 2 and provider.calls == 2


def test_a_rerun_is_served_from_the_log_in_order_with_no_live_call():
    provider = ScriptedProvider(["A", "B"])
    run = run_agent(two_calls, "g", model=provider)
    before = run.store.read_stream(function_stream(run.run_id))
    # Cut the log back to the first call and run again: call 1 is served, call 2.. live.
    from actors.runtime.durable import LiveDurable, run_function
    from actors.runtime.llm.gateway import LlmGateway
    from actors.runtime.perform import LiveEffects
    from events.store import EventStore

    store = EventStore("memory://")
    store.append(function_stream("x"), [type(e).model_validate({**e.payload(), "command_id": e.command_id, "run_id": "x"}) for e in before[:3]], 0)
    again = ScriptedProvider(["NEW"])
    shell = ActorShell(FunctionBehaviour(), function_stream("x"), store, run_id="x").load()
    outcome = run_function(shell, two_calls, LiveDurable(LiveEffects(LlmGateway(again), None), store, "x"), store.read_stream(function_stream("x")))
    assert outcome.status == "completed" and outcome.result.startswith("NEW")
    assert again.calls == 1  # only call 4, the second LLM call; call 1 came from the log
    assert "one: g" in again.requests[0].messages[0]["content"] or "two: A" in again.requests[0].messages[0]["content"]


def test_a_changed_call_is_a_non_determinism_error_naming_both(monkeypatch):
    run = run_agent(two_calls, "g", model=["A", "B"])
    CHANGED["on"] = True
    try:
        from actors.runtime.replay import replay_run

        report = replay_run(run.store, run.run_id)
    finally:
        CHANGED["on"] = False
    assert not report.ok
    reason = report.divergence.reason
    assert "non-determinism at call 4" in reason and "two: A" in reason and "two: changed" in reason


def test_the_error_names_position_and_both_calls():
    e = NonDeterminismError("function:r", 3, "llm(model='m', 'a')", "tool('t', {})")
    assert str(e) == ("non-determinism at call 3 of function:r: the log recorded llm(model='m', 'a'), "
                      "the function now calls tool('t', {})")


def test_structured_output_and_a_child_agent():
    run = run_agent(structured, "judge", model=['{"ok": true, "why": "fine"}'])
    assert run.answer == "True/fine"
    run = run_agent(parent, "g", model=["C"])
    assert run.answer == "parent got C"
    assert_replays(run.store, run.run_id)


def test_waiting_for_a_signal_suspends_and_a_signal_resumes():
    provider = ScriptedProvider(["draft text", "final text"])
    run = run_agent(gated, "g", model=provider)
    assert run.status == "waiting" and provider.calls == 1
    assert_replays(run.store, run.run_id)  # a waiting run replays to its wait
    done = run.signal("approval", {"ok": True})
    assert done.status == "completed" and done.answer == "final text"
    assert provider.calls == 2  # the draft was served from the log
    assert_replays(run.store, run.run_id)


def test_an_unimportable_agent_path_is_one_line():
    from actors.runtime.import_path import ImportPathError

    with pytest.raises(ImportPathError) as e:
        run_agent("no_such_pkg.agents:mine", "g")
    assert "no_such_pkg" in str(e.value) and "\n" not in str(e.value)


@agent
def patient(ctx, goal: str) -> str:
    ctx.sleep(0.01)
    got = ctx.wait_for("nudge", timeout=0.2)
    return f"got {got}"


def test_sleep_and_a_wait_with_a_timeout_are_recorded_and_replay():
    run = run_agent(patient, "g")
    assert run.status == "completed" and run.answer == "got None"
    consumed = [e for e in run.store.read_stream(function_stream(run.run_id)) if e.type_name == "SignalConsumed"]
    assert consumed[0].timed_out
    assert_replays(run.store, run.run_id)


def test_a_signal_sent_before_the_wait_is_taken_at_it():
    from events.durable import SignalSent
    from actors.runtime.durable import signal_stream
    from events.store import EventStore

    store = EventStore("memory://")
    store.append(signal_stream("early"), [SignalSent(name="approval", data={"ok": True}).stamp(run_id="early")], 0)
    run = run_agent(gated, "g", model=["d", "f"], store=store, run_id="early")
    assert run.status == "completed" and run.answer == "f"


def test_the_budget_refuses_a_call_and_the_run_fails_and_replays():
    from events.runs import Budget

    provider = ScriptedProvider(["A", "B"])
    run = run_agent(two_calls, "g", model=provider, budget=Budget(max_llm_calls=1))
    assert run.status == "failed" and run.error.type == "budget_exhausted"
    assert provider.calls == 1
    assert_replays(run.store, run.run_id)


# -- events of the agent's own, options, a failure with its own error, a behaviour in-line -------

from actors.runtime.behaviour import Behaviour, Command  # noqa: E402
from actors.runtime.durable import Failure  # noqa: E402
from actors.runtime.effects import CallLlm, LlmReturned  # noqa: E402
from actors.runtime.llm.types import LlmRequest  # noqa: E402
from events.base import Event, State  # noqa: E402
from events.errors import ErrorInfo  # noqa: E402
from events.registry import event_type  # noqa: E402


@event_type("TestNoted")
class Noted(Event):
    text: str


NOTE = {"text": "first"}


@agent
def noting(ctx, goal: str, *, times: int = 1) -> str:
    for i in range(times):
        ctx.emit(Noted(text=f"{NOTE['text']} {i}"))
        ctx.llm(f"{goal} {i}")
    if goal == "fail":
        raise Failure(ErrorInfo(type="my_error", reason="because", message="it had to"))
    return "done"


def test_emitted_events_are_recorded_once_served_on_a_rerun_and_checked_in_replay():
    run = run_agent(noting, "g", model=["a", "b"], options={"times": 2})
    stream = run.store.read_stream(function_stream(run.run_id))
    assert [e.text for e in stream if e.type_name == "TestNoted"] == ["first 0", "first 1"]
    assert [e.command_id for e in stream if e.type_name == "TestNoted"] == ["call:1", "call:3"]
    resumed = run.resume()  # a finished run re-served appends nothing
    assert len(resumed.store.read_stream(function_stream(run.run_id))) == len(stream)
    assert_replays(run.store, run.run_id)
    NOTE["text"] = "changed"
    try:
        from actors.runtime.replay import replay_run

        report = replay_run(run.store, run.run_id)
    finally:
        NOTE["text"] = "first"
    assert not report.ok and "non-determinism at call 1" in report.divergence.reason
    assert "emit(TestNoted)" in report.divergence.reason


def test_a_failure_ends_the_run_with_its_own_error():
    run = run_agent(noting, "fail", model=["a"])
    assert run.status == "failed" and (run.error.type, run.error.reason) == ("my_error", "because")
    assert_replays(run.store, run.run_id)


class Count(State):
    n: int = 0
    done: bool = False


class Begin(Command):
    pass


@event_type("TestCounted")
class Counted(Event):
    n: int


class Counter(Behaviour[Count]):
    """Asks the model until it says "stop"; `stuck` never advances (a bug drive must catch)."""

    name = "counter"
    state_type = Count

    def __init__(self, stuck: bool = False) -> None:
        self.stuck = stuck

    def next_effect(self, state: Count) -> CallLlm | None:
        if state.done:
            return None
        return CallLlm(request=LlmRequest(model="m", messages=[{"role": "user", "content": f"n={state.n}"}]), call_index=state.n + 1)

    def decide(self, state: Count, command: Command) -> list[Event]:
        if isinstance(command, Begin):
            return [Counted(n=0)]
        assert isinstance(command, LlmReturned)
        return [*command.events, Counted(n=state.n + (0 if self.stuck else 1))]

    def evolve(self, state: Count, event: Event) -> Count:
        if isinstance(event, Counted):
            return state.model_copy(update={"n": event.n})
        if event.type_name == "LlmCompleted":
            return state.model_copy(update={"done": event.content == "stop"})
        return state


@agent
def counting(ctx, goal: str, *, stuck: bool = False) -> str:
    return str(ctx.drive(Counter(stuck), Begin(key="begin")).n)


def test_a_behaviour_runs_in_line_its_calls_and_decisions_recorded_and_replayed():
    run = run_agent(counting, "g", model=["go", "go", "stop"])
    assert run.answer == "3"
    types = [e.type_name for e in run.store.read_stream(function_stream(run.run_id))]
    assert types.count("LlmRequested") == 3 and types.count("TestCounted") == 4
    assert assert_replays(run.store, run.run_id).llm_calls == 3


def test_a_behaviour_that_does_not_advance_is_an_error_not_a_loop():
    run = run_agent(counting, "g", model=["go"] * 5, options={"stuck": True})
    assert run.status == "failed" and "does not advance" in run.error.message
