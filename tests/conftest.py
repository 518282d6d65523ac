"""Shared fixtures: event store URLs for each backend.

PostgreSQL tests are marked `postgres`. When the server cannot be reached they skip on a
developer's machine but FAIL when the `CI` environment variable is set, so a missing
database never passes for a green build. Point them at another server with
`CHORUS_TEST_POSTGRES_URL` (default postgresql://postgres@127.0.0.1:5432/test).

Each PostgreSQL test gets a fresh schema (`?schema=NAME` in the store URL), created here
and dropped afterwards: the eventsourcing recorder creates its tables but not the schema.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

POSTGRES_URL = os.environ.get(
    "CHORUS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)

_reachable: tuple[bool, str] | None = None


def _connect(url: str = POSTGRES_URL):  # -> psycopg.Connection
    import psycopg

    p = urlparse(url)
    return psycopg.connect(
        dbname=(p.path or "/postgres").lstrip("/") or "postgres",
        host=p.hostname or "127.0.0.1",
        port=p.port or 5432,
        user=p.username or "postgres",
        password=p.password or "",
        connect_timeout=3,
        autocommit=True,
    )


def postgres_reachable() -> tuple[bool, str]:
    """(reachable, reason), checked once per session."""
    global _reachable
    if _reachable is None:
        try:
            with _connect() as conn:
                conn.execute("SELECT 1")
            _reachable = (True, "")
        except Exception as e:  # noqa: BLE001  (any failure means "not reachable")
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            _reachable = (False, f"PostgreSQL at {POSTGRES_URL} unreachable: {first}")
    return _reachable


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_postgres() -> None:
    """Skip locally, fail in CI, when PostgreSQL is not there."""
    ok, reason = postgres_reachable()
    if ok:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI is set: PostgreSQL tests must run, not skip)")
    pytest.skip(reason)


@pytest.fixture
def memory_url() -> str:
    return "memory://"


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    # sqlite:/// + an absolute path gives four slashes, SQLAlchemy's convention.
    return f"sqlite:///{tmp_path / 'chorus.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A store URL on a schema of its own, dropped after the test."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with _connect() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{sep}schema={schema}"
    with _connect() as conn:
        # Sessions a test leaked (an unclosed store) must not keep the schema alive.
        conn.execute("SET lock_timeout = '10s'")
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]

DURABLE_BACKENDS = BACKENDS[1:]


@pytest.fixture(params=BACKENDS)
def store_url(request) -> str:
    """A fresh, empty store URL for each backend: memory, SQLite file, PostgreSQL schema."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=DURABLE_BACKENDS)
def durable_store_url(request) -> str:
    """Backends whose data outlives one store object: SQLite and PostgreSQL."""
    return request.getfixturevalue(f"{request.param}_url")


def pytest_collection_modifyitems(config, items) -> None:
    """Any test that uses a PostgreSQL URL is marked `postgres`, however it got it."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        if "postgres_url" in names or "postgres" in params:
            item.add_marker(pytest.mark.postgres)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Figures some tests measure as they run (e.g. the fixture mutation score)."""
    import sys

    module = next((m for name, m in sys.modules.items() if name.endswith("test_fixture_mutations")), None)
    line = module.pytest_terminal_summary_line() if module else None
    if line:
        terminalreporter.write_line(line)
