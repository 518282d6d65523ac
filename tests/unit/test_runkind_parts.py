"""A RunKind is split by job: `running` (how its runs run), `reading` (how its log is read
and replayed), `front` (what it adds to the CLI and the HTTP API), and two records of data,
`wording` and `http`. Each part has a default and is made once per kind, with the kind."""

from __future__ import annotations

import argparse
from dataclasses import FrozenInstanceError

import pytest

from actors.runtime.registry import Registry
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, RunKind, Running, Wording


class Bare(RunKind):
    name = "bare"


class Loud(Reading):
    def present(self, answer: str) -> str:
        return f"{self.kind.name}: {answer.upper()}"


class LoudRun(RunKind):
    name = "loud"
    reading = Loud
    wording = Wording(noun="a loud run")


def test_a_kind_of_a_name_alone_has_every_part():
    kind = Bare()
    assert (type(kind.running), type(kind.reading), type(kind.front)) == (Running, Reading, FrontDoor)
    assert kind.running.kind is kind.reading.kind is kind.front.kind is kind
    assert kind.running.live and kind.wording.fork_unit == "position" and kind.http == HttpPolicy()
    assert kind.reading.present("42") == "42" and kind.reading.admin_only("s", "state") == ()
    assert kind.reading.describe(object()) is None and kind.front.api_routers() == []  # type: ignore[arg-type]
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    kind.front.add_commands(sub)
    assert sub.choices == {}


def test_what_a_bare_kind_cannot_do_names_it():
    kind = Bare()
    with pytest.raises(ValueError, match="runs of kind 'bare' cannot be forked"):
        kind.running.fork(None, "r", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="runs of kind 'bare' cannot be resumed"):
        kind.running.resume(None, "r")  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="'bare'"):
        kind.reading.replay([], "r")
    with pytest.raises(ValueError, match="run r has no lead stream"):
        kind.reading.lead_events([], "r")


def test_a_part_replaced_is_made_with_its_kind_and_the_rest_stay_default():
    kind = LoudRun()
    assert kind.reading.present("done") == "loud: DONE"
    assert type(kind.running) is Running and kind.wording.noun == "a loud run"
    assert kind.wording.lead == "actor"  # the fields not given keep their defaults
    other = LoudRun()
    assert other.reading is not kind.reading and other.reading.kind is other  # one part per kind made


def test_wording_and_policy_are_data():
    with pytest.raises(FrozenInstanceError):
        Wording().noun = "x"  # type: ignore[misc]
    assert Wording().tallies == {"LlmCompleted": "LLM calls", "ToolReturned": "tool calls"}
    assert HttpPolicy().path_options == {} and HttpPolicy().import_options == frozenset()


def test_every_registered_kind_answers_through_its_parts():
    for kind in Registry.run_kinds():
        assert isinstance(kind.running, Running) and kind.running.kind is kind
        assert isinstance(kind.reading, Reading) and kind.reading.kind is kind
        assert isinstance(kind.front, FrontDoor) and kind.front.kind is kind
        assert isinstance(kind.wording, Wording) and kind.wording.summary, kind.name
        assert isinstance(kind.http, HttpPolicy)
    assert Registry.run_kind("simulation").running.live is False
    assert Registry.run_kind("relay").http.server_options == frozenset({"resubmit"})


def test_waking_a_run_of_a_kind_without_timers_names_the_kind(tmp_path):
    from actors.runtime.settings import Settings
    from actors.runtime.shell import ActorShell
    from actors.runtime.run import RunLifecycle, Submit, run_stream
    from actors.runtime.timers import wake_run
    from events.store import EventStore

    settings = Settings.from_env(data_dir=tmp_path, store_url=f"sqlite:///{tmp_path / 'w.db'}")
    store = EventStore(settings.store_url)
    ActorShell(RunLifecycle(), run_stream("w1"), store, run_id="w1").load().handle(Submit(key="submit", goal="g", kind="task"))
    store.close()
    with pytest.raises(ValueError, match="runs of kind 'task' have no durable timers"):
        wake_run(settings, "w1")  # the wake is its running part's, and a workflow has none
