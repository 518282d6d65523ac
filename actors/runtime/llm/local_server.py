"""The embedded LLM endpoint: llama-cpp-python's OpenAI-compatible server on loopback.

Started by Chorus when no endpoint is configured and stopped with it. If something already
answers on the port (a server left from another run, or one the user started), it is reused
and left running. The server loads whatever model it was given and answers to any model name
a request sends (we also register `settings.llm_model` as its alias).

    with LocalLlamaServer(settings) as server:
        provider = provider_from_settings(settings, base_url=server.base_url)
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from actors.runtime.llm.local_model import ensure_model

HOST = "127.0.0.1"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings", "starlette_context")
BUILD_FLAGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"


class LocalServerError(Exception):
    """The embedded server cannot be installed, started or reached; the message says why."""


BUSY_WAIT_S = 180.0  # how long a taken port may stay silent before it is not a server


def answers(port: int, timeout: float = 2.0) -> bool:
    """True if an OpenAI-compatible server answers GET /v1/models on loopback:`port`."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/v1/models", timeout=timeout) as r:
            return r.status == 200 and "data" in json.loads(r.read() or b"{}")
    except (OSError, ValueError, urllib.error.URLError):
        return False


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
    ) -> None:
        self.settings = settings
        self.port = int(settings.llm_port)
        self.n_threads = n_threads or os.cpu_count() or 2
        self.start_timeout_s = start_timeout_s
        self.log_path = Path(settings.data_dir) / "logs" / "llama-server.log"
        self.reused = False
        self.started_in_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.reused or (self._proc is not None and self._proc.poll() is None)

    def command(self, model: Path) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", self.settings.llm_model,
            "--host", HOST,
            "--port", str(self.port),
            "--n_ctx", str(self.settings.llm_context),
            "--n_threads", str(self.n_threads),
        ]  # fmt: skip

    def start(self) -> LocalLlamaServer:
        if self.running:
            return self
        started = time.monotonic()
        if answers(self.port):
            self.reused = True
            self.started_in_s = time.monotonic() - started
            return self
        check_installed()
        if not _port_free(self.port):
            # Taken: perhaps by another Chorus process's server, busy with a long completion
            # (llama.cpp answers nothing while it computes). Give it time before giving up.
            deadline = time.monotonic() + BUSY_WAIT_S
            while time.monotonic() < deadline:
                if answers(self.port, timeout=5.0):
                    self.reused = True
                    self.started_in_s = time.monotonic() - started
                    return self
                time.sleep(1.0)
            raise LocalServerError(
                f"port {self.port} on {HOST} is taken by something that did not answer as an "
                f"OpenAI-compatible server within {BUSY_WAIT_S:.0f}s; set CHORUS_LLM_PORT to a free port"
            )
        model = ensure_model(self.settings)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        cmd = self.command(model)
        self._log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
        self._log.flush()
        print(f"chorus: starting the local LLM server on {self.base_url} (log: {self.log_path})", file=sys.stderr)
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        atexit.register(self.stop)
        deadline = started + self.start_timeout_s
        while True:
            code = self._proc.poll()
            if code is not None:
                self._close_log()
                self._proc = None
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
        return self

    def stop(self) -> None:
        """Stop the server if we started it; a reused one is left running."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._close_log()
        self.reused = False
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
