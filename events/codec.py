"""msgpack encoding of events and states.

msgpack carries str/int/float/bool/None/bytes/list/dict natively; the few other types our
models hold travel as msgpack extension types, so they come back as the same Python type
(not as strings a model must re-parse). Tuples come back as lists (pydantic restores
them), except as set members and dict keys, which must be hashable and come back as
tuples. Anything else pydantic can render as JSON (paths, URLs, ...) is stored in that
form and parsed back by the model's field.

We do not plug this into eventsourcing as a `Transcoder`. Its
`eventsourcing.tests.persistence.TranscoderTestCase` (9.5) asserts exact JSON bytes in
test_str, test_dict, test_tuple, test_dict_subclass and test_nested_custom_type
(`encode("a") == b'"a"'`, `encode({}) == b"{}"`, ...) and JSON's error messages in
test_custom_type_error, which a binary codec can never produce. (The case is written for
the JSON transcoder with extra transcodings: 9.5's plain `JSONTranscoder` fails six of its
fourteen tests too.) tests/unit/test_events_codec.py runs it to keep this note true. We
use the library's recorders directly and encode `StoredEvent.state` ourselves.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import msgpack
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from events.base import Event
from events.registry import resolve, upcast

# Extension type codes are stored in the log: never renumber them, only add. Codes from
# 10 on are registered by the modules that own them (`register_ext_type`):
#   10  an LlmRequested's messages as a delta (events/requests.py)
_UUID, _DATETIME, _DATE, _TIME, _TIMEDELTA, _DECIMAL, _SET, _FROZENSET, _BIGINT = range(1, 10)
_FIRST_REGISTERED = 10
_EXT_ENCODERS: dict[type, tuple[int, Callable[[Any], bytes]]] = {}
_EXT_DECODERS: dict[int, Callable[[bytes], Any]] = {}


def register_ext_type(code: int, cls: type, encode: Callable[[Any], bytes], decode: Callable[[bytes], Any]) -> None:
    """Store instances of `cls` as msgpack extension type `code`: `encode(obj)` gives its
    bytes, `decode(bytes)` the object back. Codes are stored in the log: a module owns
    its code for good (registering it again from the same class is a no-op)."""
    if not _FIRST_REGISTERED <= code <= 127:
        raise ValueError(f"extension type code must be {_FIRST_REGISTERED}..127, not {code}")
    taken = next((c for c, (n, _) in _EXT_ENCODERS.items() if n == code), None)
    if taken is not None and taken.__qualname__ != cls.__qualname__:
        raise ValueError(f"extension type code {code} is {taken.__qualname__}'s, not {cls.__qualname__}'s")
    _EXT_ENCODERS[cls] = (code, encode)
    _EXT_DECODERS[code] = decode


def _default(obj: Any) -> Any:
    registered = _EXT_ENCODERS.get(type(obj))
    if registered is not None:
        return msgpack.ExtType(registered[0], registered[1](obj))
    if isinstance(obj, uuid.UUID):
        return msgpack.ExtType(_UUID, obj.bytes)
    if isinstance(obj, datetime):
        return msgpack.ExtType(_DATETIME, obj.isoformat().encode())
    if isinstance(obj, date):
        return msgpack.ExtType(_DATE, obj.isoformat().encode())
    if isinstance(obj, time):
        return msgpack.ExtType(_TIME, obj.isoformat().encode())
    if isinstance(obj, timedelta):
        return msgpack.ExtType(_TIMEDELTA, packb([obj.days, obj.seconds, obj.microseconds]))
    if isinstance(obj, Decimal):
        return msgpack.ExtType(_DECIMAL, str(obj).encode())
    if isinstance(obj, frozenset):
        return msgpack.ExtType(_FROZENSET, packb(list(obj)))
    if isinstance(obj, set):
        return msgpack.ExtType(_SET, packb(list(obj)))
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, int):  # msgpack asks only for ints beyond 64 bits
        return msgpack.ExtType(_BIGINT, str(obj).encode())
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="python")
    try:
        # Path, URL, IP address, ...: their JSON form, which the model's field parses back.
        return to_jsonable_python(obj)
    except PydanticSerializationError:
        raise TypeError(f"cannot encode {type(obj).__name__}: {obj!r}") from None


def _uuid(
    data: bytes,
    new: Any = object.__new__,
    put: Any = object.__setattr__,
    cls: type[uuid.UUID] = uuid.UUID,
    unknown: uuid.SafeUUID = uuid.SafeUUID.unknown,
) -> uuid.UUID:
    """`uuid.UUID(bytes=data)` without its argument checks (a third of its time): every
    event carries one, and these 16 bytes were written from a UUID."""
    if len(data) != 16:
        return cls(bytes=data)  # raises as UUID does
    u = new(cls)
    put(u, "int", int.from_bytes(data, "big"))
    put(u, "is_safe", unknown)
    return u  # type: ignore[no-any-return]


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _UUID:
        return _uuid(data)
    if code == _DATETIME:
        return datetime.fromisoformat(data.decode())
    if code == _DATE:
        return date.fromisoformat(data.decode())
    if code == _TIME:
        return time.fromisoformat(data.decode())
    if code == _TIMEDELTA:
        days, seconds, micros = unpackb(data)
        return timedelta(days=days, seconds=seconds, microseconds=micros)
    if code == _DECIMAL:
        return Decimal(data.decode())
    if code == _SET:
        return {_hashable(x) for x in unpackb(data)}
    if code == _FROZENSET:
        return frozenset(_hashable(x) for x in unpackb(data))
    if code == _BIGINT:
        return int(data)
    registered = _EXT_DECODERS.get(code)
    if registered is not None:
        return registered(data)
    return msgpack.ExtType(code, data)


def _hashable(x: Any) -> Any:
    """Tuples were packed as arrays and come back as lists: make them tuples again
    where a hashable value is needed (set members, dict keys)."""
    return tuple(_hashable(i) for i in x) if isinstance(x, list) else x


def _dict_from_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    return {_hashable(k): v for k, v in pairs}


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, use_bin_type=True, datetime=False)


def unpackb(data: bytes) -> Any:
    try:
        return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except TypeError:
        # A map with tuple keys (arrays, unhashable as lists). Rare, so only then pay
        # for a Python hook on every map.
        return msgpack.unpackb(
            data,
            ext_hook=_ext_hook,
            raw=False,
            strict_map_key=False,
            object_pairs_hook=_dict_from_pairs,
        )


# An event is stored as [schema_version, event_id, run_id, causation_id, command_id,
# timestamp, payload]. stream_id and version live in the recorder's own columns and the
# type name in its topic column, so they are not repeated here.
_PAYLOAD = 6

# (stream_id, version) -> (type_name, payload as stored: before its codec's decode), or None
StoredPayload = Callable[[str, int], "tuple[str, dict[str, Any]] | None"]


class PayloadCodec:
    """How one event type's payload is stored, plugged in by the module that owns the type
    (`register_payload_codec`). A store makes one instance and keeps it (state such as a
    chain of deltas lives in it); a read outside any store gets a fresh one. This base
    class stores the payload as it is."""

    def encode(self, stream_id: str, version: int, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload to store for the event at `version` of `stream_id`."""
        return payload

    def appended(self, stream_id: str, version: int) -> None:
        """The event at `version` of `stream_id`, encoded by this instance, is durable."""

    def decode(
        self, stream_id: str, version: int, payload: dict[str, Any], stored: StoredPayload | None
    ) -> dict[str, Any]:
        """The payload of the event from its stored form. `stored` reads another event of
        the store as stored (None outside a store)."""
        return payload


