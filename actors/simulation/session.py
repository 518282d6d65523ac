"""A session's shell: the canonical state it folds from the log, the director's cycles it
commits in one store transaction, and the synths' recorded cognitive calls.

`Canonical.load` folds the world, director and synth streams (from the newest full-system
snapshot and the tails after it). `DirectorShell.step` runs `director.run_cycle` and
commits its verdict with `EventStore.append_many`: the world's, the director's and every
synth's events of the cycle, each stream at the version it was read at, or nothing at
all. Only after the commit does the canonical state move (by folding what was appended),
so a director that dies mid-cycle leaves exactly the state before the cycle.

`SynthShell` is a synth's door to the model: it performs each call through the gateway
and appends the call's events to the synth's stream before the cognition uses them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.types import LlmRequest
from actors.runtime.run import UnknownRun
from actors.runtime.shell import ShellSnapshot, utc_timestamp
from actors.simulation import cognition, invariants, patches
from actors.simulation.cognition import SynthMind
from actors.simulation.director import (
    BEHAVIOUR_PATCHES,
    CognitionTask,
    CycleResult,
    DirectorConfig,
    DirectorState,
    evolve_director,
    run_cycle,
)
from actors.simulation.perception_policy import PerceptionPolicy
from actors.simulation.snapshot import SimulationSnapshot, migrate
from actors.simulation.streams import director_stream, synth_stream, world_stream
from actors.simulation.synth import SynthState
from actors.simulation.world import World, apply
from events.base import Event
from actors.simulation.events import PatchCommitted, StimulusQueued, SynthCreated, SynthPatched, WorldCreated
from events.store import EventStore, Recorded


class UnknownSession(UnknownRun):
    """No session with that id (a run, but not a simulation's)."""


@dataclass
class Canonical:
    """What the log holds for one session, folded."""

    run_id: str
    world: World
    director: DirectorState
    synths: dict[str, SynthState]
    versions: dict[str, int] = field(default_factory=dict)  # stream -> folded version
    created: WorldCreated | None = None

    @classmethod
    def load(cls, store: EventStore, run_id: str, *, snapshot: bool = True) -> Canonical:
        """Fold the session's streams; from the newest snapshot when there is a usable one."""
        ws = world_stream(run_id)
        first = store.read_stream(ws, 1, 1)
        if not first or not isinstance(first[0], WorldCreated):
            raise UnknownSession(f"no simulation session {run_id!r}")
        created = first[0]
        base = _from_snapshot(store, run_id) if snapshot else None
        if base is None:
            world = World.model_validate(created.world)
            base = cls(run_id, world, DirectorState(), {}, {ws: 1}, created)
        base.created = created
        for e in store.read_stream(ws, base.versions.get(ws, 0) + 1):
            apply(base.world, e)
            base.versions[ws] = e.version
        ds = director_stream(run_id)
        for e in store.read_stream(ds, base.versions.get(ds, 0) + 1):
            base.director = evolve_director(base.director, e)
            base.versions[ds] = e.version
        mind = SynthMind()
        for body in _synth_ids(base.world):
            ss = synth_stream(run_id, body)
            state = base.synths.get(body) or SynthState()
            for e in store.read_stream(ss, base.versions.get(ss, 0) + 1):
                state = mind.evolve(state, e)
                base.versions[ss] = e.version
            base.synths[body] = state
        return base

    def snapshot(self) -> SimulationSnapshot:
        return SimulationSnapshot(
            world=self.world.model_dump(mode="python"),
            director=self.director.model_dump(mode="python"),
            synths={sid: s.model_dump(mode="python") for sid, s in self.synths.items()},
            versions=dict(self.versions),
        )


def _synth_ids(world: World) -> list[str]:
    return sorted(e.id for e in world.entities.values() if e.synth_id)


def _from_snapshot(store: EventStore, run_id: str) -> Canonical | None:
    saved = store.load_snapshot(director_stream(run_id))
    if saved is None or saved.kind != "ShellSnapshot":
        return None
    body = saved.data.get("state") if isinstance(saved.data, dict) else None
    if not isinstance(body, dict):
        return None
    snap = migrate(body)
    if not snap.versions:
        return None  # an old format: read, never resumed from
    return Canonical(
        run_id,
        World.model_validate(snap.world),
        DirectorState.model_validate(snap.director),
        {sid: SynthState.model_validate(s) for sid, s in snap.synths.items()},
        dict(snap.versions),
    )


# -- creating a session ---------------------------------------------------------------------------


def create_events(pack: Any) -> tuple[WorldCreated, list[SynthCreated]]:
    """The first facts of a session: the compiled pack (so replay needs no file)."""
    created = WorldCreated(
        world=pack.world.model_dump(mode="python"), pack=pack.name, pack_digest=pack.digest, warnings=list(pack.warnings)
    )
    return created, [SynthCreated(synth=s.model_dump(mode="python")) for s in pack.synths]


def record_session(store: EventStore, run_id: str, pack: Any) -> list[Recorded]:
    """Append the world's and every synth's first event in one transaction."""
    created, synths = create_events(pack)
    batches: list[tuple[str, list[Event], int]] = [(world_stream(run_id), [created.stamp(run_id=run_id)], 0)]
    for s, event in zip(pack.synths, synths, strict=True):
        batches.append((synth_stream(run_id, s.synth_id), [event.stamp(run_id=run_id)], 0))
    return store.append_many(batches)


# -- a synth's door to the model ------------------------------------------------------------------


class SynthShell:
    """Performs a synth's cognitive call: the gateway's events are appended to the synth's
    stream before `cognition.cognize` reads the completion (rule 2)."""

    def __init__(self, store: EventStore, run_id: str, synth_id: str, gateway: LlmGateway, model: str, params: dict[str, Any]) -> None:
        self.store = store
        self.run_id = run_id
        self.stream = synth_stream(run_id, synth_id)
        self.gateway = gateway
        self.model = model
        self.params = params

    def think(self, task: CognitionTask, seed: int) -> list[Event]:
        def llm(request: LlmRequest, call_index: int) -> list[Event]:
            events = [e.stamp(run_id=self.run_id) for e in self.gateway.call(request, call_index).events]
            version = self.store.stream_version(self.stream)
            return [r.event for r in self.store.append(self.stream, events, version)]

        return cognition.cognize(task.state, task.bundle, llm, model=self.model, params=self.params, seed=seed)


# -- the director's shell ------------------------------------------------------------------------


Cognize = Callable[[list[CognitionTask]], list[list[Event]]]


class DirectorShell:
    """Runs cycles over the canonical state and commits each as one transaction."""

    def __init__(
        self,
        store: EventStore,
        run_id: str,
        cognize: Cognize,
        *,
        config: DirectorConfig | None = None,
        policy: PerceptionPolicy | None = None,
        check: Callable[[Any], list[invariants.Violation]] = invariants.check,
        snapshot_every: int = 10,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.cognize = cognize
        self.config = config or DirectorConfig()
        self.policy = policy
        self.check = check
        self.snapshot_every = snapshot_every
        self.canonical = Canonical.load(store, run_id)
        self._verdict: Recorded | None = None  # the director's last event this shell appended

    def step(
        self,
        cycles: int = 1,
        on_cycle: Callable[[CycleResult], None] | None = None,
        *,
        behaviour_patches: Collection[str] = BEHAVIOUR_PATCHES,
    ) -> list[CycleResult]:
        """Run and commit `cycles` cycles with the named `behaviour_patches` (replay: the
        ones each recorded verdict names)."""
        results = []
        for _ in range(cycles):
            c = self.canonical
            result = run_cycle(
                c.world, c.director, c.synths, self.cognize, config=self.config, policy=self.policy, check=self.check,
                behaviour_patches=behaviour_patches,
            )  # fmt: skip
            self.commit(result)
            results.append(result)
            if on_cycle is not None:
                on_cycle(result)
            if self.snapshot_every and result.cycle % self.snapshot_every == 0:
                self.save_snapshot()
        return results

    def commit(self, result: CycleResult) -> list[Recorded]:
        c = self.canonical
        ws, ds = world_stream(self.run_id), director_stream(self.run_id)
        batches: list[tuple[str, list[Event], int]] = [(ws, self._stamp(result.world_events), c.versions.get(ws, 0))]
        for sid, events in sorted(result.synth_events.items()):
            ss = synth_stream(self.run_id, sid)
            batches.append((ss, self._stamp(events), self.store.stream_version(ss)))
        # The verdict last: its position closes the cycle in the global log (a fork or
        # `show --at` reads everything up to it).
        batches.append((ds, self._stamp(result.director_events), c.versions.get(ds, 0)))
        recorded = self.store.append_many(batches)
        # Only now does the canonical state move: by folding what the log holds.
        mind = SynthMind()
        for sid, events in result.llm_events.items():
            for e in events:
                c.synths[sid] = mind.evolve(c.synths[sid], e)
                c.versions[synth_stream(self.run_id, sid)] = max(c.versions.get(synth_stream(self.run_id, sid), 0), e.version)
        self._fold(recorded)
        return recorded

    def commit_patch(
        self, planned: patches.Planned, principal: str, note: str = "", *, patch_id: str | None = None
    ) -> list[Recorded]:
        """Commit a valid admin patch (planned on this shell's canonical state) as one
        transaction: its world events, each changed synth's `SynthPatched`, then the
        `PatchCommitted` that names who applied it. `patch_id`: the id the log gave it
        (replay), else a new one."""
        if not planned.valid:
            raise ValueError(f"the patch is not valid: {planned.violations[0].message}")
        c = self.canonical
        ws, ds = world_stream(self.run_id), director_stream(self.run_id)
        director_version = c.versions.get(ds, 0)
        done = PatchCommitted(
            patch_id=patch_id or patches.patch_id(self.run_id, director_version, planned.operations),
            principal=principal,
            operations=[op.model_dump(mode="json") for op in planned.operations],
            note=note,
            world_events=len(planned.world_events),
            synths=sorted(planned.synth_changes),
        )
        batches: list[tuple[str, list[Event], int]] = []
        if planned.world_events:
            batches.append((ws, self._stamp(planned.world_events), c.versions.get(ws, 0)))
        for sid, changes in sorted(planned.synth_changes.items()):
            ss = synth_stream(self.run_id, sid)
            batches.append((ss, self._stamp([SynthPatched(changes=changes)]), self.store.stream_version(ss)))
        batches.append((ds, self._stamp([done]), director_version))
        recorded = self.store.append_many(batches)
        self._fold(recorded)
        return recorded

    def _fold(self, recorded: list[Recorded]) -> None:
        c = self.canonical
        ws, ds = world_stream(self.run_id), director_stream(self.run_id)
        mind = SynthMind()
        for r in recorded:
            e = r.event
            if e.stream_id == ws:
                apply(c.world, e)
            elif e.stream_id == ds:
                c.director = evolve_director(c.director, e)
            else:
                sid = e.stream_id.rsplit(":synth:", 1)[1]
                c.synths[sid] = mind.evolve(c.synths[sid], e)
            c.versions[e.stream_id] = e.version
            if e.stream_id == ds:
                self._verdict = r

    def stimulus(
        self, text: str, source: str = "operator", principal: str = "", *, stimulus_id: str | None = None
    ) -> Recorded:
        """Queue an outside stimulus: perceived on the next cycle, never written into the
        world. `principal`: who queued it over the control plane. `stimulus_id`: the id the
        log gave it (replay), else a new one."""
        text = text.strip()
        if not text:
            raise ValueError("the stimulus is empty")
        ds = director_stream(self.run_id)
        if stimulus_id is None:
            number = len(self.canonical.director.pending) + self.canonical.versions.get(ds, 0) + 1
            stimulus_id = hashlib.sha256(f"{self.run_id}:{number}:{text}".encode()).hexdigest()[:12]
        event = StimulusQueued(stimulus_id=stimulus_id, text=text, source=source, principal=principal)
        event = event.stamp(run_id=self.run_id)
        (recorded,) = self.store.append(ds, [event], self.canonical.versions.get(ds, 0))
        self.canonical.director = evolve_director(self.canonical.director, recorded.event)
        self.canonical.versions[ds] = recorded.event.version
        self._verdict = recorded
        return recorded

    def save_snapshot(self) -> None:
        """A full-system snapshot at the director's version (see `snapshot.py`)."""
        ds = director_stream(self.run_id)
        version = self.canonical.versions.get(ds, 0)
        if version == 0:
            return
        state = self.canonical.snapshot()
        body = ShellSnapshot(
            schema_version=type(state).schema_version,
            state=state.model_dump(mode="python"),
            keys=[], first=[], last=[],
            actor="director",
            state_type=type(state).__name__,
            **self._where(version),
        )  # fmt: skip
        self.store.save_snapshot(ds, version, body)

    def _where(self, version: int) -> dict[str, Any]:
        """The time and log position of the director's event at `version`, when known."""
        r = self._verdict
        if r is None or r.event.version != version:
            return {}
        return {"timestamp": utc_timestamp(r.event.timestamp), "position": r.position or None}

    def _stamp(self, events: list[Event]) -> list[Event]:
        return [e.stamp(run_id=self.run_id) for e in events]
