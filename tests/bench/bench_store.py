"""Event store speed against the eventsourcing library on the same backend.

    .venv/bin/python -m tests.bench.bench_store                  # all, ~2-3 minutes
    .venv/bin/python -m tests.bench.bench_store --only appends --backends sqlite
    .venv/bin/python -m tests.bench.bench_store --rounds 9 --single 1000 --stream 50000
    .venv/bin/python -m tests.bench.bench_store --profile        # cProfile of our hot paths

Every figure that matters is a ratio measured in the same run: the library's own
`Application`/`Aggregate` (stock JSON transcoder, UUID ids) on the same
PERSISTENCE_MODULE, database and pool settings as our `EventStore`, each on a fresh SQLite
file or PostgreSQL schema. Ours and the library's run turn about, one operation
each (alternating which goes first), summed per round; the tables give the median of
the per-round ratios (and their range), so load from other processes on a shared machine
mostly cancels out.

1. Appends per second: one event per transaction (`store.append(stream, [e], v)` against
   `agg.noted(...); app.save(agg)`), and batched (100 events per append / per save).
2. Rehydration of a 10,000-event stream: `ActorShell.load()` against
   `app.repository.get(id)`, without snapshots and with the latest snapshot 100 events
   behind the head (ours: `ActorShell.snapshot`, which snapshot-every-N calls; the
   library's: `app.take_snapshot`, which its `snapshotting_intervals` call).

Shared definitions (the Tally behaviour, backends, tables) are imported by bench_actor.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import platform
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import StoredEvent

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.shell import ActorShell
from events.base import Event, State
from events.codec import encode_event
from events.registry import event_type
from events.backends import env_for
from events.store import EventStore

POSTGRES_URL = os.environ.get(
    "CHORUS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)

# -- the workload: the same facts in both systems ---------------------------------------

NOTE = "observed the synth's sensory bundle and chose the next action surface; " * 2  # 144 chars
TAGS = ["research", "synth", "director"]


@event_type("bench.Noted")
class Noted(Event):
    amount: int
    note: str
    tags: list[str]


class Tally(State):
    total: int = 0
    count: int = 0
    last_note: str = ""


class Note(Command):
    amount: int
    note: str
    tags: list[str]


class TallyBehaviour(Behaviour[Tally]):
    name = "bench-tally"
    state_type = Tally

    def decide(self, state: Tally, command: Command) -> list[Event]:
        assert isinstance(command, Note)
        return [Noted(amount=command.amount, note=command.note, tags=command.tags)]

    def evolve(self, state: Tally, event: Event) -> Tally:
        assert isinstance(event, Noted)
        return state.model_copy(
            update=dict(total=state.total + event.amount, count=state.count + 1, last_note=event.note)
        )


def our_event(i: int) -> Noted:
    """An event as the shell appends it: payload plus run, causation and command ids."""
    return Noted(
        amount=i, note=NOTE, tags=TAGS, run_id="run-bench", causation_id=f"cause-{i}", command_id=f"cmd-{i}"
    )


class LibTally(Aggregate):
    """The library's equivalent: the same fields, mutated by a decorated method."""

    def __init__(self) -> None:
        self.total = 0
        self.count = 0
        self.last_note = ""

    @event("Noted")
    def noted(self, amount: int, note: str, tags: list[str]) -> None:
        self.total += amount
        self.count += 1
        self.last_note = note


class LibApp(Application):
    pass


class LibSnappingApp(Application):
    is_snapshotting_enabled = True


# -- backends -----------------------------------------------------------------------------


def _pg_connect():  # -> psycopg.Connection
    import psycopg

    return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)


@contextlib.contextmanager
def fresh_url(backend: str, tmpdir: str, label: str) -> Iterator[str]:
    """A store URL on an empty SQLite file or PostgreSQL schema, dropped afterwards."""
    tag = f"{label}_{uuid.uuid4().hex[:8]}"
    if backend == "memory":
        yield "memory://"
    elif backend == "sqlite":
        yield f"sqlite:///{os.path.join(tmpdir, tag + '.db')}"
    elif backend == "postgres":
        schema = f"bench_{tag}"
        with _pg_connect() as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in POSTGRES_URL else "?"
        try:
            yield f"{POSTGRES_URL}{sep}schema={schema}"
        finally:
            with _pg_connect() as conn:
                conn.execute("SET lock_timeout = '10s'")
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        raise ValueError(backend)