_PAYLOAD_CODECS: dict[str, Callable[[], PayloadCodec]] = {}


def register_payload_codec(type_name: str, codec: Callable[[], PayloadCodec]) -> None:
    """Store `type_name`'s payloads through instances made by `codec` (a PayloadCodec
    subclass) in stores from now on. One codec per type."""
    known = _PAYLOAD_CODECS.get(type_name)
    if known is not None and known.__qualname__ != getattr(codec, "__qualname__", None):
        raise ValueError(f"{type_name} is stored by {known.__qualname__} already")
    _PAYLOAD_CODECS[type_name] = codec


class PayloadCodecs:
    """One store's instances of the registered payload codecs. `read(stream_id, version)`
    gives the stored `(type_name, bytes)` of an event of the store, or None."""

    def __init__(self, read: Callable[[str, int], tuple[str, bytes] | None] | None = None) -> None:
        self._read = read
        self._codecs: dict[str, PayloadCodec] = {}
        self._stored: StoredPayload | None = self._stored_payload if read is not None else None

    def codec(self, type_name: str) -> PayloadCodec | None:
        """This store's instance of `type_name`'s codec (None: stored as it is)."""
        codec = self._codecs.get(type_name)
        if codec is None:
            make = _PAYLOAD_CODECS.get(type_name)
            if make is None:
                return None
            codec = self._codecs.setdefault(type_name, make())
        return codec

    def encode(self, event: Event, payload: dict[str, Any]) -> dict[str, Any]:
        codec = self.codec(event.type_name)
        return payload if codec is None else codec.encode(event.stream_id, event.version, payload)

    def appended(self, events: Iterable[Event]) -> None:
        """`events` (encoded here) are durable."""
        for e in events:
            codec = self._codecs.get(e.type_name)
            if codec is not None:
                codec.appended(e.stream_id, e.version)

    def decode(self, type_name: str, stream_id: str, version: int, payload: dict[str, Any]) -> dict[str, Any]:
        codec = self.codec(type_name)
        return payload if codec is None else codec.decode(stream_id, version, payload, self._stored)

    def _stored_payload(self, stream_id: str, version: int) -> tuple[str, dict[str, Any]] | None:
        assert self._read is not None
        found = self._read(stream_id, version)
        return None if found is None else (found[0], unpackb(found[1])[_PAYLOAD])


