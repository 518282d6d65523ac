"""The embedded LLM endpoint: llama-cpp-python's OpenAI-compatible server on loopback.

One server per machine, shared: started by the first `chorus` process that needs the model
when no endpoint is configured, and used by every other one. It outlives the process that
started it and stops itself after `settings.llm_idle_s` seconds with no request
(CHORUS_LLM_IDLE_S; the watch runs in `actors.runtime.llm.child`, its wrapper), or on
`chorus model stop`. Two processes starting at once end with one server: the start is
serialised by a lock file beside the note the server leaves (one per machine and port, in
the temporary folder, whatever each process's data folder).
`chorus model serve` starts one with no idle limit.

CHORUS_LLM_IDLE_S=0 gives the old arrangement: each process's own server, stopped with it:
at exit, on SIGTERM (the server is stopped, then the process dies of the signal as it would
have), and, when the `chorus` process is killed outright, by the server itself (it watches
its parent).

A server already answering on the port is adopted knowingly: only if it serves
`settings.llm_model` (said once on stderr), and left running. One that serves another model
is refused with a one-line error, never used silently.

    with LocalLlamaServer(settings) as server:
        provider = provider_from_settings(settings, base_url=server.base_url)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from actors.runtime.llm.local_model import ensure_model
from actors.runtime.machine import alive, locked, state_folder

HOST = "127.0.0.1"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context")
BUILD_FLAGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"


class LocalServerError(Exception):
    """The embedded server cannot be installed, started or reached; the message says why."""


BUSY_WAIT_S = 180.0  # how long a taken port may stay silent before it is not a server


def served_models(port: int, timeout: float = 2.0) -> list[str] | None:
    """The model ids an OpenAI-compatible server on loopback:`port` lists at GET /v1/models,
    or None when nothing answers so."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/v1/models", timeout=timeout) as r:
            body = json.loads(r.read() or b"{}")
            if r.status != 200 or not isinstance(body.get("data"), list):
                return None
            return [str(m.get("id")) for m in body["data"] if isinstance(m, dict)]
    except (OSError, ValueError, AttributeError, urllib.error.URLError):
        return None


def answers(port: int, timeout: float = 2.0) -> bool:
    """True if an OpenAI-compatible server answers GET /v1/models on loopback:`port`."""
    return served_models(port, timeout) is not None


def pid_file(settings: Any) -> Path:
    """Where the server left running on the port (shared, or by `chorus model serve`) is
    noted: one place per machine and user, like the port, whatever the data folder."""
    return state_folder() / f"llama-server-{int(settings.llm_port)}.json"


@contextlib.contextmanager
def start_lock(settings: Any) -> Iterator[None]:
    """Held while a process looks for the server on the port and starts one if there is none:
    a second process waits here, then finds the first one's server and uses it."""
    with locked(pid_file(settings).with_suffix(".lock")):
        yield