def library_env(url: str) -> dict[str, str]:
    """The same PERSISTENCE_MODULE, database and pool settings our store uses, with the
    library's stock id type (UUID) since its aggregates have UUID ids."""
    env = dict(env_for(url))
    env.pop("ORIGINATOR_ID_TYPE")
    return env


def postgres_available() -> bool:
    try:
        with _pg_connect() as conn:
            conn.execute("SELECT 1")
        return True
    except Exception as e:  # noqa: BLE001
        print(f"(skipping PostgreSQL: {str(e).strip().splitlines()[0]})", file=sys.stderr)
        return False


# -- measuring and printing ------------------------------------------------------------------


def interleaved(
    ops: dict[str, Callable[[], Any]], per_round: int, rounds: int
) -> dict[str, list[list[float]]]:
    """Seconds per call of each op, per round, running the ops turn about, one call each
    (order reversed every other turn), so a burst of load from elsewhere hits all alike."""
    keys = list(ops)
    samples: dict[str, list[list[float]]] = {k: [] for k in keys}
    clock = time.perf_counter
    for _ in range(rounds):
        took: dict[str, list[float]] = {k: [] for k in keys}
        for i in range(per_round):
            for k in keys if i % 2 == 0 else keys[::-1]:
                t0 = clock()
                ops[k]()
                took[k].append(clock() - t0)
        for k in keys:
            samples[k].append(took[k])
    return samples


def per_round(
    samples: dict[str, list[list[float]]], stat: Callable[[list[float]], float] = sum
) -> dict[str, list[float]]:
    """One figure per op per round: total seconds (sum), or the median or mean call."""
    return {k: [stat(r) for r in rounds] for k, rounds in samples.items()}


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}–{max(xs):.2f}"


def table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    out = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    text = "\n".join(out) + "\n"
    print(text, flush=True)
    return text


def machine() -> str:
    versions = ", ".join(
        f"{p} {metadata.version(p)}"
        for p in ("eventsourcing", "pydantic", "pydantic-core", "msgpack", "psycopg", "ray")
    )
    pg = ""
    with contextlib.suppress(Exception), _pg_connect() as conn:
        pg = ", PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0].split()[0]
    load = os.getloadavg()[0]
    return (
        f"nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}, "
        f"{versions}{pg}, SQLite {sqlite3.sqlite_version}; load average at start {load:.1f}"
    )


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def fmt_ms(x: float) -> str:
    return f"{x * 1e3:,.1f}"


# -- 1. appends -------------------------------------------------------------------------------


class OurAppender:
    def __init__(self, url: str) -> None:
        self.store = EventStore(url)
        self.stream = f"tally-{uuid.uuid4().hex[:8]}"
        self.version = 0
        self.i = 0

    def append(self, n_events: int) -> None:
        events = []
        for _ in range(n_events):
            self.i += 1
            events.append(our_event(self.i))
        self.store.append(self.stream, events, self.version)
        self.version += n_events

    def insert_only(self, n_events: int) -> None:
        """`append` minus its stream_version() read: what the commit alone costs."""
        events = []
        for _ in range(n_events):
            self.i += 1
            self.version += 1
            events.append(our_event(self.i).stamp(stream_id=self.stream, version=self.version))
        self.store.recorder.insert_events(
            [StoredEvent(self.stream, e.version, e.type_name, encode_event(e)) for e in events]
        )

    def close(self) -> None:
        self.store.close()


class LibAppender:
    def __init__(self, url: str) -> None:
        self.app = LibApp(env=library_env(url))
        self.agg = LibTally()
        self.app.save(self.agg)
        self.i = 0

    def append(self, n_events: int) -> None:
        for _ in range(n_events):
            self.i += 1
            self.agg.noted(amount=self.i, note=NOTE, tags=TAGS)
        self.app.save(self.agg)

    def close(self) -> None:
        self.app.close()


