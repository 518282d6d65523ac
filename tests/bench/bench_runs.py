"""Listing runs: the runs view against the scan of the log that `Client.runs()` made.

    .venv/bin/python -m tests.bench.bench_runs                       # 1,000 runs, 100,000 events
    .venv/bin/python -m tests.bench.bench_runs --backends sqlite --rounds 9 --runs 2000

Baseline, the old way (as `Client.runs()` did on every call): `EventStore.read_all` of
every RunSubmitted, RunCompleted and RunFailed of the log, folded into a row per run,
sorted newest first, the first 20 kept. Against it, turn about in the same run:

- `list`: `RunsView(views).list(20)` on the caught-up view (one indexed query);
- `open + list`: `RunsView.open(store).list(20)`, what `Client.runs()` is to do on each call
  (the view's schema version, its position and the log's head read; nothing to catch up);
- `rebuild`: `ProjectionRunner.rebuild("runs")`, the one-time cost (drop, create, read
  the lifecycle events from position 0, write a row per run).

Then, outside the interleaved rounds, `catch-up + list`: one new run's events appended
(untimed), then `RunsView.open(store).list(20)` (catches the view up by that run, then
lists): what `chorus runs` costs after each run.

Ratio = baseline time / operation time: how many times faster than the scan (> 1 is
faster). Medians of the per-round ratios.

The log: `--runs` runs (default 1,000) of 100 events each (99 for a run still running),
interleaved four at a time as concurrent runs are: RunSubmitted, RunStarted, RunCompleted | RunFailed on `run:ID`,
and AgentStarted, 19 x (LlmRequested, LlmCompleted, StepDecided, ToolCalled,
ToolReturned), AnswerGiven on `agent:ID`. One run in ten fails, one in twenty is still
running (no end), one in ten is a fork of an earlier run. Written through the recorder in
transactions of ~1,000 events on a fresh SQLite file and PostgreSQL schema, then
ANALYZEd (PostgreSQL).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from eventsourcing.persistence import StoredEvent

from actors.agent.events import AgentStarted, AnswerGiven, StepDecided, ToolSpec
from events.base import Event
from events.codec import encode_event
from events.effects import LlmCompleted, LlmRequested, ToolCalled, ToolReturned
from events.errors import ErrorInfo
from events.runs import RunCompleted, RunFailed, RunStarted, RunSubmitted
from events.store import EventStore
from projections import ProjectionRunner, RunsProjection, RunsView
from tests.bench.bench_projections import SYSTEM, analyze
from tests.bench.bench_store import backends_from, fresh_url, interleaved, machine, med, per_round, table

STEPS = 19  # 1 + 5 * STEPS + 1 agent events and 3 run events: 100 per run
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LIMIT = 20


def old_runs(store: EventStore, limit: int | None = None) -> list[dict[str, Any]]:
    """`Client.runs()` before the view: every lifecycle event of the log, on every call."""
    rows: dict[str, dict[str, Any]] = {}
    for rec in store.read_all(types=("RunSubmitted", "RunCompleted", "RunFailed")):
        e: Any = rec.event
        if e.type_name == "RunSubmitted":
            rows[e.run_id] = {
                "run_id": e.run_id, "status": "submitted", "goal": e.goal,
                "kind": e.kind, "forked_from": e.forked_from,
                "submitted_at": e.timestamp, "ended_at": None,
            }  # fmt: skip
        elif e.run_id in rows:
            rows[e.run_id]["status"] = "completed" if e.type_name == "RunCompleted" else "failed"
            rows[e.run_id]["ended_at"] = e.timestamp
    out = sorted(rows.values(), key=lambda r: r["submitted_at"], reverse=True)
    return out[:limit] if limit else out


def run_events(n: int) -> Iterator[list[Event]]:
    """One run's events, command by command (each a list stamped with stream and version)."""
    run = f"run-{n:06d}"
    agent, lifecycle = f"agent:{run}", f"run:{run}"
    at = T0 + timedelta(minutes=n)
    tick = iter(range(10_000))
    versions = {agent: 0, lifecycle: 0}

    def stamped(stream: str, *events: Event) -> list[Event]:
        out = []
        for e in events:
            versions[stream] += 1
            out.append(e.stamp(
                stream_id=stream, version=versions[stream], run_id=run,
                timestamp=at + timedelta(milliseconds=137 * next(tick) + 1, microseconds=n % 997),
            ))
        return out

    forked = f"run-{n // 2:06d}@{40 + n % 50}" if n % 10 == 3 else None
    yield stamped(lifecycle, RunSubmitted(goal=f"Which file defines the Registry class? ({n})", params={"root": "."},
                                          kind="task" if n % 7 == 0 else "react", forked_from=forked))
    yield stamped(lifecycle, RunStarted(lead_stream=agent))
    tools = [ToolSpec(name="search", signature="search(query: str)", description="grep the tree")]
    yield stamped(agent, AgentStarted(goal="Which file defines the Registry class?", root=".", tools=tools,
                                      max_iterations=STEPS + 1, model="qwen2.5-coder-1.5b-instruct"))
    for i in range(1, STEPS + 1):
        thought = f"Step {i}: look for the class definition in the runtime package next."
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"goal and {i - 1} steps"}]
        yield stamped(
            agent,
            LlmRequested(model="qwen2.5-coder-1.5b-instruct", messages=messages,
                         params={"seed": 7, "temperature": 0.0}, request_hash=f"{n:08x}{i:04x}" * 4, call_index=i),
            LlmCompleted(request_hash=f"{n:08x}{i:04x}" * 4, call_index=i, prompt_tokens=812 + 40 * i,
                         content='{"thought": "%s", "action": "search"}' % thought, completion_tokens=48,
                         latency_s=9.6),
            StepDecided(iteration=i, thought=thought, action="search", args={"query": "class Registry"}),
        )
        yield stamped(
            agent,
            ToolCalled(tool="search", args={"query": "class Registry"}, call_index=i),
            ToolReturned(tool="search", call_index=i, ok=True, output="actors/runtime/registry.py:53: class Registry:\n" * 6),
        )
    yield stamped(agent, AnswerGiven(iteration=STEPS + 1, thought="found it", answer="actors/runtime/registry.py"))
    if n % 20 == 7:
        return  # still running
    if n % 10 == 5:
        yield stamped(lifecycle, RunFailed(error=ErrorInfo(type="actor_died", reason="RuntimeError", message="boom")))
    else:
        yield stamped(lifecycle, RunCompleted(result="actors/runtime/registry.py", llm_calls=STEPS, tokens=9000))


