"""`chorus serve` as a user runs it: a real process on a free port, the embedded defaults
(the data folder and store of CHORUS_DATA_DIR / CHORUS_STORE_URL), loud when auth is open;
bad input is one line and exit 2 before anything starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from .conftest import free_port


def serve_env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHORUS_API_TOKENS")}
    env.update(
        CHORUS_DATA_DIR=str(tmp_path / "data"),
        CHORUS_STORE_URL=f"sqlite:///{tmp_path / 'chorus.db'}",
        CHORUS_LLM_BASE_URL="http://127.0.0.1:9/v1",
        **extra,
    )
    return env


def chorus(*args: str, env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "actors.cli", *args], env=env, text=True, **kwargs)


@pytest.mark.ray
def test_serve_answers_on_the_embedded_defaults_and_warns_when_open(tmp_path):
    port = free_port()
    proc = chorus("serve", "--port", str(port), env=serve_env(tmp_path), stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120  # a safety net for a hung start, not a measurement
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "chorus serve never answered"
                time.sleep(0.2)
        body = health.json()
        assert body["auth"]["enabled"] is False
        assert body["store"] == {"ok": True, "detail": "sqlite: 0 events"}
        assert body["ray"]["ok"] is True and body["ray"]["detail"] == "connected"
        assert body["llm"]["ok"] is False and body["status"] == "degraded"  # nothing listens on port 9
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert httpx.get(f"http://127.0.0.1:{port}/v1/openapi.json", timeout=10).json()["info"]["title"] == "Chorus"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert "WARNING: auth is OFF" in err
    assert f"http://127.0.0.1:{port}/" in err
    assert (tmp_path / "chorus.db").exists()


@pytest.mark.parametrize(
    "args, extra, says",
    [
        (["--port", "70000"], {}, "--port must be between 1 and 65535, not 70000"),
        (["--port", "x"], {}, "argument --port: invalid int value"),
        ([], {"CHORUS_API_TOKENS": "r1=reader"}, "CHORUS_API_TOKENS entry 1: unknown scope 'reader'"),
        ([], {"CHORUS_API_TOKENS_FILE": "/no/such/tokens"}, "CHORUS_API_TOKENS_FILE=/no/such/tokens: cannot read it"),
    ],
)
def test_serve_refuses_bad_input_in_one_line(tmp_path, args, extra, says):
    port = [] if "--port" in args else ["--port", str(free_port())]
    proc = chorus("serve", *args, *port, env=serve_env(tmp_path, **extra), stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], err


def test_serve_refuses_a_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = chorus("serve", "--port", str(port), env=serve_env(tmp_path), stderr=subprocess.PIPE, stdout=subprocess.PIPE)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip() == f"chorus: error: 127.0.0.1:{port} is in use"
