"""`chorus projections status [--json]`, `chorus projections rebuild [NAME]`,
`chorus snapshot STREAM [--at VERSION] [--out FILE]`, and `chorus audit ...`
(`actors.cli.audit`).

Wired into the `chorus` command by `add_parsers(subparsers)`. Bad input (an unknown
projection, an unreachable store) raises ValueError / StoreUnavailable with a one-line
message; `chorus` prints it as `chorus: error: ...` and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Iterator

from actors.cli.audit import add_parsers as add_audit
from actors.cli.paths import writable_file
from actors.runtime.cli_dialect import add_json, add_out, print_json
from actors.runtime.console import open_store
from actors.runtime.replay import snapshot_at
from events.store import EventStore
from projections.runner import ProjectionRunner, known_projection
from projections.snapshot_files import write_snapshot


def add_parsers(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    proj = subparsers.add_parser(
        "projections", help="read models built from the log: status, rebuild, follow"
    )
    proj.set_defaults(func=lambda args: _usage(proj))
    sub = proj.add_subparsers(metavar="ACTION")

    status = sub.add_parser("status", help="each projection's position, the log head and the lag")
    add_json(status, "one projection per line")
    _store_option(status)
    status.set_defaults(func=cmd_status)

    rebuild = sub.add_parser("rebuild", help="drop a view (or all) and rebuild it from position 0")
    rebuild.add_argument("name", nargs="?", help="projection name (default: all)")
    _store_option(rebuild)
    rebuild.set_defaults(func=cmd_rebuild)

    follow = sub.add_parser("follow", help="catch up, then keep every view current as events arrive")
    follow.add_argument("--seconds", type=float, metavar="N", help="stop after N seconds (default: until Ctrl-C)")
    _store_option(follow)
    follow.set_defaults(func=cmd_follow)

    snap = subparsers.add_parser(
        "snapshot", help="an actor's state as a snapshot (JSON) at its latest or a chosen version"
    )
    snap.add_argument("stream_id", metavar="STREAM", help="the actor's stream, e.g. agent:RUN or run:RUN")
    snap.add_argument("--at", type=int, metavar="VERSION", help="stream version (default: latest)")
    add_out(snap, "write it to FILE atomically instead of printing it")
    add_json(snap, "on one line (the snapshot is JSON either way)")
    _store_option(snap)
    snap.set_defaults(func=cmd_snapshot)

    add_audit(subparsers, _store_option)


def _store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", help="event store URL (default: CHORUS_STORE_URL)")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_status(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for s in ProjectionRunner(store).status():
            print_json({**s.__dict__, "lag": s.lag, "needs_rebuild": s.needs_rebuild}) if args.json else print(s.line())
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    if args.name is not None:
        known_projection(args.name)  # before opening the store: bad input writes nothing
    with _store(args) as store:
        for result in ProjectionRunner(store).rebuild(args.name):
            print(result.line())
    return 0


def cmd_follow(args: argparse.Namespace) -> int:
    stop = threading.Event()
    with _store(args) as store:
        runner = ProjectionRunner(store)
        print("following the log (Ctrl-C to stop)", file=sys.stderr, flush=True)
        try:
            runner.run_forever(stop, timeout=args.seconds)
        except KeyboardInterrupt:
            stop.set()
        for s in runner.status():
            print(s.line())
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    if args.out is not None:
        writable_file(args.out)  # before opening the store: bad input writes nothing
    with _store(args) as store:
        snapshot = snapshot_at(store, args.stream_id, args.at)
    if args.out is None:
        print_json(snapshot.model_dump()) if args.json else sys.stdout.write(snapshot.to_json())
    else:
        write_snapshot(args.out, snapshot)
        print(f"wrote {args.stream_id} at version {snapshot.version} to {args.out}")
    return 0


@contextlib.contextmanager
def _store(args: argparse.Namespace) -> Iterator[EventStore]:
    store = open_store(getattr(args, "store", None))
    try:
        yield store
    finally:
        store.close()
