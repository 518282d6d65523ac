"""An event stored at an old schema version loads as the current one through upcasters."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from eventsourcing.persistence import StoredEvent

from events import Event, event_type, upcaster
from events.store import EventStore
from events import registry as registry_module
from events.codec import decode_event, encode_event, envelope_of, packb
from events.registry import MissingUpcaster, UnknownEventType

NAME = "test.upcast.Greeted"


@pytest.fixture(autouse=True)
def registry():
    """Each test redefines event types: put the global registry back afterwards."""
    types = dict(registry_module._TYPES)
    upcasters = dict(registry_module._UPCASTERS)
    yield
    registry_module._TYPES.clear()
    registry_module._TYPES.update(types)
    registry_module._UPCASTERS.clear()
    registry_module._UPCASTERS.update(upcasters)


@pytest.fixture(params=["memory", "sqlite"])
def url(request, tmp_path):
    return "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'up.db'}"


def stored_v1_bytes(name: str, run_id: str = "run-1") -> bytes:
    """What a v1 event looked like in the log: [schema, id, run, cause, command, ts, payload]."""
    ts = datetime(2023, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    return packb([1, uuid.uuid4(), run_id, None, None, ts, {"name": name}])


def define_v2():
    @event_type(NAME, version=2)
    class Greeted(Event):
        first: str
        last: str

    @upcaster(NAME, from_version=1)
    def split_name(payload: dict) -> dict:
        first, _, last = payload.pop("name").partition(" ")
        return {**payload, "first": first, "last": last}

    return Greeted


def test_raw_v1_bytes_load_as_v2():
    Greeted = define_v2()
    event = decode_event(NAME, "greeter-1", 1, stored_v1_bytes("Ada Lovelace"))
    assert type(event) is Greeted
    assert (event.first, event.last) == ("Ada", "Lovelace")
    assert (event.stream_id, event.version, event.run_id) == ("greeter-1", 1, "run-1")
    assert event.schema_version == 2
    # written again, it is written at v2
    assert envelope_of(encode_event(event))[0] == 2


def test_v1_in_the_store_reads_as_v2_through_every_read_path(url):
    Greeted = define_v2()
    with EventStore(url) as store:
        # A v1 event as an older release wrote it, straight into the recorder.
        store.recorder.insert_events(
            [StoredEvent("greeter-1", 1, NAME, stored_v1_bytes("Grace Hopper"))]
        )
        store.append("greeter-1", [Greeted(first="Alan", last="Turing")], expected_version=1)

        stream = store.read_stream("greeter-1")
        assert [(e.first, e.last) for e in stream] == [("Grace", "Hopper"), ("Alan", "Turing")]
        assert all(type(e) is Greeted for e in stream)
        log = [r.event for r in store.read_all(run_id="run-1")]
        assert [(e.first, e.last) for e in log] == [("Grace", "Hopper")]
        followed = [r.event.first for r in store.follow(timeout=0.3, poll_interval=0.05)]
        assert followed == ["Grace", "Alan"]


def test_register_v1_store_then_code_moves_to_v2(url):
    @event_type(NAME, version=1)
    class Greeted(Event):
        name: str

    with EventStore(url) as store:
        store.append("g", [Greeted(name="Ada Lovelace", run_id="r")], expected_version=0)
        if url == "memory://":
            memory = store  # memory:// forgets on close: keep reading from this one
        raw = store.recorder.select_events("g")[0].state
        assert envelope_of(raw)[0] == 1

        # A new release: the same type name, schema v2, and an upcaster from v1.
        @event_type(NAME, version=2)
        class Greeted(Event):  # noqa: F811  (the same event type, as the next release has it)
            first: str
            last: str

        @upcaster(NAME, from_version=1)
        def split_name(payload: dict) -> dict:
            first, _, last = payload.pop("name").partition(" ")
            return {**payload, "first": first, "last": last}

        reader = memory if url == "memory://" else EventStore(url)
        [event] = reader.read_stream("g")
        assert type(event) is Greeted and (event.first, event.last) == ("Ada", "Lovelace")
        assert event.run_id == "r" and event.version == 1
        if reader is not store:
            reader.close()


def test_upcasters_chain_across_versions():
    @event_type(NAME, version=3)
    class Greeted(Event):
        first: str
        last: str
        polite: bool

    @upcaster(NAME, from_version=1)
    def v1_to_v2(payload):
        first, _, last = payload.pop("name").partition(" ")
        return {**payload, "first": first, "last": last}

    @upcaster(NAME, from_version=2)
    def v2_to_v3(payload):
        return {**payload, "polite": True}

    event = decode_event(NAME, "g", 1, stored_v1_bytes("Ada Lovelace"))
    assert (event.first, event.last, event.polite) == ("Ada", "Lovelace", True)
    v2 = packb([2, uuid.uuid4(), "", None, None, datetime.now(timezone.utc), {"first": "A", "last": "B"}])
    assert decode_event(NAME, "g", 2, v2).polite is True


def test_missing_upcaster_is_a_clear_error(url):
    @event_type(NAME, version=2)
    class Greeted(Event):
        first: str

    with pytest.raises(MissingUpcaster) as info:
        decode_event(NAME, "g", 1, stored_v1_bytes("Ada"))
    message = str(info.value)
    assert NAME in message and "v1" in message and "v2" in message and "\n" not in message

    with EventStore(url) as store:
        store.recorder.insert_events([StoredEvent("g", 1, NAME, stored_v1_bytes("Ada"))])
        with pytest.raises(MissingUpcaster, match="no upcaster"):
            store.read_stream("g")
        with pytest.raises(MissingUpcaster):
            list(store.read_all())


def test_missing_middle_upcaster_names_the_gap():
    @event_type(NAME, version=3)
    class Greeted(Event):
        first: str

    @upcaster(NAME, from_version=1)
    def v1_to_v2(payload):
        return {"first": payload["name"]}

    with pytest.raises(MissingUpcaster, match="from schema v2 to v3"):
        decode_event(NAME, "g", 1, stored_v1_bytes("Ada"))


def test_event_newer_than_the_code_is_refused():
    @event_type(NAME, version=1)
    class Greeted(Event):
        name: str

    v5 = packb([5, uuid.uuid4(), "", None, None, datetime.now(timezone.utc), {"name": "x"}])
    with pytest.raises(MissingUpcaster, match="newer than this code"):
        decode_event(NAME, "g", 1, v5)


def test_unknown_event_type_is_a_clear_error():
    with pytest.raises(UnknownEventType, match="test.upcast.Nobody"):
        decode_event("test.upcast.Nobody", "g", 1, stored_v1_bytes("x"))


def test_a_name_belongs_to_one_class():
    @event_type("test.upcast.Taken")
    class Taken(Event):
        pass

    with pytest.raises(ValueError, match="already used"):

        @event_type("test.upcast.Taken")
        class Other(Event):
            pass
