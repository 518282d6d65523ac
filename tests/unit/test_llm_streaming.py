"""Completions read as they stream: assembled, timed out on inactivity (not total time),
never resent while the server may still work on them, real failures retried and recorded."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from actors.runtime.llm.call_progress import ProgressNotes, read_note
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import OpenAIProvider
from actors.runtime.llm.streaming import (
    Assembly,
    EventStream,
    Inactivity,
    StreamError,
    Unusable,
    from_body,
)
from actors.runtime.llm.types import LlmError, LlmRequest
from events.codec import decode_event, packb
from events.effects import LlmCompleted

# -- pure logic -------------------------------------------------------------------------------


def test_inactivity_counts_from_the_last_token_not_the_start() -> None:
    clock = Inactivity(10, now=0.0)
    assert not clock.expired(9.9)
    for t in range(5, 100, 5):  # a token every 5 s for 100 s: never idle for 10
        clock.touch(float(t))
        assert not clock.expired(t + 9.9)
    assert clock.expired(95 + 10.0) and clock.left(100.0) == 5.0


def test_event_stream_skips_pings_and_stops_at_done() -> None:
    lines = [": ping - 2026", "", "data: {\"a\": 1}", "", "event: x", "data: [DONE]", "", "data: {\"late\": 1}", ""]
    events = EventStream(lines)
    assert list(events) == ['{"a": 1}'] and events.done


def test_event_stream_cut_off_is_not_done() -> None:
    events = EventStream(["data: {\"a\": 1}", ""])
    assert list(events) == ['{"a": 1}'] and not events.done


def chunk(text: str | None = None, finish: str | None = None, **extra: Any) -> str:
    delta = {} if text is None else {"content": text}
    return json.dumps({"model": "m1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


def test_assembly_puts_the_answer_together_and_counts_tokens_without_usage() -> None:
    a = Assembly()
    brought = [a.add(json.dumps({"model": "m1", "choices": [{"delta": {"role": "assistant"}}]})),
               a.add(chunk('{"an')), a.add(chunk('swer": 1}')), a.add(chunk(finish="stop"))]  # fmt: skip
    assert brought == [False, True, True, False]
    assert (a.content, a.model, a.finish_reason, a.tokens, a.prompt_tokens) == ('{"answer": 1}', "m1", "stop", 2, None)


def test_assembly_takes_the_servers_usage_when_it_sends_it() -> None:
    a = Assembly()
    a.add(chunk("hi"))
    a.add(json.dumps({"model": "m1", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 3}}))
    assert (a.content, a.prompt_tokens, a.tokens) == ("hi", 40, 3)


@pytest.mark.parametrize("payload", ["{not json", "[1]", '{"choices": "x"}', '{"choices": [{"delta": 5}]}'])
def test_assembly_refuses_what_is_not_a_chunk(payload: str) -> None:
    with pytest.raises(Unusable):
        Assembly().add(payload)


def test_an_error_event_in_the_stream_is_a_stream_error() -> None:
    with pytest.raises(StreamError) as info:
        Assembly().add(json.dumps({"error": {"message": "out of memory", "code": 500}}))
    assert info.value.status == 500 and "out of memory" in str(info.value)


def test_a_whole_body_is_read_as_before() -> None:
    body = {"model": "m", "choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    assert from_body(json.dumps(body).encode()) == ("ok", "m", 5, 2)
    with pytest.raises(Unusable, match="not JSON"):
        from_body(b"<html>")


def test_a_v1_llm_completed_loads_with_no_retries() -> None:
    ts = datetime(2026, 1, 1, tzinfo=timezone.utc)
    payload = {"request_hash": "h", "call_index": 1, "content": "c", "prompt_tokens": 3}
    event = decode_event("LlmCompleted", "agent:r", 1, packb([1, uuid.uuid4(), "r", None, None, ts, payload]))
    assert isinstance(event, LlmCompleted) and event.retries == [] and event.prompt_tokens == 3


# -- against a streaming server on loopback ---------------------------------------------------

Script = Callable[[BaseHTTPRequestHandler, dict[str, Any], int], None]


class StreamingServer:
    """/v1/chat/completions answered by `script(handler, body, n)`, n counting from 1."""

    def __init__(self, script: Script) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.gone: list[int] = []  # requests whose client went away mid-answer
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                n = len(fake.bodies)
                try:
                    script(self, body, n)
                except (BrokenPipeError, ConnectionResetError):
                    fake.gone.append(n)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_sse(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Connection", "close")
    h.end_headers()


def send(h: BaseHTTPRequestHandler, data: str) -> None:
    h.wfile.write(f"data: {data}\r\n\r\n".encode())
    h.wfile.flush()


def stream_tokens(h: BaseHTTPRequestHandler, tokens: list[str], gap_s: float = 0.0, usage: bool = False) -> None:
    start_sse(h)
    for t in tokens:
        if gap_s:
            time.sleep(gap_s)
        send(h, chunk(t))
    send(h, chunk(finish="stop"))
    if usage:
        send(h, json.dumps({"model": "m1", "choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": len(tokens)}}))
    send(h, "[DONE]")
    h.close_connection = True


@pytest.fixture
def serve() -> Any:
    servers: list[StreamingServer] = []

    def make(script: Script) -> StreamingServer:
        servers.append(StreamingServer(script))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def provider(url: str, **kw: Any) -> OpenAIProvider:
    kw.setdefault("timeout_s", 10.0)
    return OpenAIProvider(base_url=url, model="m", backoff_s=0.01, backoff_max_s=0.02, **kw)


def ask(schema: dict[str, Any] | None = None) -> LlmRequest:
    return LlmRequest(model="m", messages=[{"role": "user", "content": "hi"}], response_schema=schema)


def test_a_streamed_answer_is_assembled_with_its_usage(serve: Any) -> None:
    server = serve(lambda h, body, n: stream_tokens(h, ['{"a"', ": 1}"], usage=True))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    result = provider(server.url, structured="json_object").complete(ask(schema))
    assert (result.content, result.parsed, result.prompt_tokens, result.completion_tokens) == ('{"a": 1}', {"a": 1}, 21, 2)
    assert result.model == "m1" and result.retries == []
    body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["response_format"] == {"type": "json_object", "schema": schema}  # constrained, still


def test_without_usage_the_tokens_are_counted(serve: Any) -> None:
    server = serve(lambda h, body, n: stream_tokens(h, ["a", "b", "c"]))
    result = provider(server.url).complete(ask())
    assert (result.content, result.completion_tokens, result.prompt_tokens) == ("abc", 3, 0)


def test_a_long_answer_that_keeps_coming_is_not_cut_off(serve: Any) -> None:
    """Twelve tokens 0.2 s apart: 2.4 s in all, more than the 2 s limit, never 2 s without one."""
    server = serve(lambda h, body, n: stream_tokens(h, list("abcdefghijkl"), gap_s=0.2))
    result = provider(server.url, timeout_s=2.0).complete(ask())
    assert result.content == "abcdefghijkl" and len(server.bodies) == 1


def stall_after_two_tokens(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
    start_sse(h)
    send(h, chunk("a"))
    send(h, chunk("b"))
    for _ in range(300):  # pings, as sse-starlette sends them, but no token for 30 s
        time.sleep(0.1)
        h.wfile.write(b": ping\r\n\r\n")
        h.wfile.flush()


def test_no_token_for_the_limit_is_a_timeout_never_resent(serve: Any) -> None:
    server = serve(stall_after_two_tokens)
    outcome = LlmGateway(provider(server.url, timeout_s=0.5, max_retries=3)).call(ask(), 1)
    assert not outcome.ok and outcome.error is not None and outcome.error.reason == "timeout"
    assert "no token for 0.5s" in outcome.error.message
    assert len(server.bodies) == 1  # not resent
    deadline = time.monotonic() + 30  # liveness bound: the server's next write fails
    while not server.gone and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.gone == [1], "the connection was left open: the server would go on computing"


def test_a_call_waiting_its_turn_is_kept_while_the_server_pings(serve: Any) -> None:
    """Queued behind another call at a busy server: no token for longer than the limit, but
    the server's pings say it holds the call; it is answered, not timed out and resent."""

    def script(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
        start_sse(h)
        for _ in range(15):  # 1.5 s of pings, the limit is 0.5 s
            time.sleep(0.1)
            h.wfile.write(b": ping\r\n\r\n")
            h.wfile.flush()
        send(h, chunk("at last"))
        send(h, chunk(finish="stop"))
        send(h, "[DONE]")

    server = serve(script)
    result = provider(server.url, timeout_s=0.5).complete(ask())
    assert result.content == "at last" and len(server.bodies) == 1


def test_a_server_error_is_retried_and_recorded_with_the_answer(serve: Any) -> None:
    def script(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
        if n == 1:
            raw = json.dumps({"error": {"message": "overloaded", "code": 503}}).encode()
            h.send_response(503)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(raw)))
            h.end_headers()
            h.wfile.write(raw)
            return
        stream_tokens(h, ["fine"])

    server = serve(script)
    outcome = LlmGateway(provider(server.url)).call(ask(), 1)
    assert outcome.ok and outcome.result is not None and outcome.result.content == "fine"
    completed = outcome.events[-1]
    assert isinstance(completed, LlmCompleted)
    assert [(e.reason, e.details["status"]) for e in completed.retries] == [("server_error", 503)]


