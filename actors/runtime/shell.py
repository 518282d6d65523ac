"""The shell around a Behaviour: rehydrate from snapshot + tail, handle commands, append.

The shell is plain Python so it runs the same inside a Ray actor, in the client, and in a
replay. It holds the only mutable state: the folded state, the stream version, and the
idempotency keys already applied (rebuilt from the log on every start, so a command
retried after a crash finds its key and appends nothing twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.secrets import redact_events
from events.base import Event, State
from events.store import ConcurrencyError, EventStore, Snapshot

S = TypeVar("S", bound=State)

MAX_REMEMBERED_KEYS = 10_000
# Keys a snapshot carries, besides those of the events after it (which a load folds in).
# A command is re-sent only while it is in flight: Ray re-sends the calls a crash cut off,
# at most an actor's `max_concurrency` (1 or 2) of them, and `drive` derives every later
# command from the state. So the most recent keys are the ones that matter; 100 is fifty
# times that. Each key costs a load about 0.15 us to decode, check and index (1,000 were
# 0.15 ms of a 1 ms load of a snapshot and 100 events).
SNAPSHOT_KEYS = 100


class ShellSnapshot(BaseModel):
    """What a snapshot holds: the state and the most recent idempotency keys, as parallel
    arrays (cheaper to decode than a map), and what the snapshots view needs to index it
    without running actor code: which behaviour (`actor`) and state model (`state_type`)
    it is of, and the time and global log position of the event at its version.

    Snapshots saved before those four fields existed load with them None (rehydration
    needs only `schema_version`, `state` and the keys)."""

    schema_version: int = 1  # of the state model
    state: dict[str, Any]
    keys: list[str]
    first: list[int]  # version of each key's first event
    last: list[int]  # version of each key's last event
    actor: str | None = None  # the behaviour's name: "run", "react", ...
    state_type: str | None = None  # the state model's class name
    timestamp: str | None = None  # of the event at the snapshot's version (UTC ISO-8601)
    position: int | None = None  # that event's global log position, when the shell knows it


class ActorShell(Generic[S]):
    def __init__(
        self,
        behaviour: Behaviour[S],
        stream_id: str,
        store: EventStore,
        *,
        run_id: str = "",
        snapshot_every: int = 100,
        clock: Callable[[int], datetime] | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.stream_id = stream_id
        self.store = store
        self.run_id = run_id
        self.snapshot_every = snapshot_every
        # The clock is a recorded input too: a replay passes one that serves the original
        # event's timestamp for each version, so time-based decisions come out the same.
        self.clock = clock
        self.state: S = behaviour.initial()
        self.version = 0
        # key -> (first, last) version, oldest first (a dict keeps insertion order)
        self.keys: dict[str, Sequence[int]] = {}
        self.replayed_on_load = 0  # how many tail events the last load folded
        self.last_event_id: str | None = None  # what the next decision follows from
        # Of the event at `version`, for snapshots: its time, and its global position
        # (known after this shell appended it, or from a snapshot at exactly `version`).
        self.timestamp: datetime | None = None
        self.position: int | None = None

    # -- loading ---------------------------------------------------------------------

    def load(self) -> ActorShell[S]:
        """Rebuild state from the latest usable snapshot plus the events after it."""
        self.state, self.version, self.keys = self.behaviour.initial(), 0, {}
        self.timestamp = self.position = None
        snap, tail = self.store.load_latest(self.stream_id)  # one read: the snapshot and what follows it
        if snap is not None and not self._restore(snap):
            tail = self.store.iter_stream(self.stream_id)  # not ours to use: fold the whole stream
        start = self.version
        self._apply(tail)
        self.replayed_on_load = self.version - start
        return self

    def _restore(self, snap: Snapshot) -> bool:
        """Take the state and keys of a snapshot, if it is of this shell's state model and
        schema version; False (and nothing taken) if not."""
        if snap.kind != ShellSnapshot.__name__:
            return False
        body = ShellSnapshot.model_validate(snap.data)
        state_type = type(self.state)
        if body.state_type not in (None, state_type.__name__) or body.schema_version != state_type.schema_version:
            return False  # another model's, or an older schema's
        if not len(body.keys) == len(body.first) == len(body.last):
            raise ValueError(f"snapshot of {self.stream_id!r} at {snap.version}: its key spans do not line up")
        self.state = state_type.model_validate(body.state)
        self.version = snap.version
        # Built in C (zip): a snapshot holds up to SNAPSHOT_KEYS of them.
        self.keys = dict(zip(body.keys, zip(body.first, body.last)))  # spans: (first, last)
        self.position = body.position
        if body.timestamp is not None:
            self.timestamp = datetime.fromisoformat(body.timestamp)
        return True

    # -- commands --------------------------------------------------------------------

    def applied(self, key: str) -> list[Event] | None:
        """The events a command with this key appended, if it was applied already."""
        span = self.keys.get(key)
        if span is None:
            return None
        return self.store.read_stream(self.stream_id, span[0], span[1])

    def handle(self, command: Command, *, causation_id: str | None = None) -> list[Event]:
        """Decide and append; idempotent by `command.key`; retries once on a lost race."""
        done = self.applied(command.key)
        if done is not None:
            return done
        for attempt in range(2):
            events = self.behaviour.decide(self.state, command)
            try:
                return self.record(events, command.key, causation_id=causation_id)
            except ConcurrencyError:
                if attempt:
                    raise
                self.load()  # someone else wrote: re-read and decide again
                done = self.applied(command.key)
                if done is not None:
                    return done
        raise AssertionError("unreachable")

    def record(
        self, events: list[Event], key: str | None = None, *, causation_id: str | None = None
    ) -> list[Event]:
        """Append events decided elsewhere (already pure) and fold them into the state."""
        if not events:
            if key is not None:
                self._remember(key, self.version + 1, self.version)
            return []
        # Secrets are redacted before the first append, so the log, the state folded from
        # it and any replay of it only ever see `[REDACTED:NAME]` (actors.runtime.secrets).
        stamped = redact_events([
            e.stamp(
                run_id=e.run_id or self.run_id,
                causation_id=e.causation_id or causation_id,
                command_id=key,
                **({"timestamp": self.clock(self.version + i)} if self.clock else {}),
            )
            for i, e in enumerate(events, start=1)
        ])
        recorded = self.store.append(self.stream_id, stamped, self.version)
        appended = [r.event for r in recorded]
        before = self.version
        self._apply(appended)
        self.position = recorded[-1].position or None  # 0: a store that gave no positions
        if self.snapshot_every and before // self.snapshot_every != self.version // self.snapshot_every:
            self.snapshot()
        return appended

    def snapshot(self) -> None:
        """Save the state at the current version (once per version: the store keeps the
        first). Taken every `snapshot_every` versions by `record`, and by an actor when
        it finishes serving a run, so the snapshots view holds its final state. A no-op
        before the first event."""
        if self.version == 0:
            return
        recent = list(self.keys.items())[-SNAPSHOT_KEYS:]
        body = ShellSnapshot(
            schema_version=type(self.state).schema_version,
            state=self.state.model_dump(mode="python"),
            keys=[k for k, _ in recent],
            first=[span[0] for _, span in recent],
            last=[span[1] for _, span in recent],
            actor=self.behaviour.name,
            state_type=type(self.state).__name__,
            timestamp=None if self.timestamp is None else utc_timestamp(self.timestamp),
            position=self.position,
        )
        self.store.save_snapshot(self.stream_id, self.version, body)

    # -- internals -------------------------------------------------------------------

    def _apply(self, events: Iterable[Event]) -> None:
        # The loop runs once per event of a rehydrated stream: locals, and the envelope
        # fields set once, after it (a tenth of a 10,000-event load).
        evolve, state, keys, last = self.behaviour.evolve, self.state, self.keys, None
        try:
            for e in events:
                state = evolve(state, e)
                last = e
                key = e.command_id
                if key is None:
                    continue
                span = keys.get(key)
                if span is None:  # a new key goes last by itself
                    keys[key] = (e.version, e.version)
                    if len(keys) > MAX_REMEMBERED_KEYS:
                        del keys[next(iter(keys))]
                else:
                    self._remember(key, span[0], e.version)
        finally:  # as far as it got, if an evolve raised
            self.state = state
            if last is not None:
                self.version = last.version
                self.last_event_id = str(last.event_id)
                self.timestamp = last.timestamp
                self.position = None  # `record` sets it for what it appended

    def _remember(self, key: str, first: int, last: int) -> None:
        keys = self.keys
        keys.pop(key, None)  # to the end: the most recent
        keys[key] = (first, last)
        while len(keys) > MAX_REMEMBERED_KEYS:
            del keys[next(iter(keys))]


def utc_timestamp(t: datetime) -> str:
    """An event time as the snapshots show it: UTC ISO-8601 with microseconds."""
    if t.tzinfo is not timezone.utc:
        t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")


def rebuild(behaviour: Behaviour[S], events: list[Event]) -> S:
    """The state a stream's events fold to, from scratch (for checks and `chorus state`)."""
    return behaviour.fold(behaviour.initial(), events)
