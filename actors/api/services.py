"""What the routes share: the runtime client, its store, the live log, and the principal of
the request in progress.

The principal is recorded on the run's start event: while a request's handler runs the
runtime (`Client.submit`, `Client.fork`), every `RunSubmitted` it appends through the
client's store carries `params["requested_by"]` = the principal's name. Cancelling names
the principal in the `RunFailed` error's message. Nothing else in the runtime changes.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from actors.runtime.client import Client, RunHandle
from actors.runtime.settings import Settings
from events.base import Event
from events.store import EventStore, Recorded
from projections.runs import RunsView

REQUESTED_BY = "requested_by"  # the key in RunSubmitted.params naming who asked for the run

_principal: contextvars.ContextVar[str | None] = contextvars.ContextVar("chorus_api_principal", default=None)


@contextlib.contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Inside, runs this thread submits or forks are recorded as requested by `name`."""
    token = _principal.set(name)
    try:
        yield
    finally:
        _principal.reset(token)


def attributed(events: Sequence[Event]) -> Sequence[Event]:
    name = _principal.get()
    if name is None:
        return events
    return [
        e.model_copy(update={"params": {**e.params, REQUESTED_BY: name}}) if e.type_name == "RunSubmitted" else e  # type: ignore[attr-defined]
        for e in events
    ]


class AttributingStore:
    """An EventStore that stamps the acting principal on the RunSubmitted events appended
    through it (see `acting_as`); everything else passes straight through."""

    def __init__(self, inner: EventStore) -> None:
        self._inner = inner

    @property
    def inner(self) -> EventStore:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, stream_id: str, events: Sequence[Event], expected_version: int) -> list[Recorded]:
        return self._inner.append(stream_id, attributed(events), expected_version)

    def append_many(self, batches: Sequence[tuple[str, Sequence[Event], int]]) -> list[Recorded]:
        return self._inner.append_many([(s, attributed(evs), v) for s, evs, v in batches])

    def __enter__(self) -> AttributingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()


@dataclass
class Services:
    settings: Settings
    client: Client
    store: EventStore
    tokens_configured: int
    owns_client: bool = False
    handles: dict[str, RunHandle] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    live: Any = None  # actors.api.live.LiveLog, started on the first stream
    keep_alive_s: float = 15.0
    first_positions: dict[str, int] = field(default_factory=dict)  # an SSE comment line after this long without an event
    config: Any = None  # actors.api.places.ApiConfig: allowed folders, server options, the body limit

    def first_position(self, run_id: str) -> int:
        """The global position of the run's RunSubmitted: none of its events comes before it
        (a run is recorded before anything runs), so reading its events starts there rather
        than at the start of the log. UnknownRun for an id the store does not hold."""
        found = self.first_positions.get(run_id)
        if found is None:
            self.client.run_state(run_id)  # UnknownRun
            rows = RunsView.open(self.store).views.query("SELECT position FROM runs WHERE run_id = ?", (run_id,))
            found = int(rows[0]["position"]) if rows else 1
            with self.lock:
                if len(self.first_positions) > 100_000:
                    self.first_positions.clear()
                self.first_positions[run_id] = found
        return found

    def keep(self, handle: RunHandle) -> None:
        """Remember a run this server started, and record its end if its actor dies for good."""
        with self.lock:
            self.handles[handle.run_id] = handle
        if getattr(handle, "_ref", None) is not None:
            threading.Thread(target=_watch, args=(handle,), name=f"watch-{handle.run_id}", daemon=True).start()

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
        if self.owns_client:
            self.client.close()


def _watch(handle: RunHandle) -> None:
    try:
        handle.wait()  # records `actor_died` if the actor fails for good
    except Exception:  # noqa: BLE001 - a watcher must never take the server down
        pass


def services(request: Request) -> Services:
    return request.app.state.chorus
