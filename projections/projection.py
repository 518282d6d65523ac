"""What a projection is: a named, versioned view that folds events into tables.

A projection never tracks its own position and never opens a transaction: the runner
hands it a cursor inside a transaction that also moves the projection's tracked
position, so view rows and position commit together or not at all (rule 3).

Projections write SQL with `?` placeholders and portable types (TEXT, INTEGER, BIGINT,
DOUBLE PRECISION); the cursor adapts it to SQLite or PostgreSQL. The same code then
serves the SQLite file, a PostgreSQL schema and the in-memory store (whose views live
in an in-memory SQLite database). Upserts: `INSERT ... ON CONFLICT (key) DO UPDATE`,
which both understand; JSON goes in TEXT columns.

A new view: subclass Projection, set `name`, `types` and `tables`, implement `create`
and `apply`, decorate it with `@register_projection`, and import its module so that
runners and `chorus projections` see it: a shared view from `projections/__init__.py`, a
workload's view from its kind module, which its plugin loads (`actors/research/history.py`,
`actors/relay/checkpoints.py`).

Speed, all opt-in (a projection that sets none of these works as before):

- `stored = True`: `apply_batch` receives `StoredRecord`s, the recorder's rows as
  stored (position, stream, version, type name, msgpack bytes), instead of `Recorded`s.
  A record decodes to a typed event only when asked (`.event`), so a view that needs
  a few fields of most events (or only some streams' events) skips pydantic for the
  rest: decoding is most of what a rebuild costs.
- `indexes`: secondary indexes, made by `create_indexes`. A rebuild of a long log
  drops them, loads in bigger batches, and makes them again at the end (sorting once
  is cheaper than updating every index on every insert).
- `committed(views)`: called after each transaction that moved the view commits (and
  once when a runner first opens the view), for effects outside the database such as
  files. See `projections.snapshots` for how it keeps those exactly-once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from events.codec import PayloadCodecs, decode_event, unpackb

if TYPE_CHECKING:
    from events.base import Event
    from events.store import Recorded
    from projections.views import ViewCursor, ViewStore


class StoredRecord:
    """One event as the recorder stores it, decoded only on demand.

    `state` is the msgpack of [schema_version, event_id, run_id, causation_id,
    command_id, timestamp, payload] (`events.codec`); `unpacked()` gives that list,
    `event` the typed event (upcast and validated, as `EventStore` reads give it).
    """

    __slots__ = ("position", "stream_id", "version", "type_name", "state", "codecs", "_event")

    def __init__(
        self,
        position: int,
        stream_id: str,
        version: int,
        type_name: str,
        state: bytes,
        codecs: PayloadCodecs | None = None,
    ) -> None:
        self.position = position
        self.stream_id = stream_id
        self.version = version
        self.type_name = type_name
        self.state = state
        self.codecs = codecs  # the store's, to read payloads stored by a codec (requests as deltas)
        self._event: Event | None = None

    @property
    def event(self) -> Event:
        if self._event is None:
            self._event = decode_event(self.type_name, self.stream_id, self.version, self.state, self.codecs)
        return self._event

    def unpacked(self) -> list[Any]:
        return unpackb(self.state)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<stored {self.type_name} {self.stream_id}@{self.version} position {self.position}>"


class UnknownProjection(ValueError):
    """A projection name nobody registered. Its message is one line for a person."""


class Projection:
    """Base of every projection. Subclasses set the class attributes and implement
    `create`, `drop` and `apply` (or `apply_batch`, to write a batch at once).

    Bump `schema_version` whenever the tables or what `apply` writes change: a runner
    that finds a view built at another version drops and rebuilds it from position 0.
    `apply` must depend only on the events and its own tables (no clock, no randomness,
    no other projection's tables), so that a rebuild reproduces the view exactly.
    """

    name: ClassVar[str] = ""
    schema_version: ClassVar[int] = 1
    types: ClassVar[tuple[str, ...]] = ()  # event type names it reads; () means every event
    tables: ClassVar[tuple[str, ...]] = ()  # the tables `create` makes (for drop and dumps)
    stored: ClassVar[bool] = False  # True: apply_batch gets StoredRecords, not Recorded
    # Secondary indexes as (name, table, columns); `create` should call `create_indexes`.
    indexes: ClassVar[tuple[tuple[str, str, str], ...]] = ()

    def create(self, c: ViewCursor) -> None:
        """Create the view's tables and indexes (idempotent: IF NOT EXISTS)."""
        raise NotImplementedError

    def drop(self, c: ViewCursor) -> None:
        for table in reversed(self.tables):
            c.execute(f"DROP TABLE IF EXISTS {table}")

    def create_indexes(self, c: ViewCursor) -> None:
        for name, table, columns in self.indexes:
            c.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({columns})")

    def drop_indexes(self, c: ViewCursor) -> None:
        for name, _, _ in self.indexes:
            c.execute(f"DROP INDEX IF EXISTS {name}")

    def committed(self, views: ViewStore) -> None:
        """After a transaction that moved this view committed: effects outside the
        database go here (they must be idempotent: a crash can repeat them)."""

    def apply(self, c: ViewCursor, recorded: Recorded) -> None:
        """Fold one event into the view."""
        raise NotImplementedError

    def apply_batch(self, c: ViewCursor, records: Sequence[Recorded]) -> None:
        """Fold events in log order. Override to write a batch with executemany; the
        result must equal applying them one by one, however the log is cut into batches.
        (With `stored = True` the records are StoredRecords; `apply` is then not used
        unless this method calls it.)
        """
        for recorded in records:
            self.apply(c, recorded)

    def __repr__(self) -> str:
        return f"<projection {self.name} v{self.schema_version}>"


P = TypeVar("P", bound=type[Projection])

_REGISTRY: dict[str, Callable[[], Projection]] = {}


def register_projection(cls: P) -> P:
    """Class decorator: make a projection one that runners and `chorus projections` use."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and getattr(existing, "__qualname__", None) != cls.__qualname__:
        raise ValueError(f"projection name {cls.name!r} already used by {existing!r}")
    _REGISTRY[cls.name] = cls
    return cls


def registered_projections() -> list[Projection]:
    """One instance of every registered projection, by name."""
    return [_REGISTRY[name]() for name in sorted(_REGISTRY)]


def projection_names() -> list[str]:
    return sorted(_REGISTRY)
