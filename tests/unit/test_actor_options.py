"""The Ray options each kind of run actor is created with, read from the calls that create
them (a stand-in `ray` module records them: no Ray, no cluster).

Every actor that does a run's work is restarted after a crash and has a call cut off by its
death re-sent until it answers again (`max_task_retries=-1`): the lead actor of a run
(`Client.spawn`: agent, task, relay scheduler), the tool actors (`Registry.get_tool`) and
the relay's builder and verifier. A fixed number of retries ran out after a node loss,
before Ray had restarted the actor elsewhere (issue 19).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from actors.runtime.actor_options import RESTARTABLE, restartable

SURVIVES = {"max_restarts": 3, "max_task_retries": -1}


class FakeRay(types.ModuleType):
    """What the runtime calls of `ray` to create an actor, recording the options."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.created: list[tuple[type, dict[str, Any], tuple[Any, ...], dict[str, Any]]] = []

    def remote(self, *args: Any, **options: Any) -> Any:
        if args and isinstance(args[0], type):  # ray.remote(cls)
            return _ActorClass(self, args[0], dict(options))
        return lambda cls: _ActorClass(self, cls, dict(options))  # ray.remote(**options)(cls)

    def get(self, ref: Any, timeout: float | None = None) -> Any:
        return ref

    def kill(self, handle: Any, no_restart: bool = False) -> None:
        pass

    def get_actor(self, name: str) -> Any:
        raise ValueError(name)


class _ActorClass:
    def __init__(self, ray: FakeRay, cls: type, options: dict[str, Any]) -> None:
        self.ray, self.cls, self.opts = ray, cls, options

    def options(self, **options: Any) -> _ActorClass:
        return _ActorClass(self.ray, self.cls, {**self.opts, **options})

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        self.ray.created.append((self.cls, self.opts, args, kwargs))
        return _Handle()


class _Handle:
    def __getattr__(self, method: str) -> Any:
        return types.SimpleNamespace(remote=lambda *a, **k: f"{method}-ref")


@pytest.fixture
def ray(monkeypatch: pytest.MonkeyPatch) -> FakeRay:
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    return fake


class Lead:
    def serve(self) -> None: ...


class Stoppable(Lead):
    def stop(self) -> None: ...


def _spawn_lead(actor_class: type, name: str, placement: str = "") -> Any:
    from actors.runtime.client import Client

    client = types.SimpleNamespace(settings=types.SimpleNamespace(placement=placement))
    return Client.spawn(client, "r1", actor_class, name, ("arg",), ("start",))  # type: ignore[arg-type]


def test_the_restart_options():
    assert dict(RESTARTABLE) == SURVIVES
    assert restartable(name="x", num_cpus=0) == {**SURVIVES, "name": "x", "num_cpus": 0}


def test_an_actor_may_not_set_its_own_restarts():
    with pytest.raises(ValueError, match="max_task_retries"):
        restartable(max_task_retries=3)


@pytest.mark.parametrize(
    ("actor_class", "name", "concurrency"),
    [(Lead, "agent:r1", 1), (Lead, "task:r1", 1), (Stoppable, "relay:r1", 2)],
)
def test_a_runs_lead_actor(ray: FakeRay, actor_class: type, name: str, concurrency: int):
    handle = _spawn_lead(actor_class, name)
    [(cls, options, args, _)] = ray.created
    assert cls is actor_class and args == ("arg",)
    assert options == {**SURVIVES, "name": name, "num_cpus": 0, "max_concurrency": concurrency}
    assert handle._ref == "serve-ref"


def test_a_lead_actors_placement_joins_its_restart_options(ray: FakeRay):
    _spawn_lead(Lead, "agent:r1", placement="agent=resource:chorus_llm+spread")
    [(_, options, _, _)] = ray.created
    assert options == {
        **SURVIVES, "name": "agent:r1", "num_cpus": 0, "max_concurrency": 1,
        "resources": {"chorus_llm": 0.001}, "scheduling_strategy": "SPREAD",
    }  # fmt: skip


class _Probe:
    def execute(self, text: str = "") -> str:
        return text


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> type:
    """A tool registered as `probe_options`, with the registry's workload loading off."""
    from actors.runtime import registry
    from actors.runtime.registry import Registry, Tool

    cls = type("Probe", (_Probe, Tool), {})
    monkeypatch.setattr(registry, "load_workloads", lambda: None)
    monkeypatch.setitem(Registry._tools, "probe_options", cls)
    return cls


def test_a_tool_actor(ray: FakeRay, probe: type):
    from actors.runtime.registry import Registry

    Registry.get_tool("probe_options", root="/tmp")
    [(cls, options, args, kwargs)] = ray.created
    assert cls is probe and args == () and kwargs == {"root": "/tmp"}
    assert options == SURVIVES


@pytest.mark.parametrize("turn", ["BuilderActor", "VerifierActor"])
def test_a_relay_turn_actor(ray: FakeRay, turn: str):
    from actors.relay import actor

    actor._spawn(getattr(actor, turn), f"relay:r1:{turn}", ("arg",))
    [(cls, options, args, _)] = ray.created
    assert cls is getattr(actor, turn) and args == ("arg",)
    assert options == {**SURVIVES, "name": f"relay:r1:{turn}", "num_cpus": 0}


def test_a_tool_actor_is_placed_by_the_rule_of_role_tool(ray: FakeRay, probe: type):
    from actors.runtime.registry import Registry

    Registry.get_tool("probe_options", placement="agent=resource:chorus_llm,tool=spread", root="/tmp")
    Registry.get_tool("probe_options", placement="agent=resource:chorus_llm", root="/tmp")  # no rule for tools
    [(_, placed, _, kwargs), (_, unplaced, _, _)] = ray.created
    assert kwargs == {"root": "/tmp"}  # the placement is not passed on to the tool
    assert placed == {**SURVIVES, "scheduling_strategy": "SPREAD"}
    assert unplaced == SURVIVES


def test_a_relay_turn_actor_is_placed_by_the_rule_of_role_relay(ray: FakeRay):
    from actors.relay import actor

    actor._spawn(actor.BuilderActor, "relay:r1:builder", ("arg",), "relay=resource:chorus_llm:0.5")
    [(_, options, _, _)] = ray.created
    assert options == {**SURVIVES, "name": "relay:r1:builder", "num_cpus": 0, "resources": {"chorus_llm": 0.5}}


def test_a_bad_placement_rule_fails_before_any_relay_turn_actor_is_made(ray: FakeRay):
    from actors.relay import actor
    from actors.runtime.placement import PlacementError

    with pytest.raises(PlacementError, match="use resource:NAME"):
        actor._spawn(actor.BuilderActor, "relay:r1:builder", ("arg",), "relay=somewhere")
    assert ray.created == []
