"""LocalLlamaServer's life cycle, without loading a model: reuse, clear failures, stop."""

from __future__ import annotations

import json
import socket
import time
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from actors.runtime.llm import local_server
from actors.runtime.llm.local_server import LocalLlamaServer, LocalServerError, answers
from actors.runtime.settings import Settings


class _Models(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        raw = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings_for(tmp_path: Path, port: int) -> Settings:
    gguf = tmp_path / "own.gguf"
    gguf.write_bytes(b"GGUF")
    return Settings(data_dir=tmp_path, store_url="sqlite://", llm_port=port, gguf_path=gguf)


def test_reuses_a_running_server_and_leaves_it_running(tmp_path: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    port = httpd.server_address[1]
    try:
        with LocalLlamaServer(settings_for(tmp_path, port)) as server:
            assert server.reused and server.base_url == f"http://127.0.0.1:{port}/v1"
        assert answers(port)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_server_that_dies_while_starting_shows_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = LocalLlamaServer(settings_for(tmp_path, free_port()))
    monkeypatch.setattr(
        server, "command", lambda model: [sys.executable, "-c", "print('cannot load model'); raise SystemExit(3)"]
    )
    with pytest.raises(LocalServerError, match="exited with code 3") as info:
        server.start()
    assert "cannot load model" in str(info.value)
    assert not server.running


def test_a_server_that_never_answers_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = LocalLlamaServer(settings_for(tmp_path, free_port()), start_timeout_s=1.0)
    monkeypatch.setattr(server, "command", lambda model: [sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(LocalServerError, match="did not answer"):
        server.start()
    assert not server.running


def test_port_taken_by_something_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "BUSY_WAIT_S", 1.0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(LocalServerError, match="CHORUS_LLM_PORT") as info:
            LocalLlamaServer(settings_for(tmp_path, s.getsockname()[1])).start()
    assert "did not answer" in str(info.value) and "\n" not in str(info.value)


def test_a_busy_server_on_the_port_is_waited_for_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process's llama.cpp server, busy with a long completion, answers late: it is
    reused, not mistaken for something else."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    monkeypatch.setattr(local_server, "BUSY_WAIT_S", 30.0)
    calls = []

    class Slow(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            calls.append(self.path)
            if len(calls) == 1:
                time.sleep(3)  # busy: the first probe (2 s) gives up
            body = b'{"object": "list", "data": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    server.handle_error = lambda *args: None  # the probe that gave up closed its end: not news
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        local = LocalLlamaServer(settings_for(tmp_path, server.server_address[1])).start()
        assert local.reused and local.running and len(calls) >= 2
    finally:
        server.shutdown()
        server.server_close()


def test_missing_llama_cpp_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "SERVER_MODULES", ("llama_cpp", "no_such_module_here"))
    with pytest.raises(LocalServerError, match="llama-cpp-python\\[server\\]") as info:
        LocalLlamaServer(settings_for(tmp_path, free_port())).start()
    assert "CMAKE_ARGS" in str(info.value) and "no_such_module_here" in str(info.value)


def test_command_uses_the_servers_real_flags(tmp_path: Path) -> None:
    server = LocalLlamaServer(settings_for(tmp_path, 9123), n_threads=2)
    cmd = server.command(Path("/m.gguf"))
    assert cmd[:3] == [sys.executable, "-m", "llama_cpp.server"]
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert flags == {
        "--model": "/m.gguf", "--model_alias": "qwen2.5-coder-1.5b-instruct", "--host": "127.0.0.1",
        "--port": "9123", "--n_ctx": "8192", "--n_threads": "2",
    }  # fmt: skip
    import subprocess

    help_text = subprocess.run(cmd[:3] + ["--help"], capture_output=True, text=True, timeout=120).stdout
    for flag in flags:
        assert f"{flag} " in help_text, f"llama_cpp.server has no {flag}"
