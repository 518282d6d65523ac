"""LLM requests stored as deltas: each recorded prompt compressed against its stream's
previous one.

Rule 2 records every prompt in full, and an agent's prompts repeat each other: the same
system prompt every step, the same goal, the same condensed steps shifted by one line. So
the stored form of an `LlmRequested`'s `messages` is the msgpack of the list, deflated
with the msgpack of an earlier request *of the same stream* as zlib's preset dictionary
(`base`, its stream version). What the two share costs a few bytes of back-reference;
only what is new is stored. Every `KEYFRAME_EVERY`-th request of a chain, and the first a
writer makes after it starts, is deflated on its own (`base` 0).

The event itself does not change: `LlmRequested.messages` is the whole list, in memory
and as every reader sees it, and `request_hash` still covers the whole request, so a
replay checks the rebuilt prompt against the hash it was recorded with. Only the bytes in
the store differ. Reading a delta needs its base's bytes, which `EventStore` finds in
the stream (and caches, so reading a stream in order costs one inflate per request).
Logs written before this keep their requests inline and read as they always did.

`RequestDeltas` is the payload codec events/effects.py registers for `LlmRequested`
(`events.codec.register_payload_codec`); the store knows no event type. The stored form
is msgpack extension type 10: `[base, data]`.

Pure: zlib and a dict (behind a lock, for threads sharing a store), no I/O.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from events.codec import PayloadCodec, StoredPayload, packb, register_ext_type, unpackb

# A chain is at most this long before a self-contained request starts a new one: reading
# one request at random then inflates at most this many.
KEYFRAME_EVERY = 16
# Requests whose bytes a chain keeps, for the next write or read to use as a base.
CACHED = 512

_WBITS = -15  # raw deflate: no header and checksum (request_hash checks the content)


@dataclass(frozen=True)
class PackedMessages:
    """The stored form of a request's messages: `data` inflates to their msgpack, with the
    msgpack of the request at stream version `base` as preset dictionary (0: none)."""

    base: int
    data: bytes


register_ext_type(
    10, PackedMessages, lambda p: packb([p.base, p.data]), lambda data: PackedMessages(*unpackb(data))
)


class MissingBase(ValueError):
    """A stored request is a delta whose base cannot be found or is not a request."""


def deflate(raw: bytes, base: bytes | None) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, _WBITS, 9, zlib.Z_DEFAULT_STRATEGY, *([base] if base else []))
    return c.compress(raw) + c.flush()


def inflate(data: bytes, base: bytes | None) -> bytes:
    d = zlib.decompressobj(_WBITS, *([base] if base else []))
    try:
        out = d.decompress(data) + d.flush()
    except zlib.error as e:
        raise MissingBase(f"a stored request does not inflate against its base: {e}") from None
    if not d.eof:
        raise MissingBase("a stored request is truncated")
    return out


class RequestChain:
    """The bytes of recent requests per stream, to write the next one as a delta and to
    read deltas without going back to the store.

    `pack` uses the newest request of the stream this chain has *confirmed* (written, or
    read from the store) as base; a writer calls `confirm` once its append is durable, so
    an append that failed leaves no delta against a request that is not in the log.
    """

    def __init__(self, keyframe_every: int = KEYFRAME_EVERY, cached: int = CACHED) -> None:
        self.keyframe_every = keyframe_every
        self.cached = cached
        self._latest: dict[str, int] = {}  # stream -> newest confirmed request version
        self._known: OrderedDict[tuple[str, int], tuple[bytes, int]] = OrderedDict()  # -> (raw, depth)
        self._pending: dict[tuple[str, int], tuple[bytes, int]] = {}
        self._lock = threading.Lock()  # threads sharing a store share its chain

    def pack(self, stream_id: str, version: int, raw: bytes) -> PackedMessages:
        """The stored form of a request at `version` of `stream_id` whose messages pack to
        `raw`; held pending until `confirm`."""
        base, base_raw, depth = 0, None, 0
        with self._lock:
            latest = self._latest.get(stream_id)
            if latest is not None and latest < version:
                found = self._known.get((stream_id, latest))
                if found is not None and found[1] + 1 < self.keyframe_every:
                    base, base_raw, depth = latest, found[0], found[1] + 1
            if len(self._pending) > self.cached:  # appends that failed are never confirmed
                self._pending.clear()
            self._pending[(stream_id, version)] = (raw, depth)
        return PackedMessages(base, deflate(raw, base_raw))

    def confirm(self, stream_id: str, versions: list[int]) -> None:
        """The appends of `versions` to `stream_id` are durable: their requests may be bases."""
        for v in versions:
            with self._lock:
                found = self._pending.pop((stream_id, v), None)
            if found is not None:
                self.saw(stream_id, v, *found)

    def saw(self, stream_id: str, version: int, raw: bytes, depth: int) -> None:
        """The request at `version` of `stream_id` packs to `raw`, `depth` deltas from its
        chain's self-contained start."""
        key = (stream_id, version)
        with self._lock:
            self._known[key] = (raw, depth)
            self._known.move_to_end(key)
            while len(self._known) > self.cached:
                self._known.popitem(last=False)
            if version > self._latest.get(stream_id, 0):
                self._latest[stream_id] = version

    def known(self, stream_id: str, version: int) -> tuple[bytes, int] | None:
        with self._lock:
            found = self._known.get((stream_id, version))
            if found is not None:
                self._known.move_to_end((stream_id, version))
        return found

    def unpack(self, stream_id: str, version: int, packed: PackedMessages, base: tuple[bytes, int] | None) -> bytes:
        """The msgpack of the request at `version`, given its base's (raw, depth) (None
        for a self-contained one); remembered as a base for what follows."""
        if packed.base and base is None:
            raise MissingBase(f"request at {stream_id}@{version} needs its base at version {packed.base}")
        raw = inflate(packed.data, base[0] if packed.base and base else None)
        self.saw(stream_id, version, raw, base[1] + 1 if packed.base and base else 0)
        return raw


