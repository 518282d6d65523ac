"""LocalLlamaServer's life cycle, without loading a model: reuse, clear failures, stop."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
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

    model = "qwen2.5-coder-1.5b-instruct"  # what Settings asks for by default

    def do_GET(self) -> None:
        raw = json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}).encode()
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
            body = b'{"object": "list", "data": [{"id": "qwen2.5-coder-1.5b-instruct"}]}'
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
        "--port": "9123", "--n_ctx": "8192", "--n_threads": "2", "--n_threads_batch": "2",
        "--interrupt_requests": "false",  # a waiting request must not cut the running stream short
    }  # fmt: skip
    import subprocess

    help_text = subprocess.run(cmd[:3] + ["--help"], capture_output=True, text=True, timeout=120).stdout
    for flag in flags:
        assert f"{flag} " in help_text, f"llama_cpp.server has no {flag}"


def test_thread_count_from_the_settings(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, 9123).model_copy(update={"llm_threads": 1})
    cmd = LocalLlamaServer(settings).command(Path("/m.gguf"))
    assert cmd[cmd.index("--n_threads") + 1] == "1" and cmd[cmd.index("--n_threads_batch") + 1] == "1"
    assert LocalLlamaServer(settings, n_threads=3).n_threads == 3  # the caller's word wins


def test_by_default_half_the_cores_generate_and_all_of_them_read_the_prompt(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    server = LocalLlamaServer(settings_for(tmp_path, 9123).model_copy(update={"llm_threads": 0}))
    cmd = server.command(Path("/m.gguf"))
    assert cmd[cmd.index("--n_threads") + 1] == "2" and cmd[cmd.index("--n_threads_batch") + 1] == "4"


def serve_models(model: str) -> ThreadingHTTPServer:
    handler = type("Serves", (_Models,), {"model": model})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    return httpd


def test_a_server_for_another_model_is_refused_not_used(tmp_path: Path) -> None:
    httpd = serve_models("llama-3-70b")
    try:
        with pytest.raises(LocalServerError, match="another model") as info:
            LocalLlamaServer(settings_for(tmp_path, httpd.server_address[1])).start()
        assert "llama-3-70b" in str(info.value) and "\n" not in str(info.value)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_adopting_a_running_server_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    httpd = serve_models("qwen2.5-coder-1.5b-instruct")
    port = httpd.server_address[1]
    try:
        for _ in range(3):
            server = LocalLlamaServer(settings_for(tmp_path, port)).start()
            assert server.reused
            server.stop()
        said = [line for line in capsys.readouterr().err.splitlines() if "already running" in line]
        assert len(said) == 1 and f":{port}/v1" in said[0] and "left running" in said[0]
    finally:
        httpd.shutdown()
        httpd.server_close()


# A stand-in for llama_cpp.server: answers /v1/models as the alias on the port it is given,
# after a second of "loading the model"; counts its requests on the child's idle clock.
FAKE_SERVER = """
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from actors.runtime.llm import idle
port = int(sys.argv[sys.argv.index('--port') + 1])
alias = sys.argv[sys.argv.index('--model_alias') + 1]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if idle.CLOCK: idle.CLOCK.begin(time.monotonic())
        raw = json.dumps({'object': 'list', 'data': [{'id': alias}]}).encode()
        self.send_response(200); self.send_header('Content-Length', str(len(raw))); self.end_headers()
        self.wfile.write(raw)
        if idle.CLOCK: idle.CLOCK.end(time.monotonic())
time.sleep(1.0)
HTTPServer(('127.0.0.1', port), H).serve_forever()
"""

# A `chorus` process: starts (or finds) the (fake) embedded server, prints what it did and the
# server's pid, then waits (or exits at once with `leave`).
PARENT = """
import json, sys, time
from pathlib import Path
from actors.runtime.llm import local_server
from actors.runtime.llm.local_server import LocalLlamaServer
from actors.runtime.settings import Settings
FAKE = {fake!r}
class Fake(LocalLlamaServer):
    def command(self, model):
        return [sys.executable, "-c", FAKE, *super().command(model)[3:]]
tmp = Path({tmp!r})
settings = Settings(data_dir=tmp, store_url="sqlite://", llm_port={port}, gguf_path=tmp / "own.gguf",
                    llm_idle_s={idle_s})
server = Fake(settings, detached={detached}).start()
note = local_server.noted_server(settings) or {{}}
if server._proc:
    print(server._proc.pid, flush=True)
else:
    print(json.dumps({{"reused": server.reused, "shared": server.shared, "pid": note.get("pid")}}), flush=True)
if not {detached} and not {leave}:
    time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds  # a liveness bound, generous: not a speed claim
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.2)
    return False


def spawn_parent(
    tmp_path: Path, port: int, detached: bool = False, idle_s: float = 0.0, leave: bool = False
) -> subprocess.Popen[str]:
    (tmp_path / "own.gguf").write_bytes(b"GGUF")
    code = PARENT.format(fake=FAKE_SERVER, tmp=str(tmp_path), port=port, detached=detached, idle_s=idle_s, leave=leave)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_parent(
    tmp_path: Path, port: int, detached: bool = False, idle_s: float = 0.0, leave: bool = False
) -> tuple[subprocess.Popen[str], str]:
    proc = spawn_parent(tmp_path, port, detached, idle_s, leave)
    return proc, first_line(proc)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"the parent did not start its server: {proc.stderr.read() if proc.stderr else ''}")
    return line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_server_dies_with_the_chorus_process(tmp_path: Path, sig: int) -> None:
    """With CHORUS_LLM_IDLE_S=0 (each process its own server): SIGTERM skips atexit, and
    SIGKILL skips everything: the server is stopped either way (by the parent's handler, or
    by the child's watch on its parent)."""
    port = free_port()
    parent, child = start_parent(tmp_path, port)
    child_pid = int(child)
    try:
        assert answers(port, timeout=5.0)
        parent.send_signal(sig)
        assert parent.wait(timeout=30) == -sig
        assert _gone_within(child_pid, 30.0), "the LLM server outlived the process that started it"
        assert not answers(port)
    finally:
        parent.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child_pid, signal.SIGKILL)


