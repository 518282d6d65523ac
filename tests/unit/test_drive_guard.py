"""A behaviour whose evolve forgets to advance past a recorded call would make the same live
call forever (the key appends nothing the second time). `drive` refuses it before the
second call is sent (issue 35's guard)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.effects import CallLlm, LlmReturned
from actors.runtime.llm.types import LlmRequest
from actors.runtime.perform import RepeatedEffect, drive
from actors.runtime.shell import ActorShell
from events.base import Event, State
from events.store import EventStore


class Counting(State):
    calls: int = 0
    done: bool = False


class Forgetful(Behaviour[Counting]):
    """Asks for call 0 until it has an answer, but its evolve never counts the answer."""

    state_type = Counting

    def __init__(self, remembers: bool) -> None:
        self.remembers = remembers

    def next_effect(self, state: Counting) -> Any:
        if state.done:
            return None
        return CallLlm(request=LlmRequest(model="m", messages=[{"role": "user", "content": "hi"}]), call_index=state.calls)

    def decide(self, state: Counting, command: Command) -> list[Event]:
        return list(command.events) if isinstance(command, LlmReturned) else []

    def evolve(self, state: Counting, event: Event) -> Counting:
        if self.remembers and event.type_name == "LlmCompleted":
            return state.model_copy(update={"calls": state.calls + 1, "done": True})
        return state


class Effects:
    def __init__(self) -> None:
        self.sent = 0

    def llm(self, request: LlmRequest, call_index: int) -> list[Event]:
        from events.effects import LlmCompleted, LlmRequested

        self.sent += 1
        return [
            LlmRequested(model="m", messages=request.messages, params={}, request_hash="h", call_index=call_index),
            LlmCompleted(content="hello", call_index=call_index, request_hash="h"),
        ]

    def tool(self, name: str, args: dict[str, Any], call_index: int) -> list[Event]:
        raise AssertionError("no tools here")


def test_a_behaviour_that_does_not_advance_is_refused_before_a_second_live_call():
    store = EventStore("memory://")
    effects = Effects()
    shell = ActorShell(Forgetful(remembers=False), "agent:t1", store, run_id="t1").load()
    with pytest.raises(RepeatedEffect, match="asked again for llm:0.*evolve must advance call_index"):
        drive(shell, effects)
    assert effects.sent == 1  # one live call, not an endless loop


def test_a_behaviour_that_advances_runs_to_its_end():
    store = EventStore("memory://")
    effects = Effects()
    shell = ActorShell(Forgetful(remembers=True), "agent:t2", store, run_id="t2").load()
    assert drive(shell, effects).done and effects.sent == 1