def interleave(first: int, count: int, width: int = 4) -> Iterator[Event]:
    """Runs `first` .. `first + count - 1`, `width` at a time, their commands alternating."""
    for start in range(first, first + count, width):
        runs = [run_events(n) for n in range(start, min(start + width, first + count))]
        while runs:
            for r in list(runs):
                command = next(r, None)
                if command is None:
                    runs.remove(r)
                else:
                    yield from command


def write(store: EventStore, events: Iterator[Event], chunk: int = 1_000) -> None:
    pending: list[StoredEvent] = []
    for e in events:
        pending.append(StoredEvent(e.stream_id, e.version, e.type_name, encode_event(e)))
        if len(pending) >= chunk:
            store.recorder.insert_events(pending)
            pending = []
    if pending:
        store.recorder.insert_events(pending)


def as_old(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The view's rows as the old scan showed them (it did not read RunStarted)."""
    return [{**r, "status": "submitted" if r["status"] == "running" else r["status"]} for r in rows]


def bench(backends: list[str], args: argparse.Namespace, tmpdir: str) -> str:
    rows: list[list[str]] = []
    for backend in backends:
        with fresh_url(backend, tmpdir, "runs") as url:
            store = EventStore(url)
            try:
                t = time.perf_counter()
                write(store, interleave(1, args.runs))
                analyze(store)
                n = store.max_position()
                print(f"{backend}: {args.runs:,} runs, {n:,} events written in {time.perf_counter() - t:.0f}s", flush=True)
                runner = ProjectionRunner(store, [RunsProjection()])
                t = time.perf_counter()
                runner.run_once()
                print(f"  first catch-up of the view: {time.perf_counter() - t:.2f}s", flush=True)
                view = RunsView(runner.views)
                ops: dict[str, Callable[[], Any]] = {
                    "scan": lambda: old_runs(store, LIMIT),
                    "list": lambda: view.list(LIMIT),
                    "open": lambda: RunsView.open(store).list(LIMIT),
                    "rebuild": lambda: runner.rebuild("runs"),
                }
                assert as_old(view.list(LIMIT)) == old_runs(store, LIMIT)
                assert as_old(view.list()) == old_runs(store)
                assert len(view.list()) == args.runs
                for name, op in ops.items():  # warm up
                    op()
                secs = per_round(interleaved(ops, args.calls, args.rounds), med)
                scan = secs["scan"]
                for name, label in (
                    ("list", f"list {LIMIT} newest, caught-up view"),
                    ("open", f"open + list {LIMIT} newest (nothing to catch up)"),
                    ("rebuild", "rebuild of the view (one-time)"),
                ):
                    ratios = [s / o for s, o in zip(scan, secs[name], strict=True)]
                    rows.append([
                        backend, label, f"{n:,}", f"{1000 * med(scan):.1f}", f"{1000 * med(secs[name]):.2f}",
                        f"**{ratio(med(ratios))}**", f"{ratio(min(ratios))}–{ratio(max(ratios))}",
                    ])
                rows.append(catch_up_row(backend, store, args, n, med(scan)))
                assert as_old(RunsView.open(store).list(LIMIT)) == old_runs(store, LIMIT)
            finally:
                store.close()
    return table(
        f"Listing the {LIMIT} newest of {args.runs:,} runs: the runs view against the scan of the log "
        f"({args.rounds} rounds, median of {args.calls} calls each)",
        ["backend", "operation", "events", "scan ms", "operation ms", "ratio (scan / op)", "ratio range"],
        rows,
    )


def catch_up_row(backend: str, store: EventStore, args: argparse.Namespace, n: int, scan: float) -> list[str]:
    """One new run appended (untimed), then open + list, which catches the view up by it."""
    took = []
    for i in range(args.rounds):
        write(store, interleave(args.runs + 1 + i, 1))
        t = time.perf_counter()
        listed = RunsView.open(store).list(LIMIT)
        took.append(time.perf_counter() - t)
        assert listed[0]["run_id"] == f"run-{args.runs + 1 + i:06d}"
    return [
        backend, "catch-up by one run (100 events) + list", f"{n:,}", f"{1000 * scan:.1f}",
        f"{1000 * med(took):.2f}", f"**{ratio(scan / med(took))}**", f"{ratio(scan / max(took))}–{ratio(scan / min(took))}",
    ]


def ratio(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--runs", type=int, default=1_000, help="runs in the log, 100 events each")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians reported")
    p.add_argument("--calls", type=int, default=3, help="calls of each operation per round")
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmpdir:
        bench(backends_from(args.backends), args, tmpdir)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