def bench_appends(backends: list[str], args: argparse.Namespace, tmpdir: str) -> str:
    rows = []
    for backend in backends:
        n_single = args.single * (10 if backend == "memory" else 1)
        n_batches = args.batches * (10 if backend == "memory" else 1)
        with fresh_url(backend, tmpdir, "ours") as ours_url, fresh_url(backend, tmpdir, "lib") as lib_url:
            ours, lib = OurAppender(ours_url), LibAppender(lib_url)
            try:
                for warm_up in (ours.append, lib.append, ours.insert_only):  # connections
                    warm_up(1)
                single = {
                    "o1": lambda: ours.append(1),
                    "l1": lambda: lib.append(1),
                    "r1": lambda: ours.insert_only(1),
                }
                batched = {"ob": lambda: ours.append(100), "lb": lambda: lib.append(100)}
                res = per_round(interleaved(single, n_single, args.rounds))
                res.update(per_round(interleaved(batched, n_batches, args.rounds)))
                for key in res:  # seconds per round -> events per second
                    n = n_single if key.endswith("1") else n_batches * 100
                    res[key] = [n / t for t in res[key]]
                sizes = _stored_sizes(ours, lib)
            finally:
                ours.close()
                lib.close()
        for label, o, lkey, n in (
            ("1 event / transaction", "o1", "l1", n_single),
            ("100 events / transaction", "ob", "lb", n_batches * 100),
        ):
            ratios = [a / b for a, b in zip(res[o], res[lkey], strict=True)]
            rows.append(
                [backend, label, fmt_rate(med(res[o])), fmt_rate(med(res[lkey])),
                 f"**{med(ratios):.2f}**", spread(ratios), n]
            )
            if o == "o1":
                raw = [a / b for a, b in zip(res["r1"], res["l1"], strict=True)]
                rows.append(
                    [backend, "1 event / transaction, our insert without the version read",
                     fmt_rate(med(res["r1"])), fmt_rate(med(res["l1"])), f"{med(raw):.2f}", spread(raw), n]
                )
        print(f"[{backend}] stored bytes per event: ours {sizes[0]}, library {sizes[1]}", flush=True)
    return table(
        "Appends per second (ratio = ours / library events per second; > 1 means we are faster)",
        ["backend", "appends", "ours ev/s", "library ev/s", "ratio", "ratio range", "events per round"],
        rows,
    )


def _stored_sizes(ours: OurAppender, lib: LibAppender) -> tuple[int, int]:
    mine = ours.store.recorder.select_events(ours.stream, limit=1, gt=ours.version - 1)
    theirs = lib.app.recorder.select_events(lib.agg.id, limit=1, gt=lib.agg.version - 1)
    return len(mine[0].state), len(theirs[0].state)


# -- 2. rehydration -----------------------------------------------------------------------------


def _write_ours(store: EventStore, stream: str, n: int, *, snapshot_at: int | None) -> None:
    version = 0
    while version < n:
        stop = snapshot_at if snapshot_at is not None and version < snapshot_at else n
        k = min(100, stop - version)
        store.append(stream, [our_event(version + i) for i in range(1, k + 1)], version)
        version += k
        if version == snapshot_at:
            ActorShell(TallyBehaviour(), stream, store, snapshot_every=0).load().snapshot()


def _write_lib(app: Application, n: int, *, snapshot_at: int | None) -> LibTally:
    agg = LibTally()  # its creation event is version 1
    app.save(agg)
    while agg.version < n:
        stop = snapshot_at if snapshot_at is not None and agg.version < snapshot_at else n
        for _ in range(min(100, stop - agg.version)):
            agg.noted(amount=agg.version + 1, note=NOTE, tags=TAGS)
        app.save(agg)
        if agg.version == snapshot_at:
            app.take_snapshot(agg.id, version=snapshot_at)
    return agg


