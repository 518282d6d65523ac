"""Group commit: 1, 10 and 50 concurrent writers against the single-writer rate.

    .venv/bin/python -m tests.bench.bench_group_commit                # ~2-3 minutes
    .venv/bin/python -m tests.bench.bench_group_commit --backends postgres --rounds 5
    .venv/bin/python -m tests.bench.bench_group_commit --processes --ray  # + other processes

Writers are threads sharing one `EventStore` (as the actors of one process, or a
store-writer serving many callers, do); each appends one event at a time to a stream of
its own (`store.append(stream, [e], v)`, the shell's append), so every append is a
transaction of its own unless group commit puts it with others. Measured per backend, on
a fresh SQLite file / PostgreSQL schema each, configurations taking turns within each
round (so load from elsewhere hits all alike), median of the rounds:

- the single-writer rate: 1 writer, group commit off (each append is the library
  recorder's own transaction) — the rate before group commit;
- 1, 10 and 50 writers with group commit on (the default), with the mean batch size and
  the time each batch spends in its transaction (lock wait, insert, commit);
- 10 and 50 writers with group commit off (every append takes the table lock itself);
- on PostgreSQL, `synchronous_commit=off` for 1 and 50 writers (through PGOPTIONS): what
  the WAL flush at each commit costs, i.e. where the ceiling is;
- the stock library's recorder (eventsourcing's own application recorder, on a schema of
  its own), 1 and 50 writers each calling its `insert_events` with the same encoded
  event: the rate before our recorders and group commit, the baseline of the last column.

With `--processes`, also N separate processes, each its own store: appends from different
processes do not share a committer, so they queue on PostgreSQL's table lock. With `--ray`,
N Ray actors appending each through a store of its own, against the same N appending
through one store-writer actor (`ray.remote(EventStore)` with `max_concurrency`, called
with `append_encoded`): group commit across processes.

The last lines read: `group commit: 50 writers X.Xx the single-writer rate, Y.Yx the stock
library recorder's (postgres)`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import StoredEvent

from events.store import EventStore, encode_append
from tests.bench.bench_store import (
    LibApp,
    backends_from,
    fresh_url,
    library_env,
    machine,
    our_event,
    table,
)

# (label, writers, group commit on, extra PGOPTIONS)
CONFIGS = [
    ("single writer, group commit off", 1, False, ""),
    ("1 writer", 1, True, ""),
    ("10 writers", 10, True, ""),
    ("50 writers", 50, True, ""),
    ("10 writers, group commit off", 10, False, ""),
    ("50 writers, group commit off", 50, False, ""),
]
PG_ONLY = [
    ("1 writer, synchronous_commit=off, group commit off", 1, False, "-c synchronous_commit=off"),
    ("50 writers, synchronous_commit=off", 50, True, "-c synchronous_commit=off"),
]


# (label, writers): the stock library's recorder, one insert_events per append
LIBRARY = [
    ("stock library recorder, 1 writer", 1),
    ("stock library recorder, 50 writers", 50),
]


def with_group(url: str, on: bool) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}group_commit={'on' if on else 'off'}"


class Timed:
    """Wraps the committer's batch writer: seconds per batch, batch sizes."""

    def __init__(self, write: Callable[[list[Any]], None]) -> None:
        self.write = write
        self.seconds: list[float] = []
        self.sizes: list[int] = []

    def __call__(self, batch: list[Any]) -> None:
        t0 = time.perf_counter()
        try:
            self.write(batch)
        finally:
            self.seconds.append(time.perf_counter() - t0)
            self.sizes.append(len(batch))


def timed_threads(writers: int, body: Callable[[int], None]) -> float:
    """Run `body(w)` in `writers` threads started together; the seconds until all end.
    Raises the first error a thread met."""
    start = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            start.wait()
            body(w)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return took