class RequestDeltas(PayloadCodec):
    """An LLM request's `messages` stored as a delta against its stream's previous request
    (one instance per store: its chain caches recent requests)."""

    def __init__(self) -> None:
        self.chain = RequestChain()

    def encode(self, stream_id: str, version: int, payload: dict[str, Any]) -> dict[str, Any]:
        payload["messages"] = self.chain.pack(stream_id, version, packb(payload["messages"]))
        return payload

    def appended(self, stream_id: str, version: int) -> None:
        self.chain.confirm(stream_id, [version])

    def decode(
        self, stream_id: str, version: int, payload: dict[str, Any], stored: StoredPayload | None
    ) -> dict[str, Any]:
        packed = payload.get("messages")
        if isinstance(packed, PackedMessages):  # else stored inline, before deltas
            payload["messages"] = unpackb(self.raw(stream_id, version, packed, stored))
        return payload

    def raw(self, stream_id: str, version: int, packed: PackedMessages, stored: StoredPayload | None) -> bytes:
        """The msgpack of the messages of the request at `version`, stored as `packed`:
        inflated against its base (cached, else read through `stored`)."""
        base = None
        if packed.base:
            base = self.chain.known(stream_id, packed.base)
            if base is None:
                if stored is None:
                    raise MissingBase(
                        f"the request at {stream_id}@{version} is stored as a delta against version "
                        f"{packed.base}: read it through the event store"
                    )
                base = self._base(stream_id, packed.base, stored)
        return self.chain.unpack(stream_id, version, packed, base)

    def _base(self, stream_id: str, version: int, stored: StoredPayload) -> tuple[bytes, int]:
        found = stored(stream_id, version)
        if found is None or found[0] != "LlmRequested":
            raise MissingBase(f"stream {stream_id!r} has no request at version {version}, the base of a later one")
        packed = found[1].get("messages")
        if not isinstance(packed, PackedMessages):
            raise MissingBase(f"the request at {stream_id}@{version} is not stored as a delta base")
        self.raw(stream_id, version, packed, stored)
        known = self.chain.known(stream_id, version)
        assert known is not None  # raw remembered it
        return known