def bench_rehydration(backends: list[str], args: argparse.Namespace, tmpdir: str) -> str:
    n, tail = args.stream, 100
    snap_at = n - tail
    rows = []
    for backend in backends:
        with fresh_url(backend, tmpdir, "ours") as ours_url, fresh_url(backend, tmpdir, "lib") as lib_url:
            store = EventStore(ours_url)
            app = LibSnappingApp(env=library_env(lib_url))
            try:
                _write_ours(store, "plain", n, snapshot_at=None)
                _write_ours(store, "snapped", n, snapshot_at=snap_at)
                lib_plain = _write_lib(app, n, snapshot_at=None)
                lib_snapped = _write_lib(app, n, snapshot_at=snap_at)

                def ours_load(stream: str) -> ActorShell:
                    return ActorShell(TallyBehaviour(), stream, store, snapshot_every=0).load()

                # Correctness first: both rebuild the same tally, ours from snapshot + tail.
                a, b = ours_load("plain"), ours_load("snapped")
                assert a.state == b.state and a.state.count == n, (a.state, b.state)
                assert (a.replayed_on_load, b.replayed_on_load) == (n, tail)
                la, lb = app.repository.get(lib_plain.id), app.repository.get(lib_snapped.id)
                assert (la.version, lb.version, la.count) == (n, n, n - 1)

                # Each pair takes turns on its own: a snapshot load right after a 10,000-event
                # load runs on caches the big load flushed, and in one interleaving of all four
                # ours followed one twice as often as the library's did.
                res = {
                    **per_round(interleaved(
                        {"op": lambda: ours_load("plain"), "lp": lambda: app.repository.get(lib_plain.id)},
                        args.loads, args.rounds,
                    ), statistics.mean),
                    **per_round(interleaved(
                        {"os": lambda: ours_load("snapped"), "ls": lambda: app.repository.get(lib_snapped.id)},
                        args.loads, args.rounds,
                    ), statistics.mean),
                }
            finally:
                store.close()
                app.close()
        for label, o, lkey in (
            (f"{n:,} events, no snapshot", "op", "lp"),
            (f"snapshot at {snap_at:,} + {tail} events", "os", "ls"),
        ):
            ratios = [b / a for a, b in zip(res[o], res[lkey], strict=True)]
            rows.append(
                [backend, label, fmt_ms(med(res[o])), fmt_ms(med(res[lkey])),
                 f"**{med(ratios):.2f}**", spread(ratios)]
            )
    return table(
        "Rehydration (ratio = library time / our time; > 1 means we are faster)",
        ["backend", "stream", "ours ms", "library ms", "ratio", "ratio range"],
        rows,
    )


# -- profiling ----------------------------------------------------------------------------------


def profile(tmpdir: str, n_stream: int) -> None:
    def show(title: str, prof: cProfile.Profile) -> None:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(14)
        print(f"== {title} (sorted by own time)\n" + buf.getvalue().split("\n\n", 1)[1])

    with fresh_url("sqlite", tmpdir, "prof") as url:
        ours = OurAppender(url)
        ours.append(1)
        prof = cProfile.Profile()
        prof.runcall(lambda: [ours.append(1) for _ in range(300)])
        show("our append, 1 event / transaction, SQLite, 300 appends", prof)
        ours.close()
    with fresh_url("memory", tmpdir, "prof") as url:
        store = EventStore(url)
        _write_ours(store, "plain", n_stream, snapshot_at=None)
        prof = cProfile.Profile()
        prof.runcall(lambda: ActorShell(TallyBehaviour(), "plain", store, snapshot_every=0).load())
        show(f"our ActorShell.load(), {n_stream:,} events, memory", prof)
        app = LibApp(env=library_env(url))
        agg = _write_lib(app, n_stream, snapshot_at=None)
        prof = cProfile.Profile()
        prof.runcall(lambda: app.repository.get(agg.id))
        show(f"library repository.get(), {n_stream:,} events, memory", prof)


# -- main -------------------------------------------------------------------------------------------


def backends_from(arg: str) -> list[str]:
    chosen = [b.strip() for b in arg.split(",") if b.strip()]
    if "postgres" in chosen and not postgres_available():
        chosen.remove("postgres")
    return chosen


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="memory,sqlite,postgres")
    p.add_argument("--only", choices=["appends", "rehydration"], default=None)
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians reported")
    p.add_argument("--single", type=int, default=200, help="one-event appends per round (x10 on memory)")
    p.add_argument("--batches", type=int, default=10, help="100-event appends per round (x10 on memory)")
    p.add_argument("--stream", type=int, default=10_000, help="events in the rehydrated stream")
    p.add_argument("--loads", type=int, default=3, help="loads of each kind per round")
    p.add_argument("--profile", action="store_true", help="cProfile our hot paths instead")
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmpdir:
        if args.profile:
            profile(tmpdir, args.stream)
            return
        backends = backends_from(args.backends)
        if args.only in (None, "appends"):
            bench_appends(backends, args, tmpdir)
        if args.only in (None, "rehydration"):
            bench_rehydration(backends, args, tmpdir)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
