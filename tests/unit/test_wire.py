"""Commands on the wire (actors.runtime.wire): what crosses a Ray call comes back equal, typed,
and validated; anything else is refused with a WireError."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from actors.agent.react import StartAgent
from actors.runtime.behaviour import Command
from actors.runtime.wire import WireError, from_wire, to_wire
from actors.tasks.workflow import ForkWorkflow, StartWorkflow
from actors.agent.events import ToolSpec
from events.runs import Budget
from actors.tasks.events import WorkflowForked


def test_start_commands_come_back_equal_and_of_their_own_type():
    commands = [
        StartAgent(
            key="start", goal="Which file defines X?", root="/repo", tools=[ToolSpec(name="search_files", signature="search_files(query)", description="grep")],
            params={"temperature": 0, "stop": ["\n"], "nested": {"a": [1, 2.5, None]}}, budget=Budget(max_llm_calls=5), patches=["answer_first", "quote_checks"],
        ),
        StartWorkflow(key="start", kind="sexp", text="(task (tool echo \"hi\"))", history=[{"role": "user", "n": 1}]),
        ForkWorkflow(key="fork", forked=WorkflowForked(origin_run="r1", origin_position=3, params={"seed": 7}, stream_id="task:r2", version=1, event_id=uuid.uuid4())),
    ]
    for command in commands:
        back = from_wire(to_wire(command))
        assert type(back) is type(command)
        assert back == command


def test_a_command_object_is_taken_as_it_is():
    start = StartWorkflow(key="start", kind="query", text="x")
    assert from_wire(start) is start


@pytest.mark.parametrize(
    "data, message",
    [
        (b"no header at all", "not a command on the wire"),
        (b"json:loads\n{}", "is not a command type"),  # importable, but not a command
        (b"actors.nowhere:Start\n{}", "is not a command type"),
        (b"events.runs:Budget\n{}", "is not a command type"),  # a model, not a command
    ],
)
def test_bytes_that_hold_no_command_are_refused(data, message):
    with pytest.raises(WireError, match=message):
        from_wire(data)


def test_the_receiver_validates_what_it_gets():
    wire = to_wire(StartWorkflow(key="start", kind="query", text="x")).replace(b'"query"', b'"poem"')
    with pytest.raises(ValidationError):
        from_wire(wire)
    assert isinstance(from_wire(to_wire(Command(key="k"))), Command)
