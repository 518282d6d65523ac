"""The live log: ONE thread follows the global log and fans each new event out to every
stream that wants its run; each event is framed as a Server-Sent Event once per view
(what a scope may see: actors.api.visibility), however many streams of that view take it.

A stream subscribes first, then catches up from the store, then takes the live feed,
skipping what it has sent (positions only grow): no gap, no duplicate (see `stream_run`).
SQLite has no subscription, so the thread polls it (`EventStore.follow`, every
`poll_interval` seconds); PostgreSQL notifies it.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from events.store import EventStore, Recorded

KEEP_ALIVE_S = 15.0
PAGE = 500
QUEUE_LIMIT = 10_000  # a stream this far behind is dropped from the feed and catches up from the store


@dataclass(frozen=True)
class Frame:
    position: int
    rec: Recorded | None
    rendered: dict[str, bytes] = field(default_factory=dict)  # view key -> the SSE frame

    def render(self, key: str, frame: Callable[[Recorded], bytes]) -> bytes:
        found = self.rendered.get(key)
        if found is None and self.rec is not None:
            found = self.rendered[key] = frame(self.rec)
        return found or b""


OVERFLOW = Frame(-1, None)


@dataclass(eq=False)
class Subscription:
    run_id: str
    queue: asyncio.Queue[Frame] = field(default_factory=lambda: asyncio.Queue(QUEUE_LIMIT))
    overflowed: bool = False


class LiveLog:
    def __init__(self, store: EventStore, frame: Callable[[Recorded], bytes] | None = None, poll_interval: float = 0.05) -> None:
        self.store = store
        self.frame = frame  # the default framing; each stream may frame with its own view (stream_run's `frame`)
        self.poll_interval = poll_interval
        self._subs: dict[str, set[Subscription]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def ensure_started(self) -> None:
        """Start following (once), from the log's end now, on the running event loop."""
        with self._lock:
            if self._thread is not None:
                return
            self._loop = asyncio.get_running_loop()
            start = self.store.max_position() + 1
            self._thread = threading.Thread(target=self._follow, args=(start,), name="chorus-live-log", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def subscribe(self, run_id: str) -> Subscription:
        sub = Subscription(run_id)
        self._subs.setdefault(run_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.run_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                self._subs.pop(sub.run_id, None)

    @property
    def subscribers(self) -> int:
        return sum(len(s) for s in self._subs.values())

    def _follow(self, start: int) -> None:
        while not self._stop.is_set():
            try:
                for rec in self.store.follow(start, stop=self._stop, poll_interval=self.poll_interval):
                    start = rec.position + 1
                    self._dispatch_soon(rec)
            except Exception:  # noqa: BLE001 - the store went away for a moment: try again
                self._stop.wait(1.0)

    def _dispatch_soon(self, rec: Recorded) -> None:
        if rec.event.run_id not in self._subs or self._loop is None:
            return  # nobody watches this run: not even framed
        frame = Frame(rec.position, rec)
        try:
            self._loop.call_soon_threadsafe(self._dispatch, rec.event.run_id, frame)
        except RuntimeError:  # the loop closed under us: the server is stopping
            self._stop.set()

    def _dispatch(self, run_id: str, frame: Frame) -> None:
        for sub in list(self._subs.get(run_id, ())):
            if sub.overflowed:
                continue
            try:
                sub.queue.put_nowait(frame)
            except asyncio.QueueFull:
                sub.overflowed = True  # it re-reads the store from where it is


async def stream_run(
    live: LiveLog,
    run_id: str,
    after: int,
    read_page: Callable[[int], Any],
    keep_alive_s: float = KEEP_ALIVE_S,
    *,
    frame: Callable[[Recorded], bytes] | None = None,
    view: str = "admin",
) -> AsyncIterator[bytes]:
    """SSE frames for `run_id`'s events after position `after`: history from the store,
    then live, with a comment line every `keep_alive_s` seconds of silence. `frame` frames
    one event as the stream's `view` (its key: frames are shared between streams of a view)
    may see it; `read_page` must frame with it too."""
    render = frame or live.frame
    if render is None:
        raise ValueError("stream_run needs a frame function (or a LiveLog made with one)")
    live.ensure_started()
    sub = live.subscribe(run_id)
    position = after
    try:
        yield b"retry: 1000\n\n"
        while True:
            sub.overflowed = False  # before catching up: what is appended meanwhile queues
            # catch up from the store (first, and after an overflow)
            while True:
                page: list[tuple[int, bytes]] = await asyncio.to_thread(read_page, position)
                for pos, data in page:
                    yield data
                    position = pos
                if len(page) < PAGE:
                    break
            while not sub.overflowed:
                try:
                    frame = await asyncio.wait_for(sub.queue.get(), keep_alive_s)
                except asyncio.TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                if frame.position > position:
                    yield frame.render(view, render)
                    position = frame.position
            while not sub.queue.empty():  # drop what the store will give again
                sub.queue.get_nowait()
    finally:
        live.unsubscribe(sub)


def page_reader(store: EventStore, run_id: str, frame: Callable[[Recorded], bytes]) -> Callable[[int], list[tuple[int, bytes]]]:
    def read(after: int) -> list[tuple[int, bytes]]:
        return [(rec.position, frame(rec)) for rec in itertools.islice(store.read_all(after + 1, run_id=run_id), PAGE)]

    return read
