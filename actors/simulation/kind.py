"""Simulation sessions (seed 002) as the runtime sees them: `SimulationRun`.

A session is a run of kind "simulation": `run:ID` plus the world, director and synth
streams. It does not end by itself: it waits, paused, between `chorus sim step`s. The
runtime gets from here how to fold its streams (`chorus state`), replay it, fork it at a
cycle, diff two lineages (by their directors' verdicts), describe its events, and the
`chorus sim` verbs. From Python a session is `actors.simulation.client.simulate(client, pack)`
(or `open_session(client, id)`): functions taking the client, not methods grafted on it.

Seed 002 reserves the synths' inner monologue for admin; `admin_only` declares it, and the
minds and prompts that carry it (beliefs, memories, mental models, projects; a synth's LLM
prompts and replies): the HTTP API redacts them for read and operate on every route. Over
HTTP a session's pack (`goal` or `pack`) is a bundled pack or one in a folder the server
allows (`path_options`, `bundled`).
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any, ClassVar

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.client import Client, RunHandle
from actors.runtime.registry import Registry
from actors.runtime.replay.report import ReplayReport
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, RunKind, Running, Wording
from actors.simulation import cli
from actors.simulation.client import KIND, create_session
from actors.simulation.cognition import SynthMind
from actors.simulation.director import DirectorConfig, DirectorState, evolve_director
from actors.simulation.fork import fork_session
from actors.simulation.progress import describe
from actors.simulation.replay import replay_session
from actors.simulation.streams import director_stream, is_synth_stream, world_stream
from actors.simulation.world import World, apply
from events.base import Event, State
from actors.simulation.events import WorldCreated
from events.store import Recorded

PACKS = Path(__file__).resolve().with_name("packs")
# What of a synth's mind only an admin reads (seed 002): the inner monologue is in its
# cognitions and replies; these carry what it thought, and its prompts carry these.
MIND = ("beliefs", "projects", "mental_models", "memories")
_SYNTH_EVENTS: dict[str, tuple[str, ...]] = {
    "SynthCreated": tuple(f"synth.{f}" for f in MIND),
    "SynthCognized": ("response", "error"),  # the monologue, beliefs, memories, theory of mind; an invalid reply
    "SynthPatched": ("changes",),
    "LlmRequested": ("messages",),  # the prompt renders the mind
    "LlmCompleted": ("content", "parsed"),  # the reply holds the monologue
    "LlmFailed": ("error",),
}


class DirectorBehaviour(Behaviour[DirectorState]):
    """The director stream's fold, for `chorus state` (the director is driven by cycles,
    not commands)."""

    name = "director"
    state_type = DirectorState

    def decide(self, state: DirectorState, command: Command) -> list[Event]:
        raise TypeError("the director's stream is written by its cycles, not by commands")

    def evolve(self, state: DirectorState, event: Event) -> DirectorState:
        return evolve_director(state, event)


class WorldState(State):
    world: World | None = None


class WorldBehaviour(Behaviour[WorldState]):
    """The world stream's fold: the canonical world."""

    name = "world"
    state_type = WorldState

    def decide(self, state: WorldState, command: Command) -> list[Event]:
        raise TypeError("the world changes only by committed cycles")

    def evolve(self, state: WorldState, event: Event) -> WorldState:
        if isinstance(event, WorldCreated):
            return WorldState(world=World.model_validate(event.world))
        if state.world is None:
            return state
        world = state.world.model_copy(deep=True)
        apply(world, event)
        return WorldState(world=world)


class SimulationRunning(Running):
    """How a session runs: recorded here, then stepped by its user (`chorus sim step`)."""

    live = False  # a session waits between steps: submitting or forking one returns its id

    def submit(self, client: Client, goal: str, *, run_id: str, budget: Any = None, **options: Any) -> RunHandle:
        """`goal` is the content pack's path (or pass `pack=`); options are DirectorConfig's."""
        pack = options.pop("pack", None) or goal
        create_session(client, pack, run_id=run_id, config=DirectorConfig(**options))
        return RunHandle(client, run_id)

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        """`at` is a cycle: the new lineage shares the session's history up to it."""
        if model is not None or llm_params is not None:
            raise ValueError("a simulation fork continues with the session's own model; --model/--temperature do not apply")
        new = fork_session(client, run_id, at, uuid.uuid4().hex[:12])
        return RunHandle(client, new)


class SimulationReading(Reading):
    """How a session is read: the director, world and synth streams; the synths' minds
    admin's alone."""

    def admin_only(self, stream_id: str, what: str) -> tuple[str, ...]:
        """A synth's mind, its cognitions and its LLM calls (seed 002: the inner monologue is
        admin's). An event type of a synth stream not listed here is hidden whole."""
        if not is_synth_stream(stream_id):
            return ()
        if what == "state":
            return MIND
        return _SYNTH_EVENTS.get(what, ("*",))

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        run_id = first.run_id
        if stream_id == director_stream(run_id):
            return DirectorBehaviour()
        if stream_id == world_stream(run_id):
            return WorldBehaviour()
        if is_synth_stream(stream_id):
            return SynthMind()
        return None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        stream = director_stream(run_id)
        events = sorted((r.event for r in records if r.event.stream_id == stream), key=lambda e: e.version)
        if not events:
            raise ValueError(f"session {run_id} has run no cycle")
        return events

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        submitted = next((r.event for r in records if r.event.stream_id == f"run:{run_id}" and r.event.type_name == "RunSubmitted"), None)
        config = getattr(submitted, "params", {}).get("director", {}) if submitted is not None else {}
        return replay_session(records, run_id, config)

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe(event, brief=brief)

    def present(self, answer: str) -> str:
        return answer


class SimulationFront(FrontDoor):
    """`chorus sim` and the `/v1/sessions` routes."""

    def api_routers(self) -> list[tuple[str, Any]]:
        from actors.simulation import api  # FastAPI only for the server

        return [("/sessions", api.build_router())]

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)


@Registry.register_run_kind
class SimulationRun(RunKind):
    name = KIND
    running: ClassVar[type[Running]] = SimulationRunning
    reading: ClassVar[type[Reading]] = SimulationReading
    front: ClassVar[type[FrontDoor]] = SimulationFront
    wording = Wording(
        summary="a world simulation session: content pack, director cycles, synths (seed 002)",
        lead="director",
        noun="a simulation session",
        lead_label="directors",
        fork_unit="cycle",
        tallies={"CycleCommitted": "committed cycles", "CycleRolledBack": "rolled-back cycles", "StimulusQueued": "stimuli"},
        error_types=frozenset({"CycleRolledBack"}),
    )
    http = HttpPolicy(path_options={"goal": "packs", "pack": "packs"}, bundled={"packs": (PACKS,)})
