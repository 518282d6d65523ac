"""The live log's fan-out on its own (a memory store, no server): a stream that subscribes
while events are being appended, and one that falls so far behind that the feed drops it,
still get every event of their run once, in order, and nothing of other runs."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from actors.api import live as live_module
from actors.api.live import LiveLog, page_reader, stream_run
from actors.api.schemas import sse_frame
from actors.runtime.remote import decode, parse_sse
from events.effects import ToolCalled
from events.store import EventStore


def append(store: EventStore, run_id: str, n: int, pause: float = 0.0, start: int = 0) -> None:
    import time

    for i in range(start, start + n):
        store.append(f"tool:{run_id}", [ToolCalled(tool="t", args={"i": i}, call_index=i + 1).stamp(run_id=run_id)], i)
        if pause:
            time.sleep(pause)


async def collect(live: LiveLog, store: EventStore, run_id: str, expect: int, slow: float = 0.0) -> list[int]:
    got: list[int] = []
    frames = stream_run(live, run_id, 0, page_reader(store, run_id, sse_frame), keep_alive_s=5)
    async for chunk in frames:  # one whole frame (or comment) each
        got.extend(decode(json.loads(data)).position for _, _, data in parse_sse(iter(chunk.decode().split("\n"))))
        if slow:
            await asyncio.sleep(slow)
        if len(got) >= expect:
            await frames.aclose()
            break
    return got


@pytest.mark.parametrize("queue_limit", [10_000, 2], ids=["keeps-up", "overflows"])
def test_every_event_once_in_order_while_appending(monkeypatch, queue_limit):
    monkeypatch.setattr(live_module, "QUEUE_LIMIT", queue_limit)
    store = EventStore("memory://")
    append(store, "other", 5)
    append(store, "mine", 10)  # history before the stream starts
    live = LiveLog(store, sse_frame, poll_interval=0.01)
    dropped = []
    dispatch = live._dispatch

    def counting(run_id, frame):
        dispatch(run_id, frame)
        dropped.extend(s for s in live._subs.get(run_id, ()) if s.overflowed)

    live._dispatch = counting

    async def main() -> list[int]:
        writer = threading.Thread(target=lambda: (append(store, "mine", 60, 0.002, start=10), append(store, "other", 5, start=5)))
        task = asyncio.create_task(collect(live, store, "mine", 70, slow=0.005 if queue_limit == 2 else 0.0))
        await asyncio.sleep(0.05)
        writer.start()
        got = await asyncio.wait_for(task, 60)
        writer.join()
        return got

    try:
        got = asyncio.run(main())
    finally:
        live.stop()
    expected = [r.position for r in store.read_all(run_id="mine")]
    assert len(expected) == 70
    assert got == expected
    assert live.subscribers == 0
    assert bool(dropped) == (queue_limit == 2)  # the slow one really fell off the feed