def noted_server(settings: Any) -> dict[str, Any] | None:
    """The note of the server left running on the port, if its process is alive."""
    try:
        note = json.loads(pid_file(settings).read_text())
        pid = int(note["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return note if alive(pid) and _runs_a_server(pid) else None


def _runs_a_server(pid: int) -> bool:
    """Whether `pid` is a server's wrapper, not a process that got a noted pid again."""
    try:
        return b"actors.runtime.llm.child" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return not Path("/proc/self").exists()  # no /proc: trust the pid


_ADOPTED: set[int] = set()  # ports whose adoption was said on stderr (once per process)
_LIVE: weakref.WeakSet[LocalLlamaServer] = weakref.WeakSet()  # servers this process started
_SIGNALS_SET = False


def _stop_live_servers_then_die(signum: int, frame: Any) -> None:
    for server in list(_LIVE):
        server.stop()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # die of the signal as we would have, with its exit status


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP skip atexit: stop our servers first. Only the main thread can set
    handlers, and a handler someone else set is left alone."""
    global _SIGNALS_SET
    if _SIGNALS_SET or threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _stop_live_servers_then_die)
    _SIGNALS_SET = True


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def check_installed() -> None:
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalServerError(
            f"the embedded LLM server needs llama-cpp-python[server] (missing: {', '.join(missing)}). "
            "Run scripts/setup.sh, or install it into this environment with\n"
            f"  CMAKE_ARGS=\"{BUILD_FLAGS}\" {sys.executable} -m pip install 'llama-cpp-python[server]'\n"
            "or point CHORUS_LLM_BASE_URL at an OpenAI-compatible endpoint."
        )


class LocalLlamaServer:
    def __init__(
        self,
        settings: Any,
        *,
        n_threads: int | None = None,
        start_timeout_s: float = 300.0,
        detached: bool = False,
        idle_s: float | None = None,
    ) -> None:
        self.settings = settings
        self.port = int(settings.llm_port)
        # Half the cores by default: on a busy machine one thread fewer keeps generation fast
        # (docs/decisions/0011-llm-threads.md).
        # Reading the prompt on every core: it gains about 2x quiet and loses nothing beside a
        # busy neighbour (same decision record); a thread count the user chose holds for both.
        chosen = n_threads or int(getattr(settings, "llm_threads", 0) or 0)
        self.n_threads = chosen or max(1, (os.cpu_count() or 2) // 2)
        self.n_threads_batch = chosen or max(1, os.cpu_count() or 2)
        self.start_timeout_s = start_timeout_s
        self.log_path = Path(settings.data_dir) / "logs" / "llama-server.log"
        self.reused = False
        self.detached = detached  # `chorus model serve`: stays up after this process
        # Shared (idle_s > 0): stays up after this process until idle that long.
        self.idle_s = float(getattr(settings, "llm_idle_s", 0.0) if idle_s is None else idle_s)
        self.shared = False  # started here and left running for every process
        self.started_in_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.reused or self.shared or (self._proc is not None and self._proc.poll() is None)

    @property
    def outlives_us(self) -> bool:
        """Whether a server started here stays up after this process (shared or served)."""
        return self.detached or self.idle_s > 0

    def command(self, model: Path) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", self.settings.llm_model,
            "--host", HOST,
            "--port", str(self.port),
            "--n_ctx", str(self.settings.llm_context),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads_batch),
            # By default llama_cpp.server ends a running stream with [DONE] when another request
            # waits: the first caller got a cut answer that looked whole (decision 0012).
            "--interrupt_requests", "false",
        ]  # fmt: skip

    def launch(self, model: Path) -> list[str]:
        """The command that runs: the server under the wrapper that stops it when this process
        is gone (a detached server watches nothing)."""
        cmd = self.command(model)
        watch = [str(os.getpid())] if not self.outlives_us else ["0"]
        if self.idle_s > 0 and not self.detached:
            watch += ["--idle-s", f"{self.idle_s:g}"]
        return [cmd[0], "-m", "actors.runtime.llm.child", *watch, *cmd[1:]]

    def _adopt(self, models: list[str], started: float) -> LocalLlamaServer:
        want = self.settings.llm_model
        if want not in models:
            shown = ", ".join(models[:5]) or "none"
            raise LocalServerError(
                f"port {self.port} on {HOST} already serves another model ({shown}), not {want}; "
                "stop that server or set CHORUS_LLM_PORT to a free port"
            )
        if self.port not in _ADOPTED:
            _ADOPTED.add(self.port)
            print(
                f"chorus: using the LLM server already running on {self.base_url} (model {want}); "
                "it was not started by this process and is left running",
                file=sys.stderr,
            )
        self.reused = True
        self.started_in_s = time.monotonic() - started
        return self

    def start(self) -> LocalLlamaServer:
        if self.running:
            return self
        started = time.monotonic()
        with start_lock(self.settings):  # two processes starting at once: one server
            return self._start(started)

    def _start(self, started: float) -> LocalLlamaServer:
        models = served_models(self.port)
        if models is not None:
            return self._adopt(models, started)
        check_installed()
        if not _port_free(self.port):
            note = noted_server(self.settings)
            if note is not None and note.get("port") == self.port:
                # Our own shared server, busy with a completion (llama.cpp answers nothing
                # else meanwhile): its note says which model it serves.
                return self._adopt([str(note.get("model"))], started)
            # Taken: perhaps by another Chorus process's server, busy with a long completion
            # (llama.cpp answers nothing while it computes). Give it time before giving up.
            deadline = time.monotonic() + BUSY_WAIT_S
            while time.monotonic() < deadline:
                models = served_models(self.port, timeout=5.0)
                if models is not None:
                    return self._adopt(models, started)
                time.sleep(1.0)
            raise LocalServerError(
                f"port {self.port} on {HOST} is taken by something that did not answer as an "
                f"OpenAI-compatible server within {BUSY_WAIT_S:.0f}s; set CHORUS_LLM_PORT to a free port"
            )
        model = ensure_model(self.settings)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        cmd = self.launch(model)
        self._log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
        self._log.flush()
        print(f"chorus: starting the local LLM server on {self.base_url}{self._lifetime()} (log: {self.log_path})",
              file=sys.stderr)  # fmt: skip
        self._proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        _LIVE.add(self)  # until it answers: a start given up on stops it
        atexit.register(self.stop)
        if not self.outlives_us:
            _stop_on_signals()
        deadline = started + self.start_timeout_s
        while True:
            code = self._proc.poll()
            if code is not None:
                self._close_log()
                self._proc = None
                _LIVE.discard(self)
                models = served_models(self.port)
                if models is not None:  # another data folder's process won the port meanwhile
                    return self._adopt(models, started)
                raise LocalServerError(
                    f"the local LLM server exited with code {code} while starting. "
                    f"Last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if answers(self.port, timeout=1.0):
                break
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise LocalServerError(
                    f"the local LLM server did not answer on {self.base_url} within "
                    f"{self.start_timeout_s:.0f}s. Last lines of {self.log_path}:\n{tail}"
                )
            time.sleep(0.25)
        self.started_in_s = time.monotonic() - started
        if self.outlives_us:
            note = {"pid": self._proc.pid, "port": self.port, "model": self.settings.llm_model,
                    "idle_s": 0 if self.detached else self.idle_s}  # fmt: skip
            pid_file(self.settings).parent.mkdir(parents=True, exist_ok=True)
            pid_file(self.settings).write_text(json.dumps(note))
            self._proc = None  # ours no more: idleness or `chorus model stop` ends it
            self.shared = not self.detached
            _LIVE.discard(self)
            atexit.unregister(self.stop)
            self._close_log()
        return self

    def _lifetime(self) -> str:
        if self.detached:
            return ""
        if self.idle_s > 0:
            return f", shared: it stops after {self.idle_s:g}s with no request, or on `chorus model stop`"
        return ", stopped with this process"

    def stop(self) -> None:
        """Stop the server if it is this process's own; a reused or shared one is left running."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            _end_group(proc.pid)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _end_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        _LIVE.discard(self)
        self._close_log()
        self.reused = False
        self.shared = False
        atexit.unregister(self.stop)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalLlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _end_group(pid: int, sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(pid, sig)  # the server runs in a session of its own
    except (ProcessLookupError, PermissionError):
        pass


def stop_detached(settings: Any, timeout_s: float = 20.0) -> str:
    """Stop the server left running on `settings.llm_port` (the shared one, or `chorus model
    serve`'s); what happened, in a line. Raises LocalServerError when there is none to stop."""
    path = pid_file(settings)
    with start_lock(settings):  # not while another process is starting it
        note = noted_server(settings)
        if note is None:
            path.unlink(missing_ok=True)  # a note whose server is gone (it went idle)
            if answers(int(settings.llm_port)):
                raise LocalServerError(
                    f"the server on port {settings.llm_port} was not started by Chorus "
                    "(`chorus model serve` or a shared start); not stopping it"
                )
            raise LocalServerError(f"no local LLM server is running on port {settings.llm_port}")
        pid = int(note["pid"])
        _end_group(pid)
        deadline = time.monotonic() + timeout_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            _end_group(pid, signal.SIGKILL)
        path.unlink(missing_ok=True)
    return f"stopped the local LLM server on port {settings.llm_port} (pid {pid})"
