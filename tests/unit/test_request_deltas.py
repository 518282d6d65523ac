"""LLM requests stored as deltas against their stream's previous request (events/requests.py,
plugged into events/codec.py as LlmRequested's payload codec): pure, no store."""

from __future__ import annotations

import pytest

from events.codec import PayloadCodecs, decode_event, encode_event, packb
from events.effects import LlmCompleted, LlmRequested
from events.requests import MissingBase, RequestChain, RequestDeltas, deflate, inflate

SYSTEM = "You are a careful agent. " + " ".join(f"Tool {i}: reads things of kind {i}." for i in range(60))


def prompt(step: int) -> list[dict[str, str]]:
    condensed = "\n".join(f"step {i}: read line {i} of journal.txt, nothing there" for i in range(max(0, step - 20), step))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Goal: find the marker.\n\nDone so far:\n{condensed}"},
        {"role": "assistant", "content": f'{{"thought": "read line {step}", "action": "read_file"}}'},
        {"role": "user", "content": f"Observation:\n{step}: the synth observed its bundle {step % 7}\n\nStep {step} of 200."},
    ]


def request(step: int, version: int) -> LlmRequested:
    return LlmRequested(
        model="m", messages=prompt(step), request_hash=f"h{step}", call_index=step, run_id="r"
    ).stamp(stream_id="agent-1", version=version)


def codecs_with(chain: RequestChain, stored: dict[int, bytes] | None = None) -> PayloadCodecs:
    """A store's codecs, as the store makes them, reading other events from `stored`
    (version -> bytes), with `chain` as the request codec's chain."""
    codecs = PayloadCodecs(None if stored is None else lambda _s, v: ("LlmRequested", stored[v]) if v in stored else None)
    codec = codecs.codec("LlmRequested")
    assert isinstance(codec, RequestDeltas)  # what events/effects.py registered
    codec.chain = chain
    return codecs


def write(chain: RequestChain, steps: int) -> list[tuple[int, bytes]]:
    """Encode `steps` requests at versions 5, 10, 15, ... (other events between), each appended."""
    codecs = codecs_with(chain)
    out = []
    for step in range(1, steps + 1):
        e = request(step, 5 * step)
        out.append((e.version, encode_event(e, codecs)))
        codecs.appended([e])
    return out


def reader(chain: RequestChain, stored: dict[int, bytes]) -> PayloadCodecs:
    """A store's codecs: bases from `chain`, else read from `stored`."""
    return codecs_with(chain, stored)


def test_deflate_against_a_base_stores_only_what_is_new():
    a, b = packb(prompt(30)), packb(prompt(31))
    alone, delta = deflate(b, None), deflate(b, a)
    assert inflate(delta, a) == b and inflate(alone, None) == b
    assert len(delta) * 5 < len(alone) < len(b)


def test_a_run_of_requests_reads_back_exactly_in_order_and_at_random():
    stored = dict(write(RequestChain(keyframe_every=8), 40))
    inline = sum(len(encode_event(request(s, 5 * s))) for s in range(1, 41))
    assert sum(map(len, stored.values())) * 4 < inline
    in_order = reader(RequestChain(), stored)
    for version, data in stored.items():
        assert decode_event("LlmRequested", "agent-1", version, data, in_order).messages == prompt(version // 5)
    for version in (200, 65, 5, 120):  # each from a cold chain: walks back to its keyframe
        got = decode_event("LlmRequested", "agent-1", version, stored[version], reader(RequestChain(), stored))
        assert (got.messages, got.call_index, got.version) == (prompt(version // 5), version // 5, version)


def test_a_keyframe_starts_every_nth_request_and_each_delta_names_the_previous():
    stored = write(RequestChain(keyframe_every=4), 10)
    bases = [decode_event_base(data) for _, data in stored]
    assert bases == [0, 5, 10, 15, 0, 25, 30, 35, 0, 45]


def decode_event_base(data: bytes) -> int:
    from events.codec import unpackb

    return unpackb(data)[6]["messages"].base


def test_an_unconfirmed_append_is_never_a_base():
    codecs = codecs_with(RequestChain())
    first = request(1, 1)
    encode_event(first, codecs)
    codecs.appended([first])
    encode_event(request(2, 2), codecs)  # its append failed: not confirmed
    third = encode_event(request(3, 2), codecs)  # the retry at the same version
    assert decode_event_base(third) == 1


def test_a_delta_read_without_the_store_is_refused_plainly_and_a_keyframe_is_not():
    stored = dict(write(RequestChain(), 3))
    assert decode_event("LlmRequested", "agent-1", 5, stored[5]).messages == prompt(1)
    with pytest.raises(MissingBase, match="stored as a delta against version 5: read it through the event store"):
        decode_event("LlmRequested", "agent-1", 10, stored[10])


def test_a_damaged_base_does_not_inflate_silently():
    a, b = packb(prompt(3)), packb(prompt(4))
    delta = deflate(b, a)
    with pytest.raises(MissingBase):
        inflate(delta[: len(delta) // 2], a)
    assert inflate(delta, packb(prompt(9))) != b  # another base gives other bytes: request_hash catches it


def test_without_a_chain_requests_are_stored_inline_as_before():
    e = request(2, 3)
    data = encode_event(e)
    assert SYSTEM[:40].encode() in data
    assert decode_event("LlmRequested", "agent-1", 3, data).messages == prompt(2)


def test_the_cache_is_bounded():
    chain = RequestChain(cached=3)
    for v in range(1, 8):
        chain.saw("s", v, b"x", 0)
    assert [v for v in range(1, 8) if chain.known("s", v)] == [5, 6, 7]


def test_a_base_that_is_not_a_request_is_refused_plainly():
    stored = dict(write(RequestChain(), 2))
    completed = LlmCompleted(request_hash="h", call_index=1, content="x", run_id="r").stamp(stream_id="agent-1", version=5)
    codecs = PayloadCodecs(lambda _s, v: ("LlmCompleted", encode_event(completed)) if v == 5 else None)
    with pytest.raises(MissingBase, match="has no request at version 5, the base of a later one"):
        decode_event("LlmRequested", "agent-1", 10, stored[10], codecs)
