"""One request-size limit for every route, enforced before a body is read whole.

`BodyLimit` is an ASGI middleware around the whole app: a request whose Content-Length
exceeds the limit is answered 413 at once, its body never read; a body sent without a
length (chunked) is counted as it arrives and answered 413 the moment it passes the limit
(the route never sees it: it is told the client went away). The limit is the API
configuration's `max_body_bytes` (CHORUS_API_MAX_BODY_BYTES, default 4 MiB).
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from actors.api.schemas import json_bytes


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refusal(self) -> tuple[Message, Message]:
        body = json_bytes({"detail": f"the request body is larger than this server takes ({self.max_bytes} bytes)"})
        start = {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")],
        }
        return start, {"type": "http.response.body", "body": body}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_bytes:
            for message in self._refusal():
                await send(message)
            return
        state: dict[str, Any] = {"seen": 0, "refused": False, "started": False}

        async def counted_receive() -> Message:
            if state["refused"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["seen"] += len(message.get("body", b""))
                if state["seen"] > self.max_bytes:
                    state["refused"] = True
                    if not state["started"]:
                        state["started"] = True
                        for m in self._refusal():
                            await send(m)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if state["refused"]:
                return  # the 413 is the answer; whatever the route says after is dropped
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not state["refused"]:
                raise


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