def encode_event(event: Event, codecs: PayloadCodecs | None = None) -> bytes:
    """The stored bytes of a stamped event. With a store's `codecs`, a payload whose type
    registered a codec is stored in its form (an LlmRequested's messages as a delta
    against its stream's previous request: events/requests.py); without, as it is."""
    payload = event.payload()
    if codecs is not None:
        payload = codecs.encode(event, payload)
    return packb(
        [
            event.schema_version,
            event.event_id,
            event.run_id,
            event.causation_id,
            event.command_id,
            event.timestamp,
            payload,
        ]
    )


def decode_event(
    type_name: str, stream_id: str, version: int, data: bytes, codecs: PayloadCodecs | None = None
) -> Event:
    """The event stored as `data`. A payload with a registered codec is decoded by the
    store's `codecs` (outside a store by a fresh instance, which cannot read other events)."""
    schema_version, event_id, run_id, causation_id, command_id, ts, payload = unpackb(data)
    if type_name in _PAYLOAD_CODECS:
        payload = (codecs if codecs is not None else PayloadCodecs()).decode(type_name, stream_id, version, payload)
    cls = resolve(type_name)
    if schema_version != cls.schema_version:
        payload = upcast(type_name, schema_version, payload)
    fields = dict(
        payload,
        event_id=event_id,
        stream_id=stream_id,
        version=version,
        run_id=run_id,
        causation_id=causation_id,
        command_id=command_id,
        timestamp=ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc),
    )
    return cls.__pydantic_validator__.validate_python(fields)  # type: ignore[no-any-return]  # model_validate, minus a call


def envelope_of(data: bytes) -> tuple[int, uuid.UUID, str]:
    """(schema_version, event_id, run_id) without validating the payload."""
    unpacker = msgpack.Unpacker(raw=False, ext_hook=_ext_hook, strict_map_key=False)
    unpacker.feed(data)
    unpacker.read_array_header()
    return next(unpacker), next(unpacker), next(unpacker)

