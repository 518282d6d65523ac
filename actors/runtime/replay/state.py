"""An actor's state at any version of its stream (`chorus state`, `chorus snapshot`).

Folding needs the actor's behaviour, so this is the runtime's job, not a view's: the run
lifecycle owns `run:` streams, and the run's kind says which behaviour owns the others
(its RunKind's `reading.behaviour`). The fold starts from the latest snapshot the shell took at or
before the version, when there is one, and reads the rest of the stream from the log.
Reads only: nothing is written, to the log or to a view.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from actors.runtime.behaviour import Behaviour
from actors.runtime.replay.rerun import run_kind_of
from actors.runtime.run import RunLifecycle
from actors.runtime.shell import ShellSnapshot
from events.base import Event, State
from events.store import EventStore
from projections.snapshot_files import ActorSnapshot


class UnknownStream(LookupError):
    pass


def behaviour_for(store: EventStore, stream_id: str, first: Event) -> Behaviour[Any]:
    """The behaviour that folds `stream_id`, whose first event is `first`."""
    if first.type_name == "RunSubmitted":
        return RunLifecycle()
    behaviour = run_kind_of(store, first.run_id).reading.behaviour(stream_id, first) if first.run_id else None
    if behaviour is None:
        raise ValueError(f"no behaviour known for stream {stream_id!r} (it starts with {first.type_name})")
    return behaviour


def _checked(store: EventStore, stream_id: str, version: int | None) -> int:
    latest = store.stream_version(stream_id)
    if latest == 0:
        raise UnknownStream(f"no stream with id {stream_id!r}")
    if version is None:
        return latest
    if not 1 <= version <= latest:
        raise ValueError(f"stream {stream_id!r} has versions 1..{latest}; --at {version} is outside")
    return version


def _fold(store: EventStore, stream_id: str, version: int) -> tuple[Behaviour[Any], State, Event, Any]:
    """(behaviour, state at `version`, the event at `version`, the shell snapshot used or None)."""
    first = store.read_stream(stream_id, 1, 1)[0]
    behaviour = behaviour_for(store, stream_id, first)
    state, start, used = behaviour.initial(), 1, None
    snap = store.load_snapshot(stream_id, max_version=version)
    if snap is not None and snap.kind == ShellSnapshot.__name__:
        body = ShellSnapshot.model_validate(snap.data)
        # A snapshot of another model (a director's full-system one, say) is not this fold's.
        usable = body.state_type in (None, behaviour.state_type.__name__)
        if usable and body.schema_version == behaviour.state_type.schema_version:
            state, start, used = behaviour.state_type.model_validate(body.state), snap.version + 1, body
    tail = store.read_stream(stream_id, start, version) if start <= version else []
    state = behaviour.fold(state, tail)
    last = tail[-1] if tail else store.read_stream(stream_id, version, version)[0]
    return behaviour, state, last, (used if not tail else None)


def state_at(store: EventStore, stream_id: str, version: int | None = None) -> tuple[int, State]:
    """The state an actor's stream folds to at `version` (default: its latest)."""
    version = _checked(store, stream_id, version)
    _, state, _, _ = _fold(store, stream_id, version)
    return version, state


def snapshot_at(store: EventStore, stream_id: str, version: int | None = None) -> ActorSnapshot:
    """An actor's state at `version` (default: its latest) as a snapshot document. `position`
    is known when the state is a snapshot the shell took at exactly that version."""
    version = _checked(store, stream_id, version)
    behaviour, state, last, exact = _fold(store, stream_id, version)
    return ActorSnapshot(
        stream=stream_id,
        version=version,
        position=getattr(exact, "position", None),
        timestamp=_timestamp(last.timestamp),
        actor=behaviour.name,
        state_type=type(state).__name__,
        state_schema_version=type(state).schema_version,
        state=json.loads(state.model_dump_json()),
    )


def _timestamp(t: datetime) -> str:
    if t.tzinfo is not timezone.utc:
        t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")
