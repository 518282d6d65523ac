"""Replaying a session: every cycle re-executed with zero live calls.

The replay drives a `DirectorShell` over a scratch in-memory store, seeded with the
session's first facts (the compiled world, the synths), with each synth's cognitive calls
served from its recorded stream (`ReplayEffects`: the request must hash the same, or the
replay fails closed). Stimuli and admin patches are inputs: they are queued and applied
where the log has them, under the ids the log gave them (a fork's or a restore's copy of
its parent's history keeps ids its parent's run id made). Each cycle runs with the named
behaviour patches its verdict records (`director.BEHAVIOUR_PATCHES`). Then every stream
the replay wrote is compared, event by event, with the log's.

Calls recorded by a cycle that never committed (its director died mid-cycle) are facts
of the synth's stream too: they are copied in before the cycle that follows them, so the
call indexes line up as they did.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.llm.types import LlmRequest, ReplayDivergence
from actors.runtime.perform import ReplayEffects
from actors.runtime.replay.report import Divergence, ReplayReport, first_difference
from actors.simulation import cognition, patches
from actors.simulation.cognition import SynthMind
from actors.simulation.director import CognitionTask, DirectorConfig
from actors.simulation.session import DirectorShell
from actors.simulation.streams import director_stream, is_synth_stream, synth_of, world_stream
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from actors.simulation.events import CycleCommitted, CycleRolledBack, PatchCommitted, StimulusQueued
from events.store import EventStore, Recorded


def replay_session(records: list[Recorded], run_id: str, config: dict[str, Any] | None = None) -> ReplayReport:
    streams: dict[str, list[Event]] = {}
    for r in records:
        streams.setdefault(r.event.stream_id, []).append(r.event)
    for events in streams.values():
        events.sort(key=lambda e: e.version)
    ws, ds = world_stream(run_id), director_stream(run_id)
    report = ReplayReport(run_id)
    world = streams.get(ws, [])
    if not world:
        report.divergence = Divergence(ws, 1, None, None, "the session has no world stream: nothing to replay")
        return report
    synths = {synth_of(s): events for s, events in streams.items() if is_synth_stream(s)}
    scratch = EventStore("memory://")
    scratch.append_many([(ws, [world[0]], 0)] + [(_synth_stream(run_id, sid), [es[0]], 0) for sid, es in synths.items()])
    served = {sid: ReplayEffects(es) for sid, es in synths.items()}
    recorded_calls = {
        sid: {e.call_index: e for e in es if isinstance(e, LlmRequested)} for sid, es in synths.items()
    }
    used: dict[str, int] = {sid: 0 for sid in synths}

    def cognize(tasks: list[CognitionTask]) -> list[list[Event]]:
        out = []
        for t in tasks:
            sid = t.synth_id
            stream = _synth_stream(run_id, sid)

            def llm(request: LlmRequest, call_index: int, sid: str = sid, stream: str = stream) -> list[Event]:
                events = served[sid].llm(request, call_index)
                used[sid] = max(used[sid], call_index)
                return [r.event for r in scratch.append(stream, events, scratch.stream_version(stream))]

            first = recorded_calls[sid].get(t.state.llm_calls + 1)
            model = first.model if first is not None else ""
            params = {k: v for k, v in (first.params if first is not None else {}).items() if k != "seed"}
            out.append(
                cognition.cognize(t.state, t.bundle, llm, model=model, params=params, seed=shell.canonical.world.random_seed)
            )
        return out

    shell = DirectorShell(scratch, run_id, cognize, config=DirectorConfig.model_validate(config or {}), snapshot_every=0)
    reason = ""
    try:
        for e in streams.get(ds, []):
            if isinstance(e, StimulusQueued):
                shell.stimulus(e.text, e.source, e.principal, stimulus_id=e.stimulus_id)
            elif isinstance(e, PatchCommitted):  # re-applied as recorded (refs resolved)
                c = shell.canonical
                planned = patches.plan(c.world, c.synths, patches.parse_operations(e.operations))
                shell.commit_patch(planned, e.principal, e.note, patch_id=e.patch_id)
            elif isinstance(e, CycleCommitted | CycleRolledBack):
                _copy_uncommitted_calls(scratch, shell, run_id, synths, e.llm_calls)
                shell.step(1, behaviour_patches=e.behaviour_patches)
        # Calls a last cycle recorded but never committed (its director died): facts too.
        _copy_uncommitted_calls(scratch, shell, run_id, synths, {sid: [10**9] for sid in synths})
    except (ReplayDivergence, ValueError, KeyError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
    for stream_id in [ws, ds, *(_synth_stream(run_id, sid) for sid in sorted(synths))]:
        original = streams.get(stream_id, [])
        replayed = scratch.read_stream(stream_id)
        report.add(stream_id, original, replayed)
        if report.divergence is None:
            found = first_difference(stream_id, original, replayed)
            if found is not None:
                found.reason = reason  # why the replay stopped, where it first shows
            report.divergence = found
    if report.divergence is None and reason:
        report.divergence = Divergence(ds, 0, None, None, reason)
    return report


def _synth_stream(run_id: str, synth_id: str) -> str:
    return f"sim:{run_id}:synth:{synth_id}"


def _copy_uncommitted_calls(
    scratch: EventStore, shell: DirectorShell, run_id: str, synths: dict[str, list[Event]], calls: dict[str, list[int]]
) -> None:
    """Before a cycle whose first call for a synth is later than the synth's next index,
    copy the calls in between (made by a cycle that never committed) from the log."""
    mind = SynthMind()
    for sid, indexes in calls.items():
        if not indexes:
            continue
        state = shell.canonical.synths[sid]
        gap = [
            e for e in synths[sid]
            if isinstance(e, LlmRequested | LlmCompleted | LlmFailed) and state.llm_calls < e.call_index < min(indexes)
        ]  # fmt: skip
        if not gap:
            continue
        stream = _synth_stream(run_id, sid)
        recorded = scratch.append(stream, [e.model_copy() for e in gap], scratch.stream_version(stream))
        for r in recorded:
            state = mind.evolve(state, r.event)
        shell.canonical.synths[sid] = state
