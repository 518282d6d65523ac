"""`chorus projections status` and `chorus projections rebuild [NAME]`.

Wired into the `chorus` command by `add_parsers(subparsers)`. Bad input (an unknown
projection, an unreachable store) raises ValueError / StoreUnavailable with a one-line
message; `chorus` prints it as `chorus: error: ...` and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from events.store import EventStore


def add_parsers(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    proj = subparsers.add_parser(
        "projections", help="read models built from the log: status, rebuild"
    )
    proj.set_defaults(func=lambda args: _usage(proj))
    sub = proj.add_subparsers(metavar="ACTION")

    status = sub.add_parser("status", help="each projection's position, the log head and the lag")
    _store_option(status)
    status.set_defaults(func=cmd_status)

    rebuild = sub.add_parser("rebuild", help="drop a view (or all) and rebuild it from position 0")
    rebuild.add_argument("name", nargs="?", help="projection name (default: all)")
    _store_option(rebuild)
    rebuild.set_defaults(func=cmd_rebuild)


def _store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", help="event store URL (default: CHORUS_STORE_URL)")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_status(args: argparse.Namespace) -> int:
    from projections.runner import ProjectionRunner

    with _store(args) as store:
        for s in ProjectionRunner(store).status():
            print(s.line())
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    from projections.runner import ProjectionRunner, known_projection

    if args.name is not None:
        known_projection(args.name)  # before opening the store: bad input writes nothing
    with _store(args) as store:
        for result in ProjectionRunner(store).rebuild(args.name):
            print(result.line())
    return 0


@contextlib.contextmanager
def _store(args: argparse.Namespace) -> Iterator[EventStore]:
    url = getattr(args, "store", None)
    if not url:
        from actors.runtime.settings import Settings

        url = Settings.from_env().store_url
    store = EventStore(url)
    try:
        yield store
    finally:
        store.close()