def run_threads(url: str, writers: int, group: bool, pgoptions: str, total: int) -> dict[str, float]:
    """`writers` threads on one store append `total` single events between them;
    returns events per second (wall) and batch figures."""
    old = os.environ.get("PGOPTIONS")
    if pgoptions:
        os.environ["PGOPTIONS"] = pgoptions
    try:
        store = EventStore(with_group(url, group))
    finally:
        if pgoptions:
            if old is None:
                os.environ.pop("PGOPTIONS", None)
            else:
                os.environ["PGOPTIONS"] = old
    timed = None
    if store.group is not None:
        timed = store.group.write = Timed(store.group.write)
    per = max(1, total // writers)
    tag = uuid.uuid4().hex[:6]
    try:
        # Warm up: a connection per pool slot, prepared statements.
        for i in range(3):
            store.append(f"warm-{tag}", [our_event(i)], i)
        if timed is not None:
            timed.seconds.clear()
            timed.sizes.clear()
        def append_all(w: int) -> None:
            stream = f"w{w}-{tag}"
            for v in range(per):
                store.append(stream, [our_event(v)], v)

        took = timed_threads(writers, append_all)
    finally:
        store.close()
    out = {"rate": writers * per / took}
    if timed is not None and timed.sizes:
        out["batch"] = statistics.mean(timed.sizes)
        out["txn_ms"] = statistics.median(timed.seconds) * 1e3
        out["busy"] = sum(timed.seconds) / took  # share of the wall time inside a transaction
    return out


def run_library_threads(url: str, writers: int, total: int) -> dict[str, float]:
    """`writers` threads append `total` single events through the stock library's
    application recorder (`insert_events`, its own transaction and table lock each)."""
    app = LibApp(env=library_env(url))
    recorder = app.recorder
    per = max(1, total // writers)
    try:
        recorder.insert_events([StoredEvent(uuid.uuid4(), 1, *encode_append([("warm", [our_event(0)], 0)])[1][0][2][0])])
        def append_all(w: int) -> None:
            stream = uuid.uuid4()  # the library's stock id type
            for v in range(per):
                # The same work as `store.append` asks of its caller: stamp and encode.
                [(topic, state)] = encode_append([(str(stream), [our_event(v)], v)])[1][0][2]
                recorder.insert_events([StoredEvent(stream, v + 1, topic, state)])

        took = timed_threads(writers, append_all)
    finally:
        app.close()
    return {"rate": writers * per / took}


def _process_writer(url: str, per: int, start: Any, q: Any) -> None:
    store = EventStore(url)
    stream = f"p{os.getpid()}-{uuid.uuid4().hex[:6]}"
    store.append(stream, [our_event(0)], 0)
    start.wait()
    t0 = time.perf_counter()
    for v in range(1, per + 1):
        store.append(stream, [our_event(v)], v)
    q.put((t0, time.perf_counter()))
    store.close()


def run_processes(url: str, n: int, total: int) -> dict[str, float]:
    ctx = multiprocessing.get_context("spawn")
    per = max(1, total // n)
    start = ctx.Barrier(n)
    q = ctx.Queue()
    procs = [ctx.Process(target=_process_writer, args=(url, per, start, q)) for _ in range(n)]
    for p in procs:
        p.start()
    spans = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    took = max(e for _, e in spans) - min(s for s, _ in spans)
    return {"rate": n * per / took}


class RayAppender:
    """A Ray actor (a process of its own) appending one event at a time to its stream,
    through a store-writer actor or through a store of its own."""

    def __init__(self, url: str, writer: Any = None) -> None:
        self.writer = writer
        self.store = None if writer is not None else EventStore(url)
        self.stream = f"ray-{uuid.uuid4().hex[:8]}"
        self.version = 0

    def run(self, n: int) -> int:
        import ray

        from events.store import encode_append

        for _ in range(n):
            e = our_event(self.version)
            if self.writer is None:
                self.store.append(self.stream, [e], self.version)
            else:
                _, encoded = encode_append([(self.stream, [e], self.version)])
                ray.get(self.writer.append_encoded.remote(encoded))
            self.version += 1
        return self.version


def run_ray(url: str, n: int, total: int, via_writer: bool) -> dict[str, float]:
    import ray

    writer = None
    if via_writer:
        writer = ray.remote(EventStore).options(max_concurrency=max(8, 2 * n), num_cpus=0).remote(url)
    actors = [ray.remote(RayAppender).options(num_cpus=0).remote(url, writer) for _ in range(n)]
    try:
        ray.get([a.run.remote(2) for a in actors])  # warm up: connections, imports
        stats0 = ray.get(writer.group_stats.remote()) if writer else None
        per = max(1, total // n)
        t0 = time.perf_counter()
        ray.get([a.run.remote(per) for a in actors])
        took = time.perf_counter() - t0
        out = {"rate": n * per / took}
        if writer is not None:
            stats = ray.get(writer.group_stats.remote())
            batches = stats["batches"] - stats0["batches"]
            out["batch"] = (stats["appends"] - stats0["appends"]) / max(1, batches)
        return out
    finally:
        for a in actors:
            ray.kill(a)
        if writer is not None:
            ray.get(writer.close.remote())
            ray.kill(writer)


def bench(backend: str, args: argparse.Namespace, tmpdir: str) -> dict[str, dict[str, float]]:
    configs = CONFIGS + (PG_ONLY if backend == "postgres" else [])
    samples: dict[str, list[dict[str, float]]] = {c[0]: [] for c in configs}
    proc_labels = [f"{n} processes, a store each" for n in args.process_counts] if args.processes else []
    ray_labels = []
    if args.ray:
        ray_labels = [(f"{n} Ray actors, a store each", n, False) for n in args.ray_counts]
        ray_labels += [(f"{n} Ray actors through a store-writer actor", n, True) for n in args.ray_counts]
    for label in proc_labels + [r[0] for r in ray_labels] + [lib[0] for lib in LIBRARY]:
        samples[label] = []
    with fresh_url(backend, tmpdir, "gc") as url, fresh_url(backend, tmpdir, "gclib") as lib_url:
        for rnd in range(args.rounds):
            order = configs if rnd % 2 == 0 else configs[::-1]
            for label, writers, group, pgoptions in order:
                total = args.single if writers == 1 else args.total
                samples[label].append(run_threads(url, writers, group, pgoptions, total))
            for label, writers in LIBRARY:
                total = args.single if writers == 1 else args.total
                samples[label].append(run_library_threads(lib_url, writers, total))
            for label, n in zip(proc_labels, args.process_counts if args.processes else [], strict=True):
                samples[label].append(run_processes(url, n, args.total))
            for label, n, via in ray_labels:
                samples[label].append(run_ray(url, n, args.total, via))
            print(f"[{backend}] round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    result: dict[str, dict[str, float]] = {}
    for label, runs in samples.items():
        result[label] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        result[label]["ratio"] = statistics.median(
            r["rate"] / base["rate"] for r, base in zip(runs, samples[CONFIGS[0][0]], strict=True)
        )
        result[label]["vs_library"] = statistics.median(
            r["rate"] / base["rate"] for r, base in zip(runs, samples[LIBRARY[0][0]], strict=True)
        )
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--rounds", type=int, default=3, help="rounds; medians reported")
    p.add_argument("--single", type=int, default=300, help="appends by a single writer per round")
    p.add_argument("--total", type=int, default=3000, help="appends shared by N writers per round")
    p.add_argument("--processes", action="store_true", help="also N processes with a store each")
    p.add_argument("--process-counts", type=lambda s: [int(x) for x in s.split(",")], default=[10])
    p.add_argument("--ray", action="store_true", help="also N Ray actors: a store each / one store-writer actor")
    p.add_argument("--ray-counts", type=lambda s: [int(x) for x in s.split(",")], default=[10])
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    backends = backends_from(args.backends)
    if args.ray:
        import logging

        import ray

        from tests.support.ray_env import worker_path

        worker_path()  # Ray workers import this module by name
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    results = {}
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmpdir:
        for backend in backends:
            results[backend] = bench(backend, args, tmpdir)
    rows = []
    for backend, res in results.items():
        for label, r in res.items():
            rows.append([
                backend, label, f"{r['rate']:,.0f}", f"**{r['ratio']:.1f}**", f"{r['vs_library']:.1f}",
                f"{r['batch']:.1f}" if "batch" in r else "–",
                f"{r['txn_ms']:.2f}" if "txn_ms" in r else "–",
                f"{r['busy']:.0%}" if "busy" in r else "–",
            ])
    table(
        "Group commit (events/s, one event per append; ratio = rate / the single-writer rate, group commit off;"
        " vs library = rate / the stock library recorder's single-writer rate)",
        ["backend", "writers", "events/s", "ratio", "vs library", "mean batch", "ms per batch transaction", "time in transactions"],
        rows,
    )
    print(f"total {time.perf_counter() - started:.0f} s")
    for backend in ("sqlite", "postgres"):
        if backend in results:
            fifty = results[backend]["50 writers"]
            print(f"group commit: 50 writers {fifty['ratio']:.1f}x the single-writer rate, "
                  f"{fifty['vs_library']:.1f}x the stock library recorder's ({backend})")


if __name__ == "__main__":
    main()
