"""Replaying a relay: every turn re-executed with zero live calls, every stream compared.

The scheduler's stream is re-executed in a scratch in-memory store from its recorded plan
(RoadmapPlanned and the workspace's starting files), its clock serving the recorded
timestamps; the Builder's and the Verifier's effects are served from their recorded streams
(`ReplayEffects`: a prompt that no longer hashes the same, or a check the log does not
hold, fails closed) and appended to scratch copies of those streams. Then the builder's,
verifier's and scheduler's streams are compared event by event with the log's (in that
order, so the first difference reported is the cause, a changed prompt or check, not
the scheduler's stream ending early).

The Builder's and Verifier's configuration is read from the log too: the model and params
each of their calls was recorded with (a fork may continue with other params), the probes
from the recorded probe calls, whether memory was consulted from the builder's recorded
memory calls.

A replay that matches also reproduces the workspace: the files folded from the replayed
scheduler stream must equal those folded from the log (what the live run ended with, and
mirrored in its git repository); the report says so in a note, or diverges naming the
files that differ.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actors.relay.builder import Builder
from actors.relay.recording import (
    RecordedEffects,
    builder_stream,
    orchestrator_stream,
    scheduler_stream,
    verifier_stream,
)
from actors.relay.roadmap import RoadmapItem, roadmap_from_reply, roadmap_request
from actors.relay.run import drive_relay, plan_relay
from actors.relay.scheduler import RelayState, SchedulerBehaviour, start_turn_id
from actors.relay.verifier import PROBE, Verifier
from actors.relay.workspace import changes_between, digest, fold_workspace
from actors.runtime.llm.types import ReplayDivergence
from actors.runtime.perform import ReplayEffects, ToolDivergence
from actors.runtime.replay.report import Divergence, ReplayReport, first_difference
from actors.runtime.replay.rerun import recorded_clock
from actors.runtime.shell import ActorShell
from events.base import Event
from events.effects import LlmCompleted, LlmRequested, ToolCalled
from actors.relay.events import RoadmapPlanned, WorkspaceChanged
from events.store import EventStore, Recorded


def replay_relay(records: Iterable[Recorded], run_id: str) -> ReplayReport:
    streams: dict[str, list[Event]] = {}
    for r in records:
        streams.setdefault(r.event.stream_id, []).append(r.event)
    for events in streams.values():
        events.sort(key=lambda e: e.version)
    ss, bs, vs = (
        scheduler_stream(run_id),
        builder_stream(run_id),
        verifier_stream(run_id),
    )
    os_ = orchestrator_stream(run_id)
    report = ReplayReport(run_id)
    original = streams.get(ss, [])
    planned = next((e for e in original if isinstance(e, RoadmapPlanned)), None)
    if planned is None:
        report.divergence = Divergence(ss, 1, None, None, "the relay has no roadmap in its log: nothing to replay")
        return report
    recorded_b, recorded_v = streams.get(bs, []), streams.get(vs, [])
    scratch = EventStore("memory://")
    shell = ActorShell(
        SchedulerBehaviour(),
        ss,
        scratch,
        run_id=run_id,
        snapshot_every=0,
        clock=recorded_clock(original),
    )
    shell.load()
    reason = ""
    try:
        _replay_orchestrator(scratch, run_id, planned, streams.get(os_, []))
        start = [e for e in original if isinstance(e, WorkspaceChanged) and e.turn_id == start_turn_id(planned.task_id)]
        items = [RoadmapItem.model_validate(i) for i in planned.items] or [
            RoadmapItem(title=t) for t in planned.roadmap
        ]
        plan_relay(
            shell,
            planned.task,
            items,
            max_retries=planned.max_retries,
            budget=planned.budget,
            files=fold_workspace(start),
            escalation_rollback=planned.escalation_rollback,
        )
        drive_relay(
            shell,
            _builder(recorded_b),
            _verifier(recorded_v),
            RecordedEffects(scratch, bs, run_id, ReplayEffects(recorded_b)),
            RecordedEffects(scratch, vs, run_id, ReplayEffects(recorded_v)),
        )
    except (ReplayDivergence, ToolDivergence, ValueError, KeyError, RuntimeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
    for stream_id in ([os_] if os_ in streams else []) + [
        bs,
        vs,
        ss,
    ]:  # effects first: where a replay diverges names the cause
        before, replayed = streams.get(stream_id, []), scratch.read_stream(stream_id)
        report.add(stream_id, before, replayed)
        if report.divergence is None:
            report.divergence = first_difference(stream_id, before, replayed, reason)
    if report.divergence is None and reason:
        report.divergence = Divergence(ss, 0, None, None, reason)
    if report.divergence is None:
        _check_workspace(report, ss, original, scratch.read_stream(ss))
    return report


def _check_workspace(
    report: ReplayReport, stream_id: str, original: list[Event], replayed: list[Event]
) -> None:
    """The workspace the replay rebuilt against the log's: a note when equal, else a
    divergence naming the files that differ."""
    recorded, rebuilt = fold_workspace(original), fold_workspace(replayed)
    differ = [c["path"] for c in changes_between(recorded, rebuilt)]
    if differ:
        shown = ", ".join(differ[:5]) + (", ..." if len(differ) > 5 else "")
        why = f"the replayed workspace differs from the log's in {len(differ)} file(s): {shown}"
        report.divergence = Divergence(stream_id, 0, None, None, why)
        return
    report.notes.append(
        f"workspace reproduced: {len(recorded)} file(s) rebuilt from the log, the files the run "
        f"ended with (sha256 {digest(recorded)[:12]})"
    )


def _first_call(events: list[Event]) -> tuple[str, dict[str, Any]]:
    first = next((e for e in events if isinstance(e, LlmRequested)), None)
    return (first.model, dict(first.params)) if first is not None else ("", {})


def _calls(events: list[Event]) -> dict[int, tuple[str, dict[str, Any]]]:
    """call index (the builder turn) -> the model and params the call was recorded with."""
    return {
        e.call_index: (e.model, dict(e.params))
        for e in events
        if isinstance(e, LlmRequested)
    }


class _ReplayBuilder(Builder):
    """A Builder whose every turn asks with the model and params its call was recorded with."""

    calls: dict[int, tuple[str, dict[str, Any]]]

    def build(self, state: RelayState, effects: Any) -> Any:
        self.model, self.params = self.calls.get(
            state.turn_number, (self.model, self.params)
        )
        return super().build(state, effects)


class _ReplayVerifier(Verifier):
    """A Verifier whose every coherence check asks as it was recorded (see _ReplayBuilder)."""

    calls: dict[int, tuple[str, dict[str, Any]]]

    def verify(self, state: RelayState, effects: Any, before: Any = None) -> Any:
        self.model, self.params = self.calls.get(
            state.turn_number, (self.model, self.params)
        )
        return super().verify(state, effects, before=before)


def _builder(recorded: list[Event]) -> Builder:
    model, params = _first_call(recorded)
    remembered = any(isinstance(e, ToolCalled) and e.tool == "memory" for e in recorded)
    builder = _ReplayBuilder(model, params, memory=_unavailable if remembered else None)
    builder.calls = _calls(recorded)
    return builder


def _verifier(recorded: list[Event]) -> Verifier:
    model, params = _first_call(recorded)
    calls = [e for e in recorded if isinstance(e, ToolCalled)]
    probes = {c.tool[len(PROBE) :]: c.args.get("argv", []) for c in calls if c.tool.startswith(PROBE)}
    lint = any(c.tool == "ruff" for c in calls) or not calls
    verifier = _ReplayVerifier(model, params, probes=probes, lint=lint)
    verifier.calls = _calls(recorded)
    return verifier


def _unavailable(
    text: str,
) -> list[str]:  # a replay serves memory from the log, never asks it
    raise RuntimeError("a replay has no live memory")


def _replay_orchestrator(scratch: EventStore, run_id: str, planned: RoadmapPlanned, recorded: list[Event]) -> None:
    """The Orchestrator's call again, served from its stream; the roadmap it yields must be
    the one the scheduler recorded."""
    if not recorded:
        return
    model, params = _first_call(recorded)
    effects = RecordedEffects(scratch, orchestrator_stream(run_id), run_id, ReplayEffects(recorded))
    outcome = effects.llm(roadmap_request(planned.task, model, params), 1)[-1]
    if isinstance(outcome, LlmCompleted):
        roadmap = roadmap_from_reply(
            planned.task,
            outcome.parsed if outcome.parsed is not None else outcome.content,
        )
        if [i.recorded() for i in roadmap.items] != planned.items:
            raise ValueError("the orchestrator's recorded reply no longer yields the recorded roadmap")
