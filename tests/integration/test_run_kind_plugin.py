"""A workload plugs in by registering a RunKind, with no edit to the runtime: a toy workload
defined here, in a test module the runtime has never heard of, gets submitted from the
Client, listed by `chorus runs`, replayed, folded by `chorus state`, described by
`chorus log`, diffed, and its own verb on the `chorus` command. The simulation and the
relay plug in the same way.

The toy counts the words of its goal with a tool; it runs in the client's process (a kind
decides where its lead actor runs), on a real SQLite file.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from actors.cli.main import main
from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.client import Client, RunHandle
from actors.runtime.effects import CallTool, ToolFinished
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.registry import Registry
from actors.runtime.replay import (
    diff_runs,
    replay_run,
    replay_stream,
    state_at,
    timeline,
)
from actors.runtime.replay.report import ReplayReport
from actors.runtime.run import Complete, RunLifecycle, Start, run_stream
from actors.runtime.runkind import FrontDoor, Reading, RunKind, Running, Wording
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from events.base import Event, State
from events.registry import event_type


@event_type("ToyStarted")
class ToyStarted(Event):
    text: str


@event_type("ToyCounted")
class ToyCounted(Event):
    words: int


class ToyState(State):
    status: str = "new"
    text: str = ""
    words: int | None = None


class StartToy(Command):
    text: str


class ToyBehaviour(Behaviour[ToyState]):
    name = "toy"
    state_type = ToyState

    def next_effect(self, state: ToyState) -> Any:
        if state.status == "running":
            return CallTool(tool="count", args={"text": state.text}, call_index=1)
        return None

    def decide(self, state: ToyState, command: Command) -> list[Event]:
        if isinstance(command, StartToy):
            return [] if state.status != "new" else [ToyStarted(text=command.text)]
        if isinstance(command, ToolFinished):
            returned = command.events[-1]
            return [*command.events, ToyCounted(words=int(returned.output))]  # type: ignore[attr-defined]
        raise TypeError(type(command).__name__)

    def evolve(self, state: ToyState, event: Event) -> ToyState:
        if isinstance(event, ToyStarted):
            return state.model_copy(update={"status": "running", "text": event.text})
        if isinstance(event, ToyCounted):
            return state.model_copy(update={"status": "done", "words": event.words})
        return state


class Count:
    def execute(self, text: str) -> str:
        return str(len(text.split()))


def toy_stream(run_id: str) -> str:
    return f"toy:{run_id}"


class ToyRunning(Running):
    def submit(self, client: Client, goal: str, *, run_id: str, budget: Any, **options: Any) -> RunHandle:
        client.begin_run(run_id, goal=goal, kind=self.kind.name, params={}, budget=budget)
        run = ActorShell(RunLifecycle(), run_stream(run_id), client.store, run_id=run_id).load()
        shell = ActorShell(ToyBehaviour(), toy_stream(run_id), client.store, run_id=run_id).load()
        shell.handle(StartToy(key="start", text=goal), causation_id=run.last_event_id)
        run.handle(Start(key="start", lead_stream=shell.stream_id))
        state = drive(shell, LiveEffects(None, local_invoker({"count": Count()})))
        run.handle(Complete(key="finish", result=str(state.words)))
        return RunHandle(client, run_id)


class ToyReading(Reading):
    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        return ToyBehaviour() if stream_id == toy_stream(first.run_id) else None

    def lead_events(self, records: list[Any], run_id: str) -> list[Event]:
        return [r.event for r in records if r.event.stream_id == toy_stream(run_id)]

    def replay(self, records: list[Any], run_id: str) -> ReplayReport:
        original = self.lead_events(records, run_id)
        report = ReplayReport(run_id)

        def begin(shell: Any) -> None:
            shell.handle(StartToy(key="start", text=original[0].text))  # type: ignore[attr-defined]

        replayed, report.divergence = replay_stream(
            ToyBehaviour(), toy_stream(run_id), original, run_id, begin=begin, execute=drive
        )
        report.add(toy_stream(run_id), original, replayed)
        return report

    def describe(self, event: Event, brief: bool = False) -> str | None:
        if isinstance(event, ToyCounted):
            return f"counted {event.words} words"
        return None


class ToyCommands(FrontDoor):
    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        p = subparsers.add_parser("toy", help="count the words of a text")
        p.add_argument("text")
        p.set_defaults(func=lambda args: print(Client().submit(args.text, kind="toy").result.answer))


class ToyRun(RunKind):
    """A kind sets only what differs: its name, its parts (each with a default) and words."""

    name = "toy"
    running = ToyRunning
    reading = ToyReading
    front = ToyCommands
    wording = Wording(summary="count the words of the goal", lead="toy", noun="a toy", tallies={"ToolReturned": "tool calls"})


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    Registry.register_run_kind(ToyRun)
    yield Client(settings=Settings.from_env(), start_ray=False)
    Registry._run_kinds.pop("toy", None)


def test_a_registered_kind_runs_lists_replays_folds_and_diffs(toy):
    handle = toy.submit("three little words", kind="toy", run_id="t1")
    assert handle.result.status == "completed" and handle.result.answer == "3"
    toy.submit("two words", kind="toy", run_id="t2")

    assert [(r["run_id"], r["kind"], r["status"]) for r in toy.runs()] == [
        ("t2", "toy", "completed"), ("t1", "toy", "completed"),
    ]  # fmt: skip
    report = replay_run(toy.store, "t1")
    assert report.ok and report.tool_calls == 1 and report.streams == ["toy:t1"]
    version, state = state_at(toy.store, "toy:t1")
    assert isinstance(state, ToyState) and (state.words, version) == (3, 4)
    assert any("counted 3 words" in line for line in timeline(toy.store, "t1"))
    diff = diff_runs(toy.store, "t1", "t2")
    assert diff.shared == 0 and diff.kind == "toy"
    assert diff.lines()[-1].endswith("completed: '2'")


def test_a_changed_toy_decision_diverges_on_replay(toy, monkeypatch):
    toy.submit("one two", kind="toy", run_id="t1")
    monkeypatch.setattr(Count, "execute", lambda self, text: "99")  # replay never calls the tool
    assert replay_run(toy.store, "t1").ok
    original = ToyBehaviour.decide

    def off_by_one(self, state, command):
        events = original(self, state, command)
        return [ToyCounted(words=e.words + 1) if isinstance(e, ToyCounted) else e for e in events]

    monkeypatch.setattr(ToyBehaviour, "decide", off_by_one)
    report = replay_run(toy.store, "t1")
    assert not report.ok and report.divergence.version == 4


def test_its_verb_is_on_the_chorus_command(toy, capsys):
    assert main(["toy", "a b c d"]) == 0
    assert capsys.readouterr().out.strip() == "4"
    assert main(["runs"]) == 0
    assert "toy" in capsys.readouterr().out