def test_an_answer_broken_off_is_retried(serve: Any) -> None:
    def script(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
        if n == 1:
            start_sse(h)
            send(h, chunk("half"))
            h.close_connection = True  # the server died mid-answer: no [DONE]
            return
        stream_tokens(h, ["whole"])

    server = serve(script)
    result = provider(server.url).complete(ask())
    assert result.content == "whole" and len(server.bodies) == 2
    assert [e.reason for e in result.retries] == ["server_error"]


def test_an_error_event_mid_stream_is_a_failed_call(serve: Any) -> None:
    def script(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
        start_sse(h)
        send(h, json.dumps({"error": {"message": "context too long", "code": 400}}))

    server = serve(script)
    with pytest.raises(LlmError) as info:
        provider(server.url).complete(ask())
    assert info.value.reason == "bad_request" and len(server.bodies) == 1


def test_progress_is_told_the_tokens_so_far(serve: Any, tmp_path: Path) -> None:
    server = serve(lambda h, body, n: stream_tokens(h, list("abcdef"), gap_s=0.3))
    seen: list[tuple[int, bool]] = []
    notes = ProgressNotes(tmp_path)
    written: list[dict[str, Any] | None] = []

    def progress(request: LlmRequest, tokens: int, elapsed: float, done: bool = False) -> None:
        seen.append((tokens, done))
        notes(request, tokens, elapsed, done)
        written.append(read_note(tmp_path, request.hash()))

    provider(server.url, progress=progress).complete(ask())
    counts = [tokens for tokens, _ in seen]
    assert counts == sorted(counts) and seen[-1] == (6, True) and len(seen) >= 2
    assert written[0] is not None and written[0]["tokens"] == counts[0]  # readable while it streams
    assert written[-1] is None  # and gone once the answer is complete


def interrupted_then_whole(h: BaseHTTPRequestHandler, body: dict[str, Any], n: int) -> None:
    """What llama_cpp.server's `interrupt_requests` did: [DONE] with no finish reason, the answer
    cut short; the second attempt is served whole."""
    if n == 1:
        start_sse(h)
        send(h, chunk("par"))
        send(h, "[DONE]")
        h.close_connection = True
        return
    stream_tokens(h, ["whole ", "answer"])


def test_an_answer_ended_with_no_finish_reason_is_not_taken_for_a_whole_one(serve: Any) -> None:
    server = serve(interrupted_then_whole)
    result = provider(server.url).complete(ask())
    assert result.content == "whole answer" and len(server.bodies) == 2
    assert [r.reason for r in result.retries] == ["server_error"]  # the retry is recorded as one
