"""The endpoint check before a run is written: a server that is down fails it at once; a
server that took the connection but is busy with another completion (a llama.cpp server
serves one at a time) does not."""

from __future__ import annotations

import socket
import threading

import pytest

from actors.runtime.client import LlmUnavailable, check_endpoint


def test_a_busy_server_passes_and_a_closed_port_fails() -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_say_nothing() -> None:
        busy.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(busy.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept_and_say_nothing, daemon=True).start()
    try:
        check_endpoint(f"http://127.0.0.1:{busy.getsockname()[1]}/v1", "k", timeout_s=0.5)
    finally:
        stop.set()
        for s in held:
            s.close()
        busy.close()

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with pytest.raises(LlmUnavailable, match="unreachable"):
        check_endpoint(f"http://127.0.0.1:{port}/v1", "k", timeout_s=0.5)
