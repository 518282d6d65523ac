"""The Verifier's sandbox: a command that sleeps forever, reads a secret, opens a socket or
eats memory or CPU is stopped (or finds nothing), and the caller always gets a result."""

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
from actors.relay.sandbox import SandboxPolicy, isolation, run_sandboxed

PY = sys.executable
FAST = SandboxPolicy(timeout_s=2, cpu_s=2, memory_mb=512)


def unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


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


def test_isolation_is_detected_and_stated():
    fence = isolation()
    assert fence.network_isolated == unshare_works()
    if not fence.network_isolated:
        assert "network not isolated: unshare -rn unavailable" in fence.note


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
    if not isolation().pid_namespace:
        pytest.skip(f"no PID namespace here: {isolation().note}")
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
    home = seen["env"]["HOME"]
    assert home != os.environ.get("HOME") and "chorus-sandbox-" in home
    assert not Path(home).exists()  # the scratch folder is gone afterwards


def test_no_visible_process_holds_the_verifiers_secret(tmp_path):
    """The secret in the Verifier's *initial* environment (/proc/PID/environ), not just
    os.environ: without namespaces the command could read it from its parent's /proc entry."""
    if not isolation().network_isolated:
        pytest.skip(f"no namespaces here: {isolation().note}")
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
    done = subprocess.run([PY, "-c", verifier], env=env, capture_output=True, text=True, timeout=30)
    assert "hits []" in done.stdout, done.stdout + done.stderr


def test_no_network_when_the_kernel_allows_isolation(tmp_path):
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
        allowed = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=3, network=True))
        fenced = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=3))
    finally:
        listener.close()
    assert allowed.stdout.startswith("connected")  # the listener is real: only the fence stops it
    if fenced.network_isolated:
        assert fenced.returncode == 3 and "refused" in fenced.stdout
        assert fenced.note == "" or "network not isolated" not in fenced.note
    else:
        assert "network not isolated" in fenced.note


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


@pytest.mark.parametrize("fence", ["net-only", "none"])
def test_the_weaker_fallbacks_still_kill_the_group_and_say_what_is_missing(tmp_path, monkeypatch, fence):
    """Where the kernel allows less, the timeout still kills the group and `note` says so."""
    if fence == "net-only":
        if not unshare_works():
            pytest.skip("unshare -rn does not work here")
        chosen = sandbox.Isolation(sandbox.NET_LAUNCHER, True, False, "no PID namespace (test)")
    else:
        chosen = sandbox.Isolation((), False, False, "network not isolated: unshare -rn unavailable (test)")
    monkeypatch.setattr(sandbox, "isolation", lambda: chosen)
    marker = f"chorus-fallback-{uuid.uuid4().hex}"
    argv = script(
        tmp_path,
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", "{marker}"])
        time.sleep(1000)
        """,
    )
    result = run_sandboxed(argv, tmp_path, SandboxPolicy(timeout_s=1))
    assert result.killed_by == "timeout" and result.returncode == -9
    assert result.note == chosen.note and result.network_isolated == chosen.network_isolated
    assert gone(marker)
    crashed = run_sandboxed(["sh", "-c", "kill -TERM $$"], tmp_path, FAST)
    assert crashed.returncode == -15 and crashed.killed_by == "SIGTERM"
