"""A completion read as it streams: the inactivity limit, and the answer put together.

`OpenAIProvider` asks for `stream=True` and reads the server-sent events itself, so that
- a call times out when nothing has come for `limit_s` seconds (`Inactivity`: tokens, and
  before the first one the server's pings), not after a total time: a long answer that keeps
  coming is never cut off and asked again;
- the content, the model and the usage are assembled from the chunks (`Assembly`); a server
  that sends no usage in its stream (llama-cpp-python's) has its completion tokens counted;
- an endpoint that answers with one JSON body instead of a stream is read as before
  (`from_body`), with the same checks of what a chat completion is.

Pure logic: no I/O, every clock reading passed in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


class Unusable(Exception):
    """The endpoint answered, but not with a chat completion; the message says why."""


class StreamError(Exception):
    """The stream carried an error event (the server failed mid-answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Inactivity:
    """No token for `limit_s` seconds (the reader touches it on each token, and before the
    first on anything the server sends)."""

    def __init__(self, limit_s: float, now: float) -> None:
        self.limit_s = float(limit_s)
        self.last = now

    def touch(self, now: float) -> None:
        self.last = max(self.last, now)

    def expired(self, now: float) -> bool:
        return now - self.last >= self.limit_s

    def left(self, now: float) -> float:
        return max(0.0, self.limit_s - (now - self.last))


class EventStream:
    """The `data:` payloads of a server-sent event stream, up to `[DONE]` (`done` tells
    whether it came: a stream cut off before it is not a whole answer). Comments (pings) and
    other fields are skipped; a payload split over several `data:` lines is joined."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines
        self.done = False

    def __iter__(self) -> Iterator[str]:
        buffer: list[str] = []
        for line in self.lines:
            if line.startswith("data:"):
                buffer.append(line[5:].removeprefix(" "))
                continue
            if line.strip() == "" and buffer:
                payload, buffer = "\n".join(buffer), []
                if payload.strip() == "[DONE]":
                    self.done = True
                    return
                yield payload
        if buffer:
            if "\n".join(buffer).strip() == "[DONE]":
                self.done = True
                return
            yield "\n".join(buffer)


@dataclass
class Assembly:
    """A chat completion put together from its stream chunks (JSON objects)."""

    parts: list[str] = field(default_factory=list)
    model: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None  # from a usage chunk, when the server sends one
    completion_tokens: int | None = None
    chunks_with_text: int = 0  # a token each, for servers that send no usage

    def add(self, payload: str) -> bool:
        """Take one event's data; True if it brought text (a token)."""
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError as e:
            raise Unusable(f"a stream event is not JSON ({e.msg})") from e
        if not isinstance(chunk, dict):
            raise Unusable(f"a stream event is not a chat completion chunk (got {type(chunk).__name__})")
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            status = error.get("code") if isinstance(error, dict) else None
            raise StreamError(str(message or "an error in the stream"), status if isinstance(status, int) else None)
        self.model = str(chunk.get("model") or self.model)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _count(usage.get("prompt_tokens"))
            self.completion_tokens = _count(usage.get("completion_tokens"))
        choices = chunk.get("choices")
        if choices is None and isinstance(usage, dict):
            return False
        if not isinstance(choices, list):
            raise Unusable("a stream chunk's choices are not a list")
        if not choices:
            return False
        first = choices[0]
        if not isinstance(first, dict):
            raise Unusable("a stream chunk's first choice is not an object")
        self.finish_reason = first.get("finish_reason") or self.finish_reason
        delta = first.get("delta")
        if delta is None:
            return False
        if not isinstance(delta, dict):
            raise Unusable("a stream chunk's delta is not an object")
        text = delta.get("content")
        if text is None or text == "":
            return False
        if not isinstance(text, str):
            raise Unusable("a stream chunk's content is not text")
        self.parts.append(text)
        self.chunks_with_text += 1
        return True

    @property
    def content(self) -> str:
        return "".join(self.parts)

    @property
    def tokens(self) -> int:
        """Completion tokens: the server's count when it sent one, else the chunks of text."""
        return self.completion_tokens if self.completion_tokens is not None else self.chunks_with_text


def from_body(raw: bytes) -> tuple[str, str, int, int]:
    """(content, model, prompt tokens, completion tokens) of a whole chat completion body;
    `Unusable` when it is not one (not JSON, an HTML page, a list, choices without a message)."""
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise Unusable(f"its reply is not JSON ({getattr(e, 'msg', e)})") from e
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise Unusable(f"not a chat completion (got {type(body).__name__})")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    model = str(body.get("model") or "")
    tokens = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if not body["choices"]:
        return "", model, *tokens
    message = body["choices"][0].get("message") if isinstance(body["choices"][0], dict) else None
    if not isinstance(message, dict) or "content" not in message:
        raise Unusable("its first choice has no message")
    content = message["content"]
    if content is not None and not isinstance(content, str):
        raise Unusable("its first choice's message is not text")
    return content or "", model, *tokens


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
