"""The Verifier's sandbox: a command that sleeps forever, reads a secret, opens a socket or
eats memory or CPU is stopped (or finds nothing), and the caller always gets a result.
The hostile programs of issue 34 are tests/integration/test_sandbox_attacks.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from actors.relay import sandbox
from actors.relay.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from actors.tools import sandbox as shared

PY = sys.executable
FAST = SandboxPolicy(timeout_s=2, cpu_s=2, memory_mb=512)


@pytest.fixture(autouse=True)
def _bwrap():
    try:
        shared.ready()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the sandbox: {exc}")
        pytest.skip(str(exc))


def processes_with(marker: str) -> list[int]:
    """Live processes (on the host's /proc) whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def gone(marker: str, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / f"script_{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return [PY, str(path)]


def test_the_relay_uses_the_shared_sandbox():
    assert sandbox.run_sandboxed is shared.run_sandboxed and sandbox.SandboxPolicy is shared.SandboxPolicy


def test_without_bwrap_nothing_runs_and_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    shared.host.cache_clear()
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    try:
        with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
            shared.host()
    finally:
        shared.host.cache_clear()


def test_sleeping_forever_is_killed_at_the_timeout_with_its_child(tmp_path):
    marker = f"chorus-sleeper-{uuid.uuid4().hex}"
    argv = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"])
        print("started", flush=True)
        time.sleep(1000)
        """,
    )
    started = time.monotonic()
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=1.5))
    assert time.monotonic() - started < 6
    assert result.timed_out and result.killed_by == "timeout"
    assert result.returncode != 0
    assert "started" in result.stdout  # output before the kill is kept
    assert gone(marker), f"the child survived: {processes_with(marker)}"


def test_a_child_that_leaves_the_process_group_dies_with_the_namespace(tmp_path):
    marker = f"chorus-escapee-{uuid.uuid4().hex}"
    argv = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"], start_new_session=True)
        time.sleep(1000)
        """,
    )
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=1.5))
    assert result.killed_by == "timeout"
    assert gone(marker), f"the escaped child survived: {processes_with(marker)}"


def test_a_finished_command_leaves_no_background_process(tmp_path):
    marker = f"chorus-leftover-{uuid.uuid4().hex}"
    argv = script(
        tmp_path,
        f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("done")
        """,
    )
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=10))
    assert result.returncode == 0 and result.stdout.strip() == "done"
    assert not result.timed_out and result.duration_s < 5
    assert gone(marker)


def test_secrets_in_the_environment_do_not_reach_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    monkeypatch.setenv("CHORUS_LLM_API_KEY", "chorus-secret-value-456")
    monkeypatch.setenv("LANG", "C.UTF-8")
    argv = script(
        tmp_path,
        """
        import json, os
        print(json.dumps({"key": os.environ.get("OPENAI_API_KEY"), "env": dict(os.environ)}))
        """,
    )
    result = run_sandboxed(argv, tmp_path, FAST)
    assert result.returncode == 0, result.stderr
    assert "sk-test-secret-value-123" not in result.stdout
    assert "chorus-secret-value-456" not in result.stdout
    seen = __import__("json").loads(result.stdout)
    assert seen["key"] is None
    assert "CHORUS_LLM_API_KEY" not in seen["env"]
    assert seen["env"]["LANG"] == "C.UTF-8"  # allowed variables do pass
    assert seen["env"]["HOME"] == "/tmp/home"  # in its private /tmp, gone with it
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "PWD", *FAST.env_allow}


def test_no_visible_process_holds_the_verifiers_secret(tmp_path):
    """The secret in the Verifier's *initial* environment (/proc/PID/environ), not just
    os.environ: without namespaces the command could read it from its parent's /proc entry."""
    scan = script(
        tmp_path,
        """
        from pathlib import Path
        hits = []
        for p in Path("/proc").iterdir():
            try:
                if b"sk-initial-env-secret-789" in (p / "environ").read_bytes():
                    hits.append(p.name)
            except OSError:
                pass
        print("hits", hits)
        """,
    )
    verifier = (
        "import sys; from pathlib import Path; from actors.relay.sandbox import *; "
        f"r = run_sandboxed({scan!r}, Path({str(tmp_path)!r}), SandboxPolicy(timeout_s=5)); "
        "print(r.stdout, r.stderr)"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-initial-env-secret-789", "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run([PY, "-c", verifier], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert "hits []" in done.stdout, done.stdout + done.stderr


def test_no_network(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    argv = script(
        tmp_path,
        f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
            print("connected")
        except OSError as exc:
            print("refused", exc)
            raise SystemExit(3)
        """,
    )
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # the listener is real
        fenced = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=3))
    finally:
        listener.close()
    assert fenced.returncode == 3 and "refused" in fenced.stdout
    assert fenced.network_isolated and fenced.note == ""


def test_a_memory_hog_is_stopped_by_the_address_space_limit(tmp_path):
    argv = script(tmp_path, "x = bytearray(2 * 1024 ** 3)\nprint('allocated')\n")
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=3, memory_mb=256))
    assert result.killed_by == "memory"
    assert result.returncode != 0 and "allocated" not in result.stdout
    assert not result.timed_out


def test_a_cpu_hog_is_stopped_by_the_cpu_limit(tmp_path):
    argv = script(tmp_path, "while True:\n    pass\n")
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=5, cpu_s=1))
    assert result.killed_by == "cpu" and not result.timed_out
    assert result.duration_s < 4


def test_output_is_bounded(tmp_path):
    argv = script(tmp_path, "print('x' * 100_000)\n")
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=3, max_output_chars=1_000))
    assert result.returncode == 0
    assert len(result.stdout) < 1_100 and "more bytes cut" in result.stdout


def test_a_missing_command_is_a_result_not_an_exception(tmp_path):
    result = run_sandboxed(["no-such-command-chorus"], tmp_path, FAST)
    assert result.returncode == 127 and "command not found" in result.stderr
    assert result.killed_by is None


def test_a_bad_policy_is_refused():
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxPolicy(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxPolicy(memory_mb=-1)


def test_a_command_killed_by_a_signal_says_which(tmp_path):
    crashed = run_sandboxed(["sh", "-c", "kill -TERM $$"], tmp_path, FAST)
    assert crashed.returncode == -15 and crashed.killed_by == "SIGTERM"


def test_files_the_command_writes_are_given_back_to_the_folders_owner(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    result = run_sandboxed(["sh", "-c", "id -u; echo new > new.txt; ln -s /etc/hostname link"], tmp_path, FAST)
    assert result.returncode == 0, result.stderr
    owner = tmp_path.stat().st_uid
    for name in ("old.txt", "new.txt", "link"):
        assert (tmp_path / name).lstat().st_uid == owner
    if os.geteuid() == 0:
        assert int(result.stdout) >= shared.UID_BASE  # a uid of its own, not root
