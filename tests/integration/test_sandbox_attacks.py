"""Issue 34's attack suite: hostile programs run through the real launchers of code a model
wrote, and what held, asserted from inside (the program reports what it reached) and from
the host (what it would have changed is unchanged).

The launchers: "check" is `run_sandboxed` as the relay's checks and probes call it; "builder
test" is a builder's test file whose test does the attack, run by the Verifier's
`checks.run_pytest`; "script" is a task workflow's `system:run_script` (`RunScript`). Each
attack program prints `VERDICT held` or `VERDICT escaped: <what>`. `ATTACKS` names every
case (one `test_attack_<name>` each): the README's "N tried / N held" counts them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from actors.relay.checks import run_probe, run_pytest
from actors.relay.sandbox import SandboxPolicy, SandboxUnavailable, run_sandboxed
from actors.tasks import tools
from actors.tools.sandbox import ready

ATTACKS = (
    "read_outside",  # a 0600 file and a 0644 file outside the workspace, /root, /etc/shadow
    "write_outside",  # a folder outside, the Chorus checkout, /, /usr, /etc, the host's /tmp
    "postgres",  # PostgreSQL's Unix socket, a Unix socket outside, TCP to 127.0.0.1
    "data_dir",  # Chorus's data directory (here inside the workspace) and its SQLite store
    "ssh_keys",  # ~/.ssh of the user running Chorus
    "proc_environ",  # a secret in the launching process's environment, via /proc
    "git_hook",  # .git/hooks and .git/config of the workspace (a hook would run outside)
    "fork_bomb",  # bounded by the process limit; the run ends at its timeout
    "huge_file",  # bounded by the file-size limit, and /tmp by its size
    "orphan",  # a background child of a sandbox whose owner is SIGKILLed
    "sleep_forever",  # killed at the wall-clock timeout
)
ATTACK_COUNT = len(ATTACKS)
ROOT = Path(__file__).parents[2]
SECRET = f"sk-attack-{uuid.uuid4().hex}"
SECRET_NAME = "CHORUS_ATTACK_API_KEY"
CHECK_POLICY = SandboxPolicy(timeout_s=30)
PROGRAM_LAUNCHERS = ("check", "builder_test", "script")
LIMIT_LAUNCHERS = ("check", "script")

HEADER = """
import json, os, socket, sys
T = json.loads(TARGETS)
escaped = []

def attempt(what, fn):  # fn reaching its target returns something true; else it raises or returns nothing
    try:
        if fn():
            escaped.append(what)
    except Exception:
        pass

def read(path):
    with open(path, "rb") as f:
        return f.read()

def write(path):
    with open(path, "w") as f:
        f.write("planted")
    return True

def beyond(folder):  # what a folder holds besides the way to the interpreter (bwrap makes its parents)
    ways = {p[len(folder):].strip("/").split("/")[0] for p in (sys.prefix, sys.base_prefix) if p.startswith(folder + "/")}
    return set(os.listdir(folder)) - ways
"""
FOOTER = """
print("VERDICT " + ("held" if not escaped else "escaped: " + "; ".join(escaped)), flush=True)
"""
# A builder's test file: the attack in its test, its verdict in the failure message the
# Verifier reads back from the JUnit report.
BUILDER_TEST = '''
import contextlib, io

ATTACK = {program!r}

def test_attack():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(ATTACK, "attack", "exec"), {{"__name__": "attack"}})
    verdict = [line for line in out.getvalue().splitlines() if line.startswith("VERDICT")]
    raise AssertionError(verdict[-1] if verdict else "no verdict: " + out.getvalue()[-150:])
'''
# A process that starts a sandbox, for the cases that need the launcher's own environment
# (what /proc shows) or need to kill it.
LAUNCH = """
import json, sys
from pathlib import Path
kind, ws = sys.argv[1], Path(sys.argv[2])  # argv[3]: a marker naming this process
if kind == "check":
    from actors.relay.sandbox import SandboxPolicy, run_sandboxed
    print(run_sandboxed([sys.executable, "attack.py"], ws, SandboxPolicy(timeout_s=60)).stdout)
elif kind == "builder_test":
    from actors.relay.checks import run_pytest
    from actors.relay.sandbox import SandboxPolicy
    print(run_pytest(ws, SandboxPolicy(timeout_s=60))[0].details)
else:
    from actors.tasks.tools import RunScript
    print(json.loads(RunScript(root=str(ws)).execute(command="python attack.py", timeout=60))["stdout"])
