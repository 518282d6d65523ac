"""Where two runs of one kind part (`chorus diff`): their lead streams, event by event."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.replay.rerun import run_kind_of, run_records
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.shell import rebuild
from events.base import Event
from events.store import EventStore


@dataclass
class RunDiff:
    run_a: str
    run_b: str
    shared: int  # leading events of the lead streams that are the same fact
    first_a: Event | None
    first_b: Event | None
    counts_a: Counter[str]
    counts_b: Counter[str]
    end_a: str
    end_b: str
    lead_label: str = "lead actors"
    kind: str = "actor"  # what led both runs ("agent", "workflow")
    tallies: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"{self.run_a} and {self.run_b}: the {self.lead_label} share their first {self.shared} events"]
        if self.first_a is None and self.first_b is None:
            out.append("no difference: the same events, in the same order")
        else:
            out.append(f"  {self.run_a}: {_show(self.first_a)}")
            out.append(f"  {self.run_b}: {_show(self.first_b)}")
        out.append(f"  {self.run_a}: {self._tally(self.counts_a)}; {self.end_a}")
        out.append(f"  {self.run_b}: {self._tally(self.counts_b)}; {self.end_b}")
        return out

    def _tally(self, counts: Counter[str]) -> str:
        parts = [f"{counts.get(k, 0)} {name}" for k, name in self.tallies.items()]
        return ", ".join(parts + [f"{sum(counts.values())} events"])


def diff_runs(store: EventStore, run_a: str, run_b: str) -> RunDiff:
    """Where two runs of one kind part: the leading events their lead streams share, the
    first that differs on each side, and what each did in all."""
    kinds, streams = [], []
    for run_id in (run_a, run_b):
        records = run_records(store, run_id)
        kind = run_kind_of(store, run_id, records)
        kinds.append(kind)
        streams.append(kind.lead_events(records, run_id))
    if kinds[0].lead != kinds[1].lead:
        raise ValueError(
            f"run {run_a} is {kinds[0].noun} run and run {run_b} {kinds[1].noun} run; diff compares runs of one kind"
        )
    a, b = streams
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x.type_name != y.type_name or _fact(x) != _fact(y):
            break
        shared += 1
    return RunDiff(
        run_a,
        run_b,
        shared,
        a[shared] if shared < len(a) else None,
        b[shared] if shared < len(b) else None,
        Counter(e.type_name for e in a),
        Counter(e.type_name for e in b),
        _end(store, run_a),
        _end(store, run_b),
        kinds[0].lead_label,
        kinds[0].lead,
        dict(kinds[0].tallies),
    )


def _fact(e: Event) -> dict[str, Any]:
    payload = e.payload()
    payload.pop("latency_s", None)  # how long a call took is not what it decided
    return payload


def _end(store: EventStore, run_id: str) -> str:
    run = rebuild(RunLifecycle(), store.read_stream(run_stream(run_id)))
    origin = f" (a fork of {run.forked_from})" if run.forked_from else ""
    if run.status == "completed":
        return f"completed: {(run.result or '')[:160]!r}{origin}"
    if run.status == "failed" and run.error:
        return f"failed: {run.error.line()}{origin}"
    return run.status + origin


def _show(e: Event | None) -> str:
    if e is None:
        return "(no more events)"
    text = json.dumps(_fact(e), default=str, ensure_ascii=False)
    return f"@{e.version} {e.type_name} {text[:240]}"
