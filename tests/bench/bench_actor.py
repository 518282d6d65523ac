"""An actor command round trip against a bare Ray actor call plus the store's own commit.

    .venv/bin/python -m tests.bench.bench_actor                  # ~1-2 minutes
    .venv/bin/python -m tests.bench.bench_actor --backends sqlite --calls 500 --rounds 9

One command through a Ray actor hosting an `ActorShell`
(`ray.get(host.handle.remote(to_wire(command)))`: the command crosses in its wire form, as
`Client.spawn` sends start commands (`actors.runtime.wire`), and the host validates it back,
then idempotency check, decide, stamp, append to the store, evolve, and a snapshot every 100
commands as the shell does by default) against, measured turn about in the same run:

- a bare Ray actor call, `ray.get(bare.f.remote())` (and the same call carrying the command's
  wire form, not decoded);
- the store's own commit alone: one `EventStore.append` of one event from the driver;
- a Ray call whose actor appends the event with `EventStore.append` directly (no shell),
  which splits our overhead into "Ray + commit" and "the shell".

Reported: our round trip / (bare call + store commit), from the median call of each kind
(typical latency) and from the mean (which carries the snapshot written every 100th
command and any stalls). The goal is a small fraction over 1.
Shared definitions come from bench_store.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import ray

from actors.runtime.shell import ActorShell
from actors.runtime.wire import from_wire, to_wire
from events.store import EventStore
from tests.bench.bench_store import (
    NOTE,
    TAGS,
    Note,
    Noted,
    TallyBehaviour,
    backends_from,
    fmt_ms,
    fresh_url,
    interleaved,
    machine,
    med,
    our_event,
    per_round,
    spread,
    table,
)

ROOT = Path(__file__).resolve().parents[2]


class Bare:
    def f(self) -> int:
        return 1

    def g(self, command: bytes) -> int:
        return 1


class ShellHost:
    """What an actor shell does per command, inside a Ray actor (like AgentActor)."""

    def __init__(self, url: str, snapshot_every: int) -> None:
        self.store = EventStore(url)
        self.shell = ActorShell(
            TallyBehaviour(), "tally-actor", self.store, run_id="run-bench", snapshot_every=snapshot_every
        ).load()
        self.direct_version = 0

    def handle(self, wire: bytes) -> int:
        self.shell.handle(from_wire(wire))
        return self.shell.version

    def append(self, wire: bytes) -> int:
        """The same event, appended with EventStore.append and no shell."""
        command = cast(Note, from_wire(wire))
        e = Noted(amount=command.amount, note=command.note, tags=command.tags, run_id="run-bench",
                  command_id=command.key)
        self.store.append("tally-direct", [e], self.direct_version)
        self.direct_version += 1
        return self.direct_version

    def close(self) -> None:
        self.store.close()


def bench(backends: list[str], args: argparse.Namespace, tmpdir: str) -> str:
    bare_cls = ray.remote(Bare)
    host_cls = ray.remote(ShellHost)
    rows = []
    for backend in backends:
        with fresh_url(backend, tmpdir, "actor") as url:
            bare = bare_cls.remote()
            host = host_cls.remote(url, args.snapshot_every)
            store = EventStore(url)  # the driver's, for the commit alone
            try:
                n = {"commit": 0, "cmd": 0, "ours": 0}
                sent: list[Note] = []

                def commit() -> None:
                    n["commit"] += 1
                    store.append("tally-driver", [our_event(n["commit"])], n["commit"] - 1)

                def command() -> Note:
                    n["cmd"] += 1
                    return Note(key=f"cmd-{n['cmd']}", amount=n["cmd"], note=NOTE, tags=TAGS)

                def ours() -> int:
                    n["ours"] += 1
                    sent[:] = [command()]
                    return ray.get(host.handle.remote(to_wire(sent[0])))

                ops = {
                    "bare": lambda: ray.get(bare.f.remote()),
                    "bare_arg": lambda: ray.get(bare.g.remote(to_wire(command()))),
                    "commit": commit,
                    "direct": lambda: ray.get(host.append.remote(to_wire(command()))),
                    "ours": ours,
                }
                for _ in range(20):  # warm up: workers, connections, prepared statements
                    for op in ops.values():
                        op()
                samples = interleaved(ops, args.calls, args.rounds)
                # One event per command, and a command sent again appends nothing.
                assert ray.get(host.handle.remote(to_wire(sent[0]))) == n["ours"], "lost or doubled events"
            finally:
                store.close()
                ray.get(host.close.remote())
                ray.kill(host)
                ray.kill(bare)
        for stat_name, stat in (("median", statistics.median), ("mean", statistics.mean)):
            res = per_round(samples, stat)
            base = [b + c for b, c in zip(res["bare"], res["commit"], strict=True)]
            ratio = [o / b for o, b in zip(res["ours"], base, strict=True)]
            ratio_arg = [o / (b + c) for o, b, c in zip(res["ours"], res["bare_arg"], res["commit"], strict=True)]
            ratio_direct = [o / d for o, d in zip(res["ours"], res["direct"], strict=True)]
            rows.append(
                [backend, stat_name, fmt_ms(med(res["bare"])), fmt_ms(med(res["bare_arg"])),
                 fmt_ms(med(res["commit"])), fmt_ms(med(res["direct"])), fmt_ms(med(res["ours"])),
                 f"**{med(ratio):.2f}** ({spread(ratio)})", f"{med(ratio_arg):.2f}", f"{med(ratio_direct):.2f}"]
            )
    return table(
        "Actor command round trip (ms per call; ratio = our round trip / (bare call + commit))",
        ["backend", "per call", "bare call", "bare call with command", "store commit",
         "Ray + append, no shell", "our round trip", "ratio (range)",
         "ratio vs bare call with command", "ratio vs Ray + append"],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="memory,sqlite,postgres")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians reported")
    p.add_argument("--calls", type=int, default=100, help="calls of each kind per round")
    p.add_argument("--snapshot-every", type=int, default=100, help="the shell's snapshot interval")
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    # Ray workers import tests.bench.bench_store by name: put the repo on their path.
    parts = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    backends = backends_from(args.backends)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        with tempfile.TemporaryDirectory(prefix="chorus-bench-") as tmpdir:
            bench(backends, args, tmpdir)
    finally:
        ray.shutdown()
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
