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
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import msgpack
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from events.base import Event
from events.registry import resolve, upcast
from events.requests import MissingBase, PackedMessages, RequestChain, inflate

# Extension type codes are stored in the log: never renumber them, only add.
_UUID, _DATETIME, _DATE, _TIME, _TIMEDELTA, _DECIMAL, _SET, _FROZENSET, _BIGINT = range(1, 10)
_PACKED_MESSAGES = 10  # an LlmRequested's messages as a delta (events/requests.py)


def _default(obj: Any) -> Any:
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
    if code == _PACKED_MESSAGES:
        base, packed = unpackb(data)
        return PackedMessages(base, packed)
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


def encode_event(event: Event, requests: RequestChain | None = None) -> bytes:
    """The stored bytes of a stamped event. With `requests`, an `LlmRequested`'s messages
    are stored as a delta against its stream's previous request (events/requests.py)."""
    payload = event.payload()
    if requests is not None and event.type_name == REQUESTED:
        packed = requests.pack(event.stream_id, event.version, packb(payload["messages"]))
        payload["messages"] = msgpack.ExtType(_PACKED_MESSAGES, packb([packed.base, packed.data]))
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


REQUESTED = "LlmRequested"
# (stream_id, version, packed) -> the msgpack of that request's messages
RequestResolver = Callable[[str, int, PackedMessages], bytes]


def unpack_request(stream_id: str, version: int, packed: PackedMessages, resolve: RequestResolver | None) -> Any:
    """The messages of a request stored as `packed`. A delta needs `resolve` (the store's,
    which finds its base); a self-contained one does not."""
    if resolve is not None:
        return unpackb(resolve(stream_id, version, packed))
    if packed.base:
        raise MissingBase(
            f"the request at {stream_id}@{version} is stored as a delta against version "
            f"{packed.base}: read it through the event store"
        )
    return unpackb(inflate(packed.data, None))


def decode_event(
    type_name: str, stream_id: str, version: int, data: bytes, requests: RequestResolver | None = None
) -> Event:
    schema_version, event_id, run_id, causation_id, command_id, ts, payload = unpackb(data)
    if type_name == REQUESTED and isinstance(payload.get("messages"), PackedMessages):
        payload["messages"] = unpack_request(stream_id, version, payload["messages"], requests)
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

