"""Our recorders, one module per backend, each implementing the eventsourcing library's
public `ApplicationRecorder` and `TrackingRecorder` interfaces (its recorder test cases
run against them: tests/integration/test_store_library_suite.py) on tables of our own,
plus the fast paths the store needs (`events.recorders.base.EventRecorder`) and the
transactions the views write in (`events.recorders.base.PositionRecorder`). Why our own and not the
library's: docs/decisions/0015-own-recorders.md."""

from __future__ import annotations

from events.recorders.base import EventRecorder, PositionRecorder, SnapshotRecorder


def open_recorders(backend: str, env: dict[str, str]) -> tuple[EventRecorder, SnapshotRecorder]:
    """The event and snapshot recorders of a store: `backend` and `env` as
    events.backends gives them for its URL."""
    if backend == "popo":
        from events.recorders.memory import MemoryRecorder, MemorySnapshots

        return MemoryRecorder(), MemorySnapshots()
    if backend == "sqlite":
        from events.recorders.sqlite import open_sqlite

        return open_sqlite(env["SQLITE_DBNAME"], float(env.get("SQLITE_LOCK_TIMEOUT", "30")))
    if backend == "postgres":
        from events.recorders.postgres import open_postgres  # lazily: loads psycopg

        return open_postgres(env)
    raise ValueError(f"no recorder for backend {backend!r}")


def open_tracking(backend: str, env: dict[str, str]) -> PositionRecorder:
    """The tracking recorder of a store's views, on connections of its own: `backend`
    and `env` as for `open_recorders` (memory: an in-memory SQLite database of its own)."""
    if backend == "popo":
        from events.recorders.memory import open_memory_tracking

        return open_memory_tracking()
    if backend == "sqlite":
        from events.recorders.sqlite import open_sqlite_tracking

        return open_sqlite_tracking(env["SQLITE_DBNAME"], float(env.get("SQLITE_LOCK_TIMEOUT", "30")))
    if backend == "postgres":
        # lazily: loads psycopg
        from events.recorders.postgres import open_postgres_tracking

        return open_postgres_tracking(env)
    raise ValueError(f"no tracking recorder for backend {backend!r}")


__all__ = ["EventRecorder", "PositionRecorder", "SnapshotRecorder", "open_recorders", "open_tracking"]