def test_model_serve_stays_up_until_model_stop(tmp_path: Path) -> None:
    port = free_port()
    parent, said = start_parent(tmp_path, port, detached=True)
    assert json.loads(said)["shared"] is False and parent.wait(timeout=30) == 0
    settings = settings_for(tmp_path, port)
    note = json.loads(local_server.pid_file(settings).read_text())
    try:
        assert answers(port, timeout=5.0), "the served model stopped with the process that started it"
        assert "stopped the local LLM server" in local_server.stop_detached(settings)
        assert _gone_within(note["pid"], 30.0) and not answers(port)
        assert not local_server.pid_file(settings).exists()
        with pytest.raises(LocalServerError, match="no local LLM server"):
            local_server.stop_detached(settings)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(note["pid"], signal.SIGKILL)


def test_model_stop_leaves_a_server_it_did_not_start(tmp_path: Path) -> None:
    httpd = serve_models("qwen2.5-coder-1.5b-instruct")
    try:
        with pytest.raises(LocalServerError, match="not started by Chorus"):
            local_server.stop_detached(settings_for(tmp_path, httpd.server_address[1]))
        assert answers(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


def _kill_group(pid: int | None) -> None:
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def test_the_shared_server_outlives_its_starter_and_serves_the_next(tmp_path: Path) -> None:
    """The first process starts the shared server and exits; the next one uses it (no second
    copy); `chorus model stop` still stops it."""
    port = free_port()
    first, said = start_parent(tmp_path, port, idle_s=600, leave=True)
    started = json.loads(said)
    try:
        assert started["shared"] and not started["reused"] and first.wait(timeout=30) == 0
        assert answers(port, timeout=5.0), "the shared server stopped with the process that started it"
        second, said = start_parent(tmp_path, port, idle_s=600, leave=True)
        assert json.loads(said) == {"reused": True, "shared": False, "pid": started["pid"]}
        assert second.wait(timeout=30) == 0
        assert "stopped the local LLM server" in local_server.stop_detached(settings_for(tmp_path, port))
        assert _gone_within(started["pid"], 30.0) and not answers(port)
    finally:
        _kill_group(started["pid"])


def test_two_processes_starting_at_once_end_with_one_server(tmp_path: Path) -> None:
    port = free_port()
    parents = [spawn_parent(tmp_path, port, idle_s=600, leave=True) for _ in range(2)]
    said = [json.loads(first_line(p)) for p in parents]
    pids = {s["pid"] for s in said}
    try:
        assert all(p.wait(timeout=30) == 0 for p in parents)
        assert sorted(s["shared"] for s in said) == [False, True]  # one started it, one used it
        assert sorted(s["reused"] for s in said) == [False, True]
        assert len(pids) == 1 and answers(port)
    finally:
        for pid in pids:
            _kill_group(pid)


def test_the_shared_server_stops_itself_when_idle(tmp_path: Path) -> None:
    port = free_port()
    parent, said = start_parent(tmp_path, port, idle_s=1, leave=True)
    pid = json.loads(said)["pid"]
    try:
        assert parent.wait(timeout=30) == 0
        assert _gone_within(pid, 60.0), "the idle shared server did not stop"
        assert not answers(port)
        with pytest.raises(LocalServerError, match="no local LLM server"):
            local_server.stop_detached(settings_for(tmp_path, port))
    finally:
        _kill_group(pid)


def test_a_busy_shared_server_is_used_by_its_note_without_waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp answers nothing while it computes: the note the shared server left says which
    model it serves, so a process that finds the port taken uses it at once."""
    monkeypatch.setattr(local_server, "BUSY_WAIT_S", 0.0)
    settings = settings_for(tmp_path, free_port())
    with socket.socket() as s:  # a port taken, silent: the busy server
        s.bind(("127.0.0.1", settings.llm_port))
        s.listen()
        local_server.pid_file(settings).parent.mkdir(parents=True, exist_ok=True)
        # a process that is a server's wrapper: the note's pid
        wrapper = subprocess.Popen([sys.executable, "-m", "actors.runtime.llm.child", "0", "-c", "import time; time.sleep(60)"])
        note = {"pid": wrapper.pid, "port": settings.llm_port, "model": settings.llm_model}
        try:
            local_server.pid_file(settings).write_text(json.dumps(note))
            server = LocalLlamaServer(settings).start()
            assert server.reused
            local_server.pid_file(settings).write_text(json.dumps({**note, "model": "llama-3-70b"}))
            with pytest.raises(LocalServerError, match="another model"):
                LocalLlamaServer(settings).start()
            # a note whose pid now belongs to some other process is not believed
            local_server.pid_file(settings).write_text(json.dumps({**note, "pid": os.getpid()}))
            assert local_server.noted_server(settings) is None
        finally:
            local_server.pid_file(settings).unlink(missing_ok=True)
            wrapper.kill()
            wrapper.wait()


def test_the_note_is_one_per_machine_whatever_the_data_folder(tmp_path: Path) -> None:
    """Processes with different data folders share the port, so they share its note and lock."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert local_server.pid_file(settings_for(a, 8765)) == local_server.pid_file(settings_for(b, 8765))
    assert local_server.pid_file(settings_for(a, 8765)) != local_server.pid_file(settings_for(a, 8766))