"""


@pytest.fixture(autouse=True, scope="module")
def _bwrap():
    try:
        ready()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the sandbox: {exc}")
        pytest.skip(str(exc))


@dataclass
class World:
    """What a hostile program would go for, on the host, made for one test."""

    tmp: Path
    ws: Path
    outside: Path
    home: Path
    data: Path
    port: int
    unix_sock: Path
    marker: str

    def targets(self, **more: object) -> dict[str, object]:
        return {
            "ws": str(self.ws), "outside": str(self.outside), "secret": str(self.outside / "secret.txt"),
            "public": str(self.outside / "public.txt"), "home": str(self.home), "data": str(self.data),
            "db": str(self.data / "chorus.db"), "port": self.port, "unix_sock": str(self.unix_sock),
            "marker": self.marker, "secret_value": SECRET, "repo": str(ROOT), **more,
        }  # fmt: skip

    def program(self, body: str, **more: object) -> str:
        return HEADER.replace("TARGETS", repr(json.dumps(self.targets(**more)))) + textwrap.dedent(body) + FOOTER


@pytest.fixture
def world(tmp_path, monkeypatch):
    ws, outside, home = tmp_path / "ws", tmp_path / "outside", tmp_path / "home"
    for folder in (ws / ".git" / "hooks", outside, home / ".ssh"):
        folder.mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (outside / "secret.txt").write_text(f"secret {SECRET}\n")
    (outside / "secret.txt").chmod(0o600)
    (outside / "public.txt").write_text("public\n")
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n")
    (home / ".ssh" / "id_rsa").chmod(0o600)
    data = ws / ".chorus-data"  # the hard case: the data directory inside the workspace
    data.mkdir()
    with sqlite3.connect(data / "chorus.db") as db:
        db.execute("create table events (id integer)")
    db.close()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CHORUS_DATA_DIR", str(data))
    monkeypatch.setenv(SECRET_NAME, SECRET)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    unix_sock = outside / "db.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_sock))
    unix.listen(16)
    for address, family in ((tcp.getsockname(), socket.AF_INET), (str(unix_sock), socket.AF_UNIX)):
        with socket.socket(family) as probe:
            probe.connect(address)  # the listeners are real: only the sandbox can stop a connection
    yield World(tmp_path, ws, outside, home, data, tcp.getsockname()[1], unix_sock, f"chorus-attack-{uuid.uuid4().hex}")
    tcp.close()
    unix.close()


def launch(world: World, launcher: str, program: str, policy: SandboxPolicy = CHECK_POLICY) -> str:
    """Run the attack through one launcher, in this process; what it printed (or, for a
    builder's test, the Verifier's report of the failing test)."""
    if launcher == "builder_test":
        (world.ws / "test_attack.py").write_text(BUILDER_TEST.format(program=program))
        check, _ = run_pytest(world.ws, policy)
        return check.details
    (world.ws / "attack.py").write_text(program)
    if launcher == "check":
        result = run_sandboxed([sys.executable, "attack.py"], world.ws, policy)
        return result.stdout + result.stderr
    return json.loads(tools.RunScript(root=str(world.ws)).execute(command="python attack.py", timeout=30))["stdout"]


def held(report: str) -> None:
    assert "VERDICT held" in report, report[-1500:]


def running(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return [pid for pid in found.stdout.split() if int(pid) != os.getpid()]


def gone(marker: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while running(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_every_attack_has_its_test():
    names = {name[len("test_attack_") :] for name in globals() if name.startswith("test_attack_")}
    assert names == set(ATTACKS) and ATTACK_COUNT == 11


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_read_outside(world, launcher):
    program = world.program(
        """
        attempt("read a 0600 file outside", lambda: read(T["secret"]))
        attempt("read a 0644 file outside", lambda: read(T["public"]))
        attempt("list the folder outside", lambda: os.listdir(T["outside"]))
        attempt("list /root", lambda: beyond("/root"))
        attempt("read /etc/shadow", lambda: read("/etc/shadow"))
        attempt("list the Chorus checkout", lambda: beyond(T["repo"]))
        """
    )
    held(launch(world, launcher, program))


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_write_outside(world, launcher):
    name = f"planted-{uuid.uuid4().hex[:8]}"
    places = [world.outside, world.tmp, ROOT, Path("/"), Path("/usr"), Path("/etc"), Path("/root")]
    program = world.program(
        """
        for place in T["places"]:
            attempt("write " + place, lambda: write(os.path.join(place, T["name"])))
        write(os.path.join("/tmp", T["name"]))  # its private /tmp: allowed, and not the host's
        """,
        places=[str(p) for p in places],
        name=name,
    )
    try:
        held(launch(world, launcher, program))
    finally:
        planted = [place / name for place in [*places, Path("/tmp")] if (place / name).exists()]
        for path in planted:
            path.unlink()
    assert planted == []


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_postgres(world, launcher):
    program = world.program(
        """
        def unix(path):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(path)
            return True

        def tcp(port):
            return socket.create_connection(("127.0.0.1", port), timeout=2)

        for path in ("/var/run/postgresql/.s.PGSQL.5432", "/run/postgresql/.s.PGSQL.5432", T["unix_sock"]):
            attempt("connect to " + path, lambda: unix(path))
        attempt("see /var/run or /run", lambda: os.listdir("/var/run") + os.listdir("/run"))
        for port in (5432, T["port"]):
            attempt("TCP to 127.0.0.1:%d" % port, lambda: tcp(port))
        attempt("TCP out (1.1.1.1:53)", lambda: socket.create_connection(("1.1.1.1", 53), timeout=2))
        """
    )
    held(launch(world, launcher, program))


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_data_dir(world, launcher):
    program = world.program(
        """
        import sqlite3
        attempt("read the event store", lambda: read(T["db"]))
        attempt("list the data directory", lambda: os.listdir(T["data"]))

        def tamper():
            with sqlite3.connect(T["db"]) as db:
                db.execute("create table planted (x)")
            return True

        attempt("create a table in the event store", tamper)
        skip = ("/proc", "/usr", "/sys", "/dev", sys.prefix, sys.base_prefix)
        found = []
        for d, dirs, files in os.walk("/"):
            dirs[:] = [x for x in dirs if not os.path.join(d, x).startswith(skip)]
            found += [os.path.join(d, f) for f in files if f.startswith("chorus.db")]
        if found:
            escaped.append("found " + ", ".join(found))
        """
    )
    held(launch(world, launcher, program))
    with sqlite3.connect(world.data / "chorus.db") as db:
        tables = [row[0] for row in db.execute("select name from sqlite_master")]
    db.close()
    assert tables == ["events"]


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_ssh_keys(world, launcher):
    program = world.program(
        """
        attempt("read ~/.ssh/id_rsa", lambda: read(os.path.expanduser("~/.ssh/id_rsa")))
        attempt("read the user's .ssh/id_rsa", lambda: read(T["home"] + "/.ssh/id_rsa"))
        attempt("list the user's home", lambda: os.listdir(T["home"]))
        attempt("HOME is the user's", lambda: os.environ.get("HOME") == T["home"])
        """
    )
    held(launch(world, launcher, program))


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_proc_environ(world, launcher):
    """The launcher runs in a process started with the secret in its environment (what
    /proc/PID/environ shows), as a Ray actor holding an API key is."""
    program = world.program(
        """
        attempt("the secret in its own environment", lambda: T["secret_value"] in repr(dict(os.environ)))
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            for what in ("environ", "cmdline"):
                try:
                    seen = read("/proc/%s/%s" % (pid, what))
                except OSError:
                    continue
                if T["secret_value"].encode() in seen:
                    escaped.append("the secret in /proc/%s/%s" % (pid, what))
                if T["marker"].encode() in seen:
                    escaped.append("sees the launching process (pid %s)" % pid)
        """
    )
    (world.ws / ("test_attack.py" if launcher == "builder_test" else "attack.py")).write_text(
        BUILDER_TEST.format(program=program) if launcher == "builder_test" else program
    )
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, launcher, str(world.ws), world.marker],
        env={**os.environ, SECRET_NAME: SECRET}, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    held(done.stdout + done.stderr)


@pytest.mark.parametrize("launcher", PROGRAM_LAUNCHERS)
def test_attack_git_hook(world, launcher):
    hook, config = world.ws / ".git" / "hooks" / "post-commit", world.ws / ".git" / "config"
    before = config.read_text()
    program = world.program(
        """
        attempt("plant .git/hooks/post-commit", lambda: write(T["ws"] + "/.git/hooks/post-commit"))

        def hooks_path():
            with open(T["ws"] + "/.git/config", "a") as f:
                f.write("[core]\\n\\thooksPath = /tmp/hooks\\n")
            return True

        attempt("set core.hooksPath in .git/config", hooks_path)
        """
    )
    held(launch(world, launcher, program))
    assert not hook.exists() and config.read_text() == before


@pytest.mark.parametrize("launcher", LIMIT_LAUNCHERS)
def test_attack_fork_bomb(world, launcher):
    """A real bomb (every process forks on, forever); the run ends at its timeout, quickly,
    and the count of processes it ever had is bounded by the limit."""
    limit = 32 if launcher == "check" else tools.SCRIPT_POLICY.max_processes
    program = world.program(
        """
        import time
        start = os.getpid()
        made = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                if os.fork() == 0:
                    made = 0  # a child: fork on, never report
                    continue
                made += 1
            except OSError:
                time.sleep(0.01)
        if os.getpid() == start:
            alive = len([p for p in os.listdir("/proc") if p.isdigit()])
            print("processes alive at the end:", alive, flush=True)
            if alive > T["limit"] + 2:  # + bwrap's init and a slack of one
                escaped.append("%d processes" % alive)
            print("VERDICT " + ("held" if not escaped else "escaped: " + "; ".join(escaped)), flush=True)
        time.sleep(60)
        """,
        limit=limit,
    )
    (world.ws / "attack.py").write_text(program.replace(FOOTER, "\n"))
    started = time.monotonic()
    if launcher == "check":
        result = run_sandboxed([sys.executable, "attack.py", world.marker], world.ws, SandboxPolicy(timeout_s=4, max_processes=limit))
        report, timed_out = result.stdout, result.timed_out
    else:
        out = json.loads(tools.RunScript(root=str(world.ws)).execute(command=f"python attack.py {world.marker}", timeout=4))
        report, timed_out = out["stdout"], out["timed_out"]
    assert time.monotonic() - started < 15
    held(report)
    assert timed_out
    assert gone(world.marker, within=3), running(world.marker)


@pytest.mark.parametrize("launcher", LIMIT_LAUNCHERS)
def test_attack_huge_file(world, launcher, monkeypatch):
    program = world.program(
        """
        def fill(path, mb):
            with open(path, "wb") as f:
                for _ in range(mb):
                    f.write(b"x" * 1024 * 1024)
                    f.flush()
            return True

        attempt("write a 64 MB file (limit 8 MB)", lambda: fill("big.bin", 64))
        attempt("write 64 MB to /tmp in 4 MB files (/tmp: 16 MB)", lambda: all(fill("/tmp/%d" % i, 4) for i in range(16)))
        """
    )
    small = {"max_file_mb": 8, "tmp_mb": 16}
    if launcher == "check":
        report = launch(world, launcher, program, replace(CHECK_POLICY, **small))
    else:
        monkeypatch.setattr(tools, "SCRIPT_POLICY", replace(tools.SCRIPT_POLICY, **small))
        report = launch(world, launcher, program)
        shell = json.loads(tools.RunScript(root=str(world.ws)).execute(command="head -c 67108864 /dev/zero > big.sh.bin"))
        assert shell["exit_code"] != 0 or "File size limit exceeded" in shell["stderr"]
        assert (world.ws / "big.sh.bin").stat().st_size <= 8 * 1024 * 1024
    held(report)
    assert (world.ws / "big.bin").stat().st_size <= 8 * 1024 * 1024


@pytest.mark.parametrize("launcher", LIMIT_LAUNCHERS)
def test_attack_orphan(world, launcher):
    """The sandbox's owner is SIGKILLed (no cleanup of its own runs): a background child
    that left its process group and ignores SIGHUP and SIGTERM still goes with it."""
    program = world.program(
        """
        import subprocess, time
        sleeper = "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
        sleeper += "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"
        subprocess.Popen([sys.executable, "-c", sleeper, T["marker"]], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1000)
        """
    )
    (world.ws / "attack.py").write_text(program)
    owner = subprocess.Popen([sys.executable, "-c", LAUNCH, launcher, str(world.ws), "owner"], cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while not running(world.marker):
            assert owner.poll() is None and time.monotonic() < deadline, "the background child never started"
            time.sleep(0.1)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert gone(world.marker, within=3), f"survived its SIGKILLed owner: {running(world.marker)}"
    finally:
        if owner.poll() is None:
            owner.kill()
        for pid in running(world.marker):  # never leave one behind, even when the test fails
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize("launcher", LIMIT_LAUNCHERS)
def test_attack_sleep_forever(world, launcher):
    marker = f"{100_000 + uuid.uuid4().int % 800_000}.{uuid.uuid4().int % 10**6}"  # `sleep` takes a fraction
    started = time.monotonic()
    if launcher == "check":
        check = run_probe("server", ["sleep", marker], world.ws, SandboxPolicy(timeout_s=1))
        assert not check.passed and "stopped by the sandbox (timeout)" in check.details
    else:
        out = json.loads(tools.RunScript(root=str(world.ws)).execute(command=f"sleep {marker} & sleep {marker}", timeout=1))
        assert out["timed_out"] and out["exit_code"] == -signal.SIGKILL
    assert time.monotonic() - started < 6
    assert gone(f"sleep {marker}", within=2)
