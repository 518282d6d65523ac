"""The relay's Ray shells (seed 004): RelayActor is the Scheduler, "a Ray actor that is the
relay's single source of truth"; BuilderActor and VerifierActor do its turns.

Thin on purpose, like actors.agent.actor.AgentActor. RelayActor opens the store with the
settings it is given (the driver resolved the model endpoint already), then `serve` runs
`serve_relay`. On Ray it starts a BuilderActor and a VerifierActor, named after their
streams (`relay:<run>:builder`, `relay:<run>:verifier`), and hands each turn to them; each
wraps the very Builder or Verifier a relay served in one process has (session.relay_builder,
session.relay_verifier) and records its effects in its own stream through RecordedEffects.
They are owned by the scheduler, so they die with it.

Ray restarts the scheduler after a crash and re-sends `serve`; its shell rehydrates from the
log, new turn actors are started, and the effects already recorded in the builder's and
verifier's streams are served from there, so no finished turn is called or appended twice
(a turn cut off mid-call is done again: its call was not recorded). Called in a process
without Ray (a test), RelayActor runs the turns in-process; `RelayRun.submit(..., ray=True)`
spawns it through `Client.spawn`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from actors.relay.recording import builder_stream, verifier_stream
from actors.relay.scheduler import BuilderFinished, RelayState, VerifierFinished
from actors.relay.session import Turns, relay_builder, relay_verifier, serve_relay
from actors.runtime.actor_options import restartable
from actors.runtime.client import Client
from actors.runtime.placement import ray_options
from actors.runtime.settings import Settings
from events.store import ConcurrencyError, EventStore

SPAWN_WAIT_S = 30.0  # a dead scheduler's turn actors may hold their names this long


def _provider(settings: Settings, llm: Any) -> Any:
    if llm is not None:
        return llm
    from actors.runtime.llm.providers import provider_from_settings

    return provider_from_settings(settings)


def _on_ray() -> bool:
    """True inside a Ray actor (where the turns go to actors of their own)."""
    try:
        import ray  # lazily: the in-process relay needs no Ray
    except ImportError:
        return False
    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None


class RelayActor:
    def __init__(self, settings: Settings, run_id: str, llm: Any | None = None) -> None:
        self.settings = settings
        self.run_id = run_id
        self.llm = llm  # what the turn actors get: None, they make the configured provider
        self.client = Client(settings=settings, llm=_provider(settings, llm), start_ray=False)
        self._turn_actors: list[Any] = []

    def serve(self) -> dict[str, Any]:
        """Run the relay to its end (or resume it) and close the run; returns a summary."""
        try:
            state = serve_relay(self.client, self.run_id, turns=self._remote_turns if _on_ray() else None)
        finally:
            self._stop_turn_actors()
        return {
            "run_id": self.run_id,
            "status": state.status,
            "passed": state.passed,
            "escalated": state.escalated,
            "tokens": state.tokens_used,
        }

    def _remote_turns(self, task_id: str, params: dict[str, Any]) -> Turns:
        run = (self.settings, self.run_id)
        where = self.settings.placement  # CHORUS_PLACEMENT, role `relay` (its names are relay:RUN:...)
        builder = _spawn(BuilderActor, builder_stream(self.run_id), (*run, task_id, params, self.llm), where)
        self._turn_actors.append(builder)
        verifier = _spawn(VerifierActor, verifier_stream(self.run_id), (*run, params, self.llm), where)
        self._turn_actors.append(verifier)
        return Turns(RemoteBuilder(builder), RemoteVerifier(verifier))

    def _stop_turn_actors(self) -> None:
        if self._turn_actors:
            import ray  # only set on Ray

            for handle in self._turn_actors:
                ray.kill(handle, no_restart=True)
            self._turn_actors = []

    def close(self) -> None:
        self._stop_turn_actors()
        self.client.close()


class BuilderActor:
    """The Builder's Ray shell: one turn per `build`, its model call and memory lookup
    recorded in `relay:<run>:builder`."""

    def __init__(self, settings: Settings, run_id: str, task_id: str, params: dict[str, Any], llm: Any = None) -> None:
        self.store = EventStore(settings.store_url)
        self.builder, self.effects = relay_builder(
            self.store, settings, _provider(settings, llm), run_id, task_id, params
        )

    def build(self, state: RelayState) -> BuilderFinished:
        try:
            return self.builder.build(state, self.effects)
        except ConcurrencyError:  # a dead scheduler's builder recorded this call meanwhile: use it
            return self.builder.build(state, self.effects)

    def pid(self) -> int:
        return os.getpid()


class VerifierActor:
    """The Verifier's Ray shell: one verification per `verify`, its checks and coherence
    call recorded in `relay:<run>:verifier`."""

    def __init__(self, settings: Settings, run_id: str, params: dict[str, Any], llm: Any = None) -> None:
        self.store = EventStore(settings.store_url)
        self.verifier, self.effects = relay_verifier(self.store, settings, _provider(settings, llm), run_id, params)

    def verify(self, state: RelayState, before: Mapping[str, str] | None = None) -> VerifierFinished:
        try:
            return self.verifier.verify(state, self.effects, before=before)
        except ConcurrencyError:
            return self.verifier.verify(state, self.effects, before=before)

    def pid(self) -> int:
        return os.getpid()


class RemoteBuilder:
    """The scheduler's side of a BuilderActor: `drive_relay` calls it like a Builder."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def build(self, state: RelayState, effects: Any = None) -> BuilderFinished:
        import ray

        return ray.get(self.handle.build.remote(state))  # type: ignore[no-any-return]


class RemoteVerifier:
    """The scheduler's side of a VerifierActor."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def verify(
        self, state: RelayState, effects: Any = None, before: Mapping[str, str] | None = None
    ) -> VerifierFinished:
        import ray

        return ray.get(self.handle.verify.remote(state, dict(before or {})))  # type: ignore[no-any-return]


def _spawn(actor_class: type, name: str, args: tuple[Any, ...], placement: str = "") -> Any:
    """A turn actor named `name`, placed by the `placement` rules (CHORUS_PLACEMENT); one
    left by a scheduler that died is killed first (it would die with its owner anyway, but
    may still hold the name for a moment)."""
    import ray

    options = restartable(name=name, num_cpus=0, **ray_options(placement, name))  # a bad rule raises here
    deadline = time.monotonic() + SPAWN_WAIT_S
    while True:
        try:
            handle = ray.remote(actor_class).options(**options).remote(*args)
        except ValueError:  # the name is taken
            try:
                ray.kill(ray.get_actor(name), no_restart=True)
            except ValueError:
                pass  # gone meanwhile
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            continue
        ray.get(handle.pid.remote())  # started: its constructor ran
        return handle
