"""When the shared embedded LLM server may go: after `idle_s` seconds with no request.

The server runs under `actors.runtime.llm.child`, which counts the HTTP requests in flight
(`CountRequests`, an ASGI wrapper around llama.cpp's app) on an `IdleClock` and ends the
server once the clock says it has been idle long enough. A request that streams for ten
minutes is in flight all along: the idle period starts when the last request ends.

Pure logic: every method takes `now` (time.monotonic() in the server), so the decision is
tested without waiting.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

STARTUP_S = 300.0  # before its first request a server is loading its model, not idle


class IdleClock:
    def __init__(self, idle_s: float, now: float, startup_s: float = STARTUP_S) -> None:
        self.idle_s = float(idle_s)
        self.last = now  # when the last request ended (or the server started)
        self.in_flight = 0
        self.served = False  # any request yet (the starter's readiness probe is the first)
        self.startup_s = startup_s
        self._lock = threading.Lock()

    def begin(self, now: float) -> None:
        with self._lock:
            self.in_flight += 1
            self.served = True
            self.last = max(self.last, now)

    def end(self, now: float) -> None:
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)
            self.last = max(self.last, now)

    def expired(self, now: float) -> bool:
        """True once no request is in flight and none has ended for `idle_s` seconds (with
        `startup_s` more before the first request: loading the model is not idleness)."""
        with self._lock:
            return self.idle_s > 0 and self.in_flight == 0 and now - self.last >= self._period()

    def left(self, now: float) -> float:
        """Seconds until `expired` could turn true (idle_s while a request is in flight)."""
        with self._lock:
            if self.in_flight:
                return self.idle_s
            return max(0.0, self._period() - (now - self.last))

    def _period(self) -> float:
        return self.idle_s if self.served else self.idle_s + self.startup_s


class CountRequests:
    """ASGI middleware: every HTTP request (a streamed one until its last byte) is in flight
    on `clock` while the wrapped app serves it."""

    def __init__(self, app: Any, clock: IdleClock) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        self.clock.begin(time.monotonic())
        try:
            await self.app(scope, receive, send)
        finally:
            self.clock.end(time.monotonic())


class ModelsAtOnce:
    """ASGI middleware: GET /v1/models answered from the alias the server was started with.
    llama.cpp's own handler waits for the model's lock, so while it computes a completion it
    answers nothing; a `chorus` process looking for the shared server then took it for
    something else on the port. Everything else goes to the app."""

    def __init__(self, app: Any, aliases: list[str]) -> None:
        self.app = app
        data = [{"id": a, "object": "model", "owned_by": "me", "permissions": []} for a in aliases]
        self.body = json.dumps({"object": "list", "data": data}).encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "GET" and scope.get("path") == "/v1/models":
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(self.body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": self.body})
            return
        await self.app(scope, receive, send)


CLOCK: IdleClock | None = None  # the running server's, set by actors.runtime.llm.child
