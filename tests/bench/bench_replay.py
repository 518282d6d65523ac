"""Replay throughput: events per second through `replay_run`, against the fastest plain read
of the same events.

    .venv/bin/python -m tests.bench.bench_replay                         # fixtures + a 1,000-step run (~1 min)
    .venv/bin/python -m tests.bench.bench_replay --steps 100,1000 --rounds 5 --backends sqlite,postgres

What replay costs beyond reading the log. Replay (`actors.runtime.replay.replay_run`, what
`chorus replay` and the fixture tests run) reads the run's events as typed events
(`run_records`: `EventStore.read_all` filtered by run, pydantic per event), finds the run's
kind, and re-executes each agent or workflow stream in a scratch in-memory store with LLM
completions, tool results and the clock served from the recording, comparing every event
it produces with the recorded one. Three operations per workload, turn about (two turns a
round, the second in reverse order, times summed per round):

- **raw read**: the log read with `projections.log_reader.read_stored`, page by page (5,000),
  the tuple reader projection rebuilds use, nothing decoded: the fastest read Chorus has
  (the same baseline as `bench_projections`);
- **typed read**: `run_records(store, run_id)`, the read replay starts with;
- **replay**: `replay_run(store, run_id)`, checked identical (`report.ok`) on every call.

Ratio = raw read time / replay time (<= 1: replay reads and then does more); "beyond the
read" = (replay time - raw read time) / events, in microseconds per event.

Workloads, each run in its own store (a fresh SQLite file or PostgreSQL schema), so the
run's events are the whole log and the raw read reads exactly them:
- every recorded fixture in tests/fixtures/runs/*.jsonl (loaded with `load_fixture`; local
  model and scripted runs of every kind: agent, code questions, relay, research, simulation,
  task director), summed over the fixtures;
- a generated N-step ReAct run, recorded the way `tests.bench.bench_bytes` records it (the
  real agent, a scripted model that reads one line of a file per step, the real
  `read_file` tool; `ActorShell` + `drive` + `LiveEffects`, no Ray), for each `--steps`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eventsourcing.persistence import StoredEvent

from actors.runtime.replay import load_fixture, replay_run, run_records
from events.store import EventStore
from projections.log_reader import read_stored
from tests.bench.bench_store import (
    backends_from,
    fresh_url,
    interleaved,
    machine,
    med,
    per_round,
    spread,
    table,
)

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "runs").glob("*.jsonl"))
PAGE = 5_000


@dataclass
class Recorded:
    store: EventStore
    run_id: str


def raw_read(runs: list[Recorded]) -> Callable[[], int]:
    """Each store's log read the way a stored-record projection rebuild reads it."""

    def read() -> int:
        count = 0
        for r in runs:
            head, after = r.store.max_position(), 0
            while after < head:
                rows = read_stored(r.store, after, head, PAGE)
                count += len(rows)
                if len(rows) < PAGE:
                    break
                after = rows[-1].position
        return count

    return read


def typed_read(runs: list[Recorded]) -> Callable[[], int]:
    return lambda: sum(len(run_records(r.store, r.run_id)) for r in runs)


def replay(runs: list[Recorded]) -> Callable[[], int]:
    def go() -> int:
        replayed = 0
        for r in runs:
            report = replay_run(r.store, r.run_id)
            if not report.ok:
                raise SystemExit(f"replay of {r.run_id} diverged: {report.divergence.describe()}")
            replayed += report.events
        return replayed

    return go


def generated_run(steps: int, workdir: Path, url: str) -> Recorded:
    """An N-step ReAct run recorded as bench_bytes records it (into its own SQLite file),
    then copied stored event for stored event into the store at `url`."""
    from tests.bench.bench_bytes import run_chorus

    run_chorus(steps, workdir)
    source = EventStore(f"sqlite:///{workdir / 'chorus.db'}")
    try:
        head = source.max_position()
        rows = source.recorder.select_notifications(1, head, stop=head)
        run_id = next(iter(source.read_all(1, to_position=1))).event.run_id
    finally:
        source.close()
    store = EventStore(url)
    pending = [StoredEvent(n.originator_id, n.originator_version, n.topic, n.state) for n in rows]
    for i in range(0, len(pending), 1_000):
        store.recorder.insert_events(pending[i : i + 1_000])
    return Recorded(store, run_id)


def measure(label: str, backend: str, runs: list[Recorded], rounds: int) -> list[str]:
    ops = {"raw": raw_read(runs), "typed": typed_read(runs), "replay": replay(runs)}
    events = ops["raw"]()
    typed = ops["typed"]()
    reexecuted = ops["replay"]()  # warm-up, and a check that every run replays identically
    assert typed == events, (label, typed, events)
    secs = per_round(interleaved(ops, 2, rounds))
    raw, rep, typ = secs["raw"], secs["replay"], secs["typed"]
    ratios = [a / b for a, b in zip(raw, rep, strict=True)]
    beyond = [1e6 * (b - a) / (2 * events) for a, b in zip(raw, rep, strict=True)]  # 2 calls a round
    print(f"  {backend} {label}: {events:,} events, replay {2 * events / med(rep):,.0f} ev/s", flush=True)
    return [
        backend, label, f"{len(runs)}", f"{events:,}", f"{reexecuted:,}",
        f"{2 * events / med(raw):,.0f}", f"{2 * events / med(typ):,.0f}", f"{2 * events / med(rep):,.0f}",
        f"**{med(ratios):.3f}**", spread(ratios) if max(ratios) >= 0.01 else f"{min(ratios):.4f}–{max(ratios):.4f}",
        f"{med(beyond):,.0f}",
    ]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--steps", default="1000", help="generated runs' lengths in steps ('' for none)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians reported")
    p.add_argument("--no-fixtures", action="store_true", help="leave out the recorded fixtures")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.steps.split(",") if s.strip()]
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="chorus-bench-replay-") as tmpdir:
        for backend in backends_from(args.backends):
            if not args.no_fixtures:
                with contextlib.ExitStack() as stack:
                    runs = []
                    for i, path in enumerate(FIXTURES):
                        store = EventStore(stack.enter_context(fresh_url(backend, tmpdir, f"fx{i}")))
                        stack.callback(store.close)
                        _, run_id = load_fixture(path, store)
                        runs.append(Recorded(store, run_id))
                    rows.append(measure("recorded fixtures (all, summed)", backend, runs, args.rounds))
            for n in sizes:
                workdir = Path(tempfile.mkdtemp(dir=tmpdir, prefix=f"gen{n}-"))
                with fresh_url(backend, tmpdir, f"gen{n}") as url:
                    run = generated_run(n, workdir, url)
                    try:
                        rows.append(measure(f"generated ReAct run, {n:,} steps", backend, [run], args.rounds))
                    finally:
                        run.store.close()
    table(
        f"Replay throughput against a raw read of the same events ({args.rounds} rounds)",
        ["backend", "workload", "runs", "events", "re-executed", "raw read ev/s", "typed read ev/s",
         "replay ev/s", "ratio", "ratio range", "beyond the read µs/event"],
        rows,
    )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
