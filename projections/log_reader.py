"""Reading stored events (msgpack, undecoded) from the log, for projections and the views'
queries: by position range, type and stream, or at chosen positions.

Through the store's recorder's bulk reads (`records`, `records_at`: rows as plain
tuples, without a `Notification` object per row, which costs about as much as the rest
of the read), on every backend.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Collection, Iterator, Sequence

from events.store import EventStore
from projections.projection import StoredRecord


def read_stored(
    store: EventStore,
    after: int,
    head: int,
    limit: int,
    types: Sequence[str] = (),
    streams: Collection[str] = (),
) -> list[StoredRecord]:
    """Up to `limit` stored events after position `after` up to `head`, of `types` and
    in `streams` if given, in log order. Fewer than `limit`: there are no more."""
    with store._available(), gc_paused():
        rows = store.recorder.records(after, head, limit, tuple(types), tuple(streams))
        codecs = store.codecs
        return [StoredRecord(p, o, v, t, s, codecs) for p, o, v, t, s in rows]


def read_positions(store: EventStore, positions: Collection[int]) -> dict[int, StoredRecord]:
    """The stored events at `positions`, by position (positions past the log are left out)."""
    with store._available(), gc_paused():
        rows = store.recorder.records_at(positions)
        codecs = store.codecs
        return {p: StoredRecord(p, o, v, t, s, codecs) for p, o, v, t, s in rows}


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a page of events is read or decoded: thousands of new
    small containers and no cycles, so its passes (a tenth of a rebuild's time when
    left on) would find nothing to collect."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
