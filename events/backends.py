"""Connecting to a backend: a store URL as the eventsourcing library's settings, and the
reasons to give a person when the database cannot be opened (which folder, what the
PostgreSQL server said), instead of the library's generic ones."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from eventsourcing.persistence import OperationalError


def env_for(url: str) -> dict[str, str]:
    parsed = urlparse(url)
    env = {"ORIGINATOR_ID_TYPE": "text", "CREATE_TABLE": "y"}
    if parsed.scheme == "memory":
        env["PERSISTENCE_MODULE"] = "eventsourcing.popo"
    elif parsed.scheme == "sqlite":
        # SQLAlchemy's convention: sqlite:///relative.db, sqlite:////absolute.db
        path = unquote(url.removeprefix("sqlite:///").split("?")[0])
        if not path:
            raise ValueError(f"store URL {redact(url)!r} names no file: use sqlite:///PATH")
        env.update(PERSISTENCE_MODULE="eventsourcing.sqlite", SQLITE_DBNAME=path, SQLITE_LOCK_TIMEOUT="30")
    elif parsed.scheme in ("postgresql", "postgres"):
        query = parse_qs(parsed.query)
        env.update(
            PERSISTENCE_MODULE="eventsourcing.postgres",
            POSTGRES_DBNAME=(parsed.path or "/postgres").lstrip("/") or "postgres",
            POSTGRES_HOST=parsed.hostname or "127.0.0.1",
            POSTGRES_PORT=str(parsed.port or 5432),
            POSTGRES_USER=unquote(parsed.username or "postgres"),
            POSTGRES_PASSWORD=unquote(parsed.password or ""),
            POSTGRES_CONNECT_TIMEOUT="5",
            POSTGRES_POOL_SIZE="4",
        )
        if "schema" in query:
            env["POSTGRES_SCHEMA"] = query["schema"][0]
        if "connect_timeout" in query:  # whole seconds; also bounds each retried call
            env["POSTGRES_CONNECT_TIMEOUT"] = query["connect_timeout"][0]
    else:
        raise ValueError(
            f"unsupported store URL {redact(url)!r}: use sqlite:///PATH, postgresql://... or memory://"
        )
    return env


GROUP_COMMIT_ENV = "CHORUS_GROUP_COMMIT"
_OFF = ("off", "0", "false", "no")
_ON = ("on", "1", "true", "yes")


def group_commit_of(url: str) -> bool:
    """Whether a store at `url` group-commits concurrent appends: on unless the URL says
    `group_commit=off` (or CHORUS_GROUP_COMMIT=off when the URL does not say)."""
    values = parse_qs(urlparse(url).query).get("group_commit")
    value = (values[-1] if values else os.environ.get(GROUP_COMMIT_ENV, "on")).strip().lower()
    if value not in _OFF + _ON:
        raise ValueError(f"group_commit must be on or off, not {value!r} (store URL {redact(url)!r})")
    return value in _ON


def backend_of(url: str) -> str:
    return env_for(url)["PERSISTENCE_MODULE"].rsplit(".", 1)[1]


def sqlite_reason(path: str, e: BaseException) -> str:
    """sqlite3 says only "unable to open database file": say which folder is the trouble."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"{one_line(e)} (folder {folder} does not exist)"
    if not os.access(folder, os.W_OK):
        return f"{one_line(e)} (folder {folder} is not writable)"
    return one_line(e)


def _postgres_connect(env: dict[str, str]) -> Any:
    import psycopg  # lazily: only PostgreSQL stores need the driver

    return psycopg.connect(
        dbname=env["POSTGRES_DBNAME"],
        host=env["POSTGRES_HOST"],
        port=env["POSTGRES_PORT"],
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"],
        connect_timeout=int(env.get("POSTGRES_CONNECT_TIMEOUT", "5")),
        autocommit=True,
    )


@contextlib.contextmanager
def creating_tables(env: dict[str, str]) -> Iterator[None]:
    """On PostgreSQL, one process at a time creates the tables of a schema.

    The recorders' CREATE TYPE / CREATE TABLE IF NOT EXISTS are not safe to run
    concurrently: two stores opened at once on a fresh schema (actors starting together
    on a new cluster) fail with a duplicate key in pg_type. A session advisory lock on
    its own connection serializes them; the connection also fails fast, with the
    server's own reason, when PostgreSQL cannot be reached.
    """
    if env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        yield
        return
    import psycopg  # lazily: only PostgreSQL stores need the driver

    conn = None
    try:
        conn = _postgres_connect(env)
        key = f"chorus.create_tables:{env.get('POSTGRES_SCHEMA') or 'public'}"
        conn.execute("SET lock_timeout = '60s'")
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
    except psycopg.Error as e:
        if conn is not None:
            conn.close()
        raise OperationalError(one_line(e)) from e
    try:
        yield
    finally:
        conn.close()  # releases the lock


def postgres_reason(env: dict[str, str]) -> str | None:
    """Why PostgreSQL cannot be reached, in psycopg's words.

    The library's connection pool only reports "couldn't get a connection after N sec";
    one direct connection attempt says what is wrong (refused, no such database, ...).
    """
    try:
        _postgres_connect(env).close()
    except Exception as e:  # noqa: BLE001  (any reason is better than none)
        return one_line(e)
    return None


def one_line(e: BaseException) -> str:
    text = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return text[0].removeprefix("connection failed: ") if text else type(e).__name__


def redact(url: str) -> str:
    p = urlparse(url)
    if p.password:
        return url.replace(f":{p.password}@", ":***@")
    return url
