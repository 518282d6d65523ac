"""The shared server's idle watch under uvicorn: a streamed answer longer than the idle period
keeps the server up (its request is in flight until the last byte), and the server stops by
itself once idle. A stand-in ASGI app serves the stream, under the same wrapper
(`actors.runtime.llm.child --idle-s`) and middleware (`CountRequests`) as llama.cpp's."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time

import httpx

from actors.runtime.llm.local_server import answers

APP = """
import asyncio, sys, uvicorn
from actors.runtime.llm import idle

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    if scope["path"] == "/v1/models":
        body = b'{"object": "list", "data": [{"id": "m"}]}'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    for i in range(12):  # 6 s of tokens: three times the idle period
        await asyncio.sleep(0.5)
        await send({"type": "http.response.body", "body": b"data: {}\\n\\n", "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\\n\\n"})

port = int(sys.argv[sys.argv.index("--port") + 1])
uvicorn.run(idle.CountRequests(app, idle.CLOCK), host="127.0.0.1", port=port, log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_long_stream_is_not_idleness_and_idleness_ends_the_server() -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "actors.runtime.llm.child", "0", "--idle-s", "2", "-c", APP, "--port", str(port)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60  # liveness bounds, generous: not speed claims
        while not answers(port, timeout=1.0):
            assert server.poll() is None and time.monotonic() < deadline, "the stand-in did not start"
            time.sleep(0.1)
        events = 0
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30) as r:
            for line in r.iter_lines():
                events += line.startswith("data:")
        assert events == 13
        # Had it counted the streaming call as idleness, it would be shutting down by now
        # (uvicorn lets a stream finish, but takes no new request).
        assert answers(port, timeout=5.0), "the server went idle while it was streaming"
        server.wait(timeout=60)
        assert "no request for 2s" in (server.stdout.read() if server.stdout else "")
        assert not answers(port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            server.kill()
