"""Where two runs of one kind part (`chorus diff`): their lead streams, event by event,
then what the kind adds (`Reading.diff_lines` of the kind: a relay's two branches' code).

Two events are the same fact when their payloads are equal once each run's own id is set
aside: a fork re-addresses the ids it derives from its run (a relay's turn ids), and the
history it copied is still the history it shares.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.runkind import RunKind
from actors.runtime.replay.rerun import run_kind_of, run_records
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.shell import rebuild
from events.base import Event
from events.store import EventStore, Recorded


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
    # the kind's own lines (its Reading.diff_lines)
    details: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"{self.run_a} and {self.run_b}: the {self.lead_label} share their first {self.shared} events"]
        if self.first_a is None and self.first_b is None:
            out.append("no difference: the same events, in the same order")
        else:
            out.append(f"  {self.run_a}: {_show(self.first_a)}")
            out.append(f"  {self.run_b}: {_show(self.first_b)}")
        out.append(f"  {self.run_a}: {self._tally(self.counts_a)}; {self.end_a}")
        out.append(f"  {self.run_b}: {self._tally(self.counts_b)}; {self.end_b}")
        return out + self.details

    def _tally(self, counts: Counter[str]) -> str:
        parts = [f"{counts.get(k, 0)} {name}" for k, name in self.tallies.items()]
        return ", ".join(parts + [f"{sum(counts.values())} events"])


def diff_runs(store: EventStore, run_a: str, run_b: str) -> RunDiff:
    """Where two runs of one kind part: the leading events their lead streams share, the
    first that differs on each side, and what each did in all."""
    kinds, records, (a, b), shared = lead_streams(store, run_a, run_b)
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
        kinds[0].wording.lead_label,
        kinds[0].wording.lead,
        dict(kinds[0].wording.tallies),
        kinds[0].reading.diff_lines(run_a, records[0], run_b, records[1])
        if kinds[0].name == kinds[1].name
        else [],
    )


def lead_streams(
    store: EventStore, run_a: str, run_b: str
) -> tuple[list[RunKind], list[list[Recorded]], tuple[list[Event], list[Event]], int]:
    """Both runs' kinds, records and lead streams, and how many leading lead events they
    share (the same fact, each run's own id set aside). ValueError for runs of two kinds."""
    kinds, streams, records = [], [], []
    for run_id in (run_a, run_b):
        records.append(run_records(store, run_id))
        kind = run_kind_of(store, run_id, records[-1])
        kinds.append(kind)
        streams.append(kind.reading.lead_events(records[-1], run_id))
    if kinds[0].wording.lead != kinds[1].wording.lead:
        raise ValueError(
            f"run {run_a} is {kinds[0].wording.noun} run and run {run_b} {kinds[1].wording.noun} run; diff compares runs of one kind"
        )
    a, b = streams
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x.type_name != y.type_name or _fact(x, run_a) != _fact(y, run_b):
            break
        shared += 1
    return kinds, records, (a, b), shared


def _fact(e: Event, run_id: str | None = None) -> dict[str, Any]:
    payload = e.payload()
    payload.pop("latency_s", None)  # how long a call took is not what it decided
    return payload if run_id is None else _own_ids(payload, run_id)


def _own_ids(value: Any, run_id: str) -> Any:
    """`value` with the run's own id (alone, or leading `id:...`) set aside as `<run>`."""
    if isinstance(value, str):
        if value == run_id or value.startswith(run_id + ":"):
            return "<run>" + value[len(run_id) :]
        return value
    if isinstance(value, dict):
        return {k: _own_ids(v, run_id) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_own_ids(v, run_id) for v in value]
    return value


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
