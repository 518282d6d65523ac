"""LLM requests stored as deltas (events/requests.py) on every backend: a second store object
reads them back exactly, in order and from the middle of a stream; the bytes stored are a
fraction of the inline form; a failed append never becomes a base."""

from __future__ import annotations

import pytest

from events.codec import encode_event
from events.effects import LlmCompleted, LlmRequested
from events.store import ConcurrencyError, EventStore
from tests.unit.test_request_deltas import prompt

STREAM = "agent-7"


@pytest.fixture
def store(store_url):
    with EventStore(store_url) as opened:
        yield opened


def other_store(store: EventStore) -> EventStore:
    """A second store object on the same data, with nothing cached (memory://: the same one)."""
    return store if store.backend == "popo" else EventStore(store.url)

def step(n: int) -> list:
    return [
        LlmRequested(model="m", messages=prompt(n), request_hash=f"h{n}", call_index=n, run_id="r"),
        LlmCompleted(request_hash=f"h{n}", call_index=n, content=f"answer {n}", run_id="r"),
    ]


def write(store: EventStore, steps: int) -> None:
    for n in range(1, steps + 1):
        store.append(STREAM, step(n), expected_version=2 * (n - 1))


def test_requests_read_back_exactly_from_another_store_object(store):
    write(store, 40)
    reader = other_store(store)
    events = reader.read_stream(STREAM)
    assert [e.messages for e in events if isinstance(e, LlmRequested)] == [prompt(n) for n in range(1, 41)]
    middle = other_store(store).read_stream(STREAM, from_version=59, to_version=61)  # cold: walks to its keyframe
    assert [(e.version, getattr(e, "messages", None)) for e in middle] == [(59, prompt(30)), (60, None), (61, prompt(31))]
    in_log = [r.event.messages for r in other_store(store).read_all(types=["LlmRequested"])]
    assert in_log == [prompt(n) for n in range(1, 41)]
    if reader is not store:
        reader.close()


def test_the_stored_requests_are_a_fraction_of_the_inline_form(sqlite_url):
    import sqlite3

    with EventStore(sqlite_url) as store:
        write(store, 40)
    inline = sum(len(encode_event(e.stamp(stream_id=STREAM, version=1))) for n in range(1, 41) for e in step(n)[:1])
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        (stored,) = db.execute("SELECT sum(length(state)) FROM chorus_events WHERE topic = 'LlmRequested'").fetchone()
    assert stored * 4 < inline


def test_a_request_whose_append_failed_is_not_a_base(store):
    write(store, 3)
    lost = LlmRequested(model="m", messages=prompt(99), request_hash="h99", call_index=4, run_id="r")
    with pytest.raises(ConcurrencyError):
        store.append(STREAM, [lost], expected_version=2)  # the stream is at 6
    store.append(STREAM, step(4), expected_version=6)
    reader = other_store(store)
    assert [getattr(e, "messages", None) for e in reader.read_stream(STREAM, from_version=7)] == [prompt(4), None]


def test_a_restarted_writer_starts_a_new_chain_and_both_read_back(durable_store_url):
    with EventStore(durable_store_url) as first:
        write(first, 5)
    with EventStore(durable_store_url) as second:  # a restarted actor's store: nothing cached
        for n in range(6, 9):
            second.append(STREAM, step(n), expected_version=2 * (n - 1))
    with EventStore(durable_store_url) as reader:
        got = [e.messages for e in reader.read_stream(STREAM) if isinstance(e, LlmRequested)]
    assert got == [prompt(n) for n in range(1, 9)]
