"""Replay a recorded run: re-execute its actors against the log, with no model, no tools and
no network, and check they decide exactly what they decided the first time.

A replay runs in a scratch in-memory store, so nothing is ever written to the real log.
LLM completions, tool results and clock readings (event timestamps) are served from the
recording; anything the recording does not hold fails closed with the first difference.
Which streams to re-execute, and how, is the run kind's business (its `reading.replay`); the
kind calls `replay_stream` for each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from actors.runtime.behaviour import Behaviour
from actors.runtime.effects import Effects
from actors.runtime.llm.types import ReplayDivergence
from actors.runtime.perform import ReplayEffects, ToolDivergence
from actors.runtime.registry import Registry
from actors.runtime.replay.report import Divergence, ReplayReport, first_difference
from actors.runtime.run import RunLifecycle, UnknownRun, run_stream
from actors.runtime.runkind import RunKind
from actors.runtime.shell import ActorShell, rebuild
from events.base import Event
from events.store import EventStore, Recorded


def run_records(store: EventStore, run_id: str) -> list[Recorded]:
    """Every event of the run, in global order. UnknownRun if it has none."""
    records = list(store.read_all(run_id=run_id))
    if not records:
        raise UnknownRun(f"no run with id {run_id!r}")
    return records


def run_kind_of(store: EventStore, run_id: str, records: list[Recorded] | None = None) -> RunKind:
    """The kind of run `run_id` is, from its RunSubmitted (the default kind if it names none)."""
    stream = run_stream(run_id)
    events = [r.event for r in records if r.event.stream_id == stream] if records is not None else store.read_stream(stream)
    if not events:
        raise UnknownRun(f"no run with id {run_id!r}")
    kind = rebuild(RunLifecycle(), events).kind
    return Registry.run_kind(kind) if kind else Registry.default_run_kind()


def replay_run(store: EventStore, run_id: str) -> ReplayReport:
    records = run_records(store, run_id)
    started = time.perf_counter()
    report = run_kind_of(store, run_id, records).reading.replay(records, run_id)
    report.replay_s = time.perf_counter() - started
    if report.ok and report.events == 0:  # nothing re-executed is not "identical"
        report.divergence = Divergence(
            stream_id=report.streams[0] if report.streams else f"run:{run_id}",
            version=0,
            expected=None,
            actual=None,
            reason="nothing to re-execute: the run holds no agent or workflow stream with events",
        )
    return report


def recorded_clock(original: list[Event]) -> Callable[[int], datetime]:
    """The clock a replayed stream reads: the recorded event's time at each version."""
    return lambda version: original[min(version, len(original)) - 1].timestamp


# events the runtime writes into a stream that its behaviour does not decide: a fork's mark,
# and a person's edit of the prompt the fork continues from (it follows the mark)
FORK_MARKERS = frozenset({"AgentForked", "PromptEdited"})


def _as_recorded(e: Event) -> Event:
    return type(e).model_validate(
        {**e.payload(), "timestamp": e.timestamp, "command_id": e.command_id, "causation_id": e.causation_id, "run_id": e.run_id}
    )


def replay_stream(
    behaviour: Behaviour[Any],
    stream_id: str,
    original: list[Event],
    run_id: str,
    *,
    begin: Callable[[ActorShell[Any]], None],
    execute: Callable[[ActorShell[Any], Effects], Any],
    expected: tuple[type[BaseException], ...] = (),
) -> tuple[list[Event], Divergence | None]:
    """Re-execute one stream against its own recording, in a scratch store: `begin(shell)`
    hands it its recorded start, `execute(shell, effects)` runs it (`drive` for an agent).
    A divergence the effects raise (or one of `expected`) ends it; the first differing event
    is reported either way.

    A fork's stream (one holding a `FORK_MARKERS` event) starts from the history it copied:
    the events up to and including the last marker are the origin's facts (its own replay
    checks them) and the fork's choice of model (or a person's edit of the next prompt), so
    they are seeded as recorded, and what the fork did from there is re-executed."""
    scratch = EventStore("memory://")
    marker = max((i for i, e in enumerate(original) if e.type_name in FORK_MARKERS), default=None)
    if marker is not None:
        scratch.append(stream_id, [_as_recorded(e) for e in original[: marker + 1]], 0)
    shell = ActorShell(
        behaviour, stream_id, scratch, run_id=run_id, snapshot_every=0, clock=recorded_clock(original)
    ).load()
    reason = ""
    try:
        if marker is None:
            begin(shell)
        execute(shell, ReplayEffects(original))
    except (ReplayDivergence, ToolDivergence, *expected) as e:
        reason = str(e).splitlines()[0]
    replayed = scratch.read_stream(stream_id)
    return replayed, first_difference(stream_id, original, replayed, reason)
