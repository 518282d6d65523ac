"""The one sandbox for code a model wrote: the relay's checks (ruff, pytest, probes, the
resubmit hook, the benchmark's judge) and the task workflows' `system:run_script`.

Built on bubblewrap (`bwrap`, Flatpak's sandbox), not by hand. Inside, a command sees:

- read-only: /usr (and the /bin, /lib links into it), the Python it needs (the venv, the
  interpreter's prefix), a few /etc files (the dynamic linker's, time zone, nsswitch, TLS
  roots) and a made-up passwd/group/hosts, plus what the policy adds (`extra_ro`);
- writable: its working folder and the folders the caller names (`writable`), each at its
  own path (a `.git` in them stays read-only: a hook planted there would run outside), and
  a private, size-limited /tmp where HOME is;
- its own /proc (only its own processes), a minimal /dev, no network (a new network
  namespace: only a loopback of its own), no /run or /var/run (no PostgreSQL socket), no
  home and no data directory (hidden even when it lies under a folder that is shown);
- an unprivileged uid, no capabilities, no_new_privs, a new session, an environment built
  from an allow-list; limits on processes, file size, CPU, address space, no core files,
  and a wall-clock timeout. It dies with its owner (`--die-with-parent`, and a PID
  namespace: when its first process ends, everything it started ends).

Run as root, bwrap needs no user namespace: the command gets a uid of its own for the run
(so the process limit counts that run alone, and host file permissions hold for it), and
the writable folders are lent to that uid for the run and given back afterwards. Run as
anyone else, bwrap's unprivileged mode keeps the caller's uid in a user namespace in which
no further one may be made. Without bwrap (or where it cannot start) every call raises
`SandboxUnavailable`: there is no weaker mode.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from actors.tools.process import drain, kill_group

INSTALL_HINT = "install Debian's bubblewrap: apt-get install bubblewrap (scripts/setup.sh does it)"
SETPRIV = "/usr/bin/setpriv"
PRLIMIT = "/usr/bin/prlimit"
MAX_OUTPUT_CHARS = 20_000  # per stream: enough for a failing test's traceback, bounded for the log
DRAIN_AFTER_KILL_S = 2.0  # reading goes on this long after a kill; pipes an escapee holds are then dropped
UID_BASE = 0x7000_0000  # run as root: each run's uid is drawn from here (2**24 of them), used by no account
HOME = "/tmp/home"
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/nsswitch.conf",
    "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/mime.types",
)  # fmt: skip
REFUSED_WRITABLE = ("/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/sys", "/run", "/var", "/root", "/home")
MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "memory allocation of")
FILE_SIZE_MARKERS = ("File too large",)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run here (no bwrap, or bwrap cannot start): nothing is run."""


@dataclass(frozen=True)
class SandboxPolicy:
    """The fence. Defaults suit a test suite of a small project on a small machine."""

    timeout_s: float = 60.0
    cpu_s: int = 60  # per process
    memory_mb: int = 1024  # address space, per process
    max_processes: int = 64  # processes and threads of the run's uid
    max_file_mb: int = 256  # the largest file it may write
    tmp_mb: int = 256  # its private /tmp (memory-backed), HOME included
    env_allow: tuple[str, ...] = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
    extra_ro: tuple[str, ...] = ()  # more host folders shown read-only (a tool installed elsewhere)
    max_output_chars: int = MAX_OUTPUT_CHARS

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"sandbox timeout_s must be positive, not {self.timeout_s!r}")
        for name in ("cpu_s", "memory_mb", "max_processes", "max_file_mb", "tmp_mb"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"sandbox {name} must be a positive whole number, not {value!r}")
        if self.max_output_chars < 100:
            raise ValueError(f"sandbox max_output_chars must be at least 100, not {self.max_output_chars!r}")
        if any(not os.path.isabs(p) for p in self.extra_ro):
            raise ValueError(f"sandbox extra_ro takes absolute paths, not {self.extra_ro!r}")


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed command did. `returncode` is -N when signal N ended it (bwrap
    reports that as 128+N, read back here). `killed_by` names why it stopped: "timeout",
    "cpu", "memory", "file_size", or a signal name; None for a command that ended on its own.
    `network_isolated` is always True and `note` empty: there is no weaker mode to state."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    killed_by: str | None
    network_isolated: bool = True
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed_by is None


@dataclass(frozen=True)
class Host:
    """What the sandbox's view is made of on this machine (found once, see `host()`)."""

    bwrap: str
    privileged: bool  # running as root: no user namespace, setpriv to the run's uid
    python: tuple[str, ...]  # the venv and the interpreter's prefix, shown read-only
    venv_bin: str  # first on PATH inside: ruff, pytest and python of the venv
    links: tuple[tuple[str, str], ...]  # (/bin, "usr/bin"): merged-/usr links, made again inside
    system_dirs: tuple[str, ...]  # /bin and friends that are real folders here, shown read-only
    data_dir: str  # Chorus's data directory (never shown); set by `ready()`


@dataclass(frozen=True)
class Launch:
    """One run's particulars: who it runs as, what it may write, its environment, and the
    descriptors bwrap reads the made-up /etc files from (dest -> fd)."""

    uid: int
    gid: int
    cwd: str
    writable: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    data_fds: tuple[tuple[str, int], ...]


def sandbox_argv(command: Sequence[str], policy: SandboxPolicy, host: Host, launch: Launch) -> list[str]:
    """The whole command line: bwrap, then (as root) setpriv, then prlimit, then `command`.
    Pure: the same inputs give the same list, whatever the machine."""
    argv = [host.bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not host.privileged:
        argv += ["--unshare-user", "--disable-userns"]
    argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session"]
    for _, args in sorted(_mounts(policy, host, launch), key=lambda m: len(Path(m[0]).parts)):
        argv += args
    argv += ["--chdir", launch.cwd, "--clearenv"]
    for name, value in launch.env:
        argv += ["--setenv", name, value]
    argv.append("--")
    if host.privileged:
        ids = [f"--reuid={launch.uid}", f"--regid={launch.gid}", "--clear-groups"]
        argv += [SETPRIV, *ids, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    mb = 1024 * 1024
    argv += [
        PRLIMIT, f"--nproc={policy.max_processes}", f"--fsize={policy.max_file_mb * mb}",
        f"--cpu={policy.cpu_s}:{policy.cpu_s + 1}", f"--as={policy.memory_mb * mb}", "--core=0", "--",
    ]  # fmt: skip
    return argv + list(command)


def _mounts(policy: SandboxPolicy, host: Host, launch: Launch) -> list[tuple[str, list[str]]]:
    """(destination, bwrap arguments), to be applied parents first: a folder shown inside
    another is mounted after it, so it lies on top."""
    mounts: list[tuple[str, list[str]]] = [
        ("/usr", ["--ro-bind", "/usr", "/usr"]),
        ("/proc", ["--proc", "/proc"]),
        ("/dev", ["--dev", "/dev"]),
        ("/tmp", ["--perms", "1777", "--size", str(policy.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]),
        ("/dev/shm", ["--perms", "1777", "--size", str(64 * 1024 * 1024), "--tmpfs", "/dev/shm"]),
        ("/etc", ["--perms", "0755", "--dir", "/etc"]),
        (HOME, ["--perms", "0777", "--dir", HOME]),
    ]
    mounts += [(link, ["--symlink", target, link]) for link, target in host.links]
    mounts += [(path, ["--ro-bind", path, path]) for path in host.system_dirs]
    mounts += [(path, ["--ro-bind-try", path, path]) for path in ETC]
    mounts += [(dest, ["--perms", "0644", "--ro-bind-data", str(fd), dest]) for dest, fd in launch.data_fds]
    shown = [*host.python, *policy.extra_ro]
    mounts += [(path, ["--ro-bind-try", path, path]) for path in shown]
    mounts += [(path, ["--bind", path, path]) for path in launch.writable]
    mounts += [(f"{path}/.git", ["--ro-bind-try", f"{path}/.git", f"{path}/.git"]) for path in launch.writable]
    if any(_under(host.data_dir, p) for p in [*shown, *launch.writable]):
        mounts.append((host.data_dir, ["--perms", "0700", "--tmpfs", host.data_dir]))
    taken = {dest for dest, _ in mounts} | {"/"}
    bound = ["/usr", "/proc", "/dev", *host.system_dirs, *shown, *launch.writable]
    for dest in list(taken):  # bwrap would make missing parents 0700: unreadable to the uid inside
        for parent in Path(dest).parents:
            p = str(parent)
            if p not in taken and not any(_under(p, b) for b in bound):
                taken.add(p)
                mounts.append((p, ["--perms", "0755", "--dir", p]))
    return mounts


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def etc_files(uid: int, gid: int) -> dict[str, str]:
    """The made-up /etc/passwd, /etc/group and /etc/hosts: the run's user and localhost only."""
    return {
        "/etc/passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:{uid}:{gid}:sandbox:{HOME}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "/etc/group": f"root:x:0:\nsandbox:x:{gid}:\nnogroup:x:65534:\n",
        "/etc/hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    }


def sandbox_env(policy: SandboxPolicy, host: Host, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The command's whole environment: the allowed variables the caller has, a PATH of the
    venv and the system, HOME and TMPDIR in the private /tmp, and what the caller sets."""
    env = {name: os.environ[name] for name in policy.env_allow if name in os.environ}
    env.update(PATH=f"{host.venv_bin}:/usr/local/bin:/usr/bin:/bin", HOME=HOME, TMPDIR="/tmp")
    return {**env, **(extra or {})}


@lru_cache(maxsize=1)
def host() -> Host:
    """This machine's sandbox ingredients; raises SandboxUnavailable without bwrap."""
    bwrap = shutil.which("bwrap") or ""
    missing = [tool for tool in (bwrap, SETPRIV, PRLIMIT) if not tool or not os.access(tool, os.X_OK)]
    if missing:
        raise SandboxUnavailable(f"no sandbox: {missing[0] or 'bwrap'} is missing; {INSTALL_HINT}")
    python = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)))}
    links, dirs = [], []
    for path in SYSTEM_LINKS:
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            dirs.append(path)
    return Host(
        bwrap=bwrap,
        privileged=os.geteuid() == 0,
        python=tuple(sorted(python)),
        venv_bin=os.path.dirname(os.path.abspath(sys.executable)),
        links=tuple(links),
        system_dirs=tuple(dirs),
        data_dir="",
    )


def run_sandboxed(
    argv: Sequence[str],
    cwd: Path,
    policy: SandboxPolicy | None = None,
    *,
    extra_env: Mapping[str, str] | None = None,
    writable: Iterable[Path | str] = (),
) -> SandboxResult:
    """Run `argv` in `cwd` inside the sandbox and wait for it, at most `policy.timeout_s`
    (plus a short grace to collect output). `cwd` and `writable` are the only host folders
    it may write. Never raises for what the command does; raises SandboxUnavailable when
    there is no sandbox, and ValueError for a folder that must not be lent (/, /usr, ...)."""
    policy = policy or SandboxPolicy()
    argv = tuple(str(a) for a in argv)
    if not argv:
        raise ValueError("run_sandboxed needs a command")
    machine = ready()
    if not Path(cwd).is_dir():
        return SandboxResult(argv, 127, "", f"no such folder: {cwd}", 0.0, False, None)
    folders = tuple(dict.fromkeys(os.path.realpath(p) for p in (cwd, *writable)))
    refused = [f for f in folders if f in REFUSED_WRITABLE]
    if refused:
        raise ValueError(f"the sandbox will not make {refused[0]} writable")
    env = sandbox_env(policy, machine, extra_env)
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env["PATH"])
    if program is None:
        return SandboxResult(argv, 127, "", f"command not found: {argv[0]}", 0.0, False, None)
    uid = UID_BASE + secrets.randbelow(1 << 24) if machine.privileged else os.getuid()
    gid = uid if machine.privileged else os.getgid()
    lent = _lend(folders, uid, gid, machine) if machine.privileged else {}
    fds: list[int] = []
    started = time.monotonic()
    try:
        data = []
        for dest, text in etc_files(uid, gid).items():
            fds.append(_data_fd(text))
            data.append((dest, fds[-1]))
        launch = Launch(uid, gid, folders[0], folders, tuple(env.items()), tuple(data))
        result = _run(sandbox_argv((program, *argv[1:]), policy, machine, launch), policy, fds)
    finally:
        for fd in fds:
            os.close(fd)
        if machine.privileged:
            _give_back(folders, lent, machine)
    code, out, err, timed_out = result
    duration = time.monotonic() - started
    if 128 < code <= 128 + 64:
        code = -(code - 128)  # bwrap's report of the command's death by a signal
    return SandboxResult(
        argv=argv,
        returncode=code,
        stdout=out,
        stderr=err,
        duration_s=round(duration, 3),
        timed_out=timed_out,
        killed_by=_why_stopped(code, timed_out, err, duration, policy),
    )


def _run(full: list[str], policy: SandboxPolicy, fds: list[int]) -> tuple[int, str, str, bool]:
    proc = subprocess.Popen(
        full,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},  # bwrap's own environment, hence the sandbox's PID 1's: nothing in it
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the timeout kills bwrap, and its PID namespace goes
        pass_fds=fds,
    )
    try:
        out, err, timed_out = drain(proc, policy.timeout_s, policy.max_output_chars, DRAIN_AFTER_KILL_S)
    finally:
        kill_group(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        try:
            proc.wait(timeout=DRAIN_AFTER_KILL_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode, out.text(), err.text(), timed_out


@lru_cache(maxsize=1)
def _probe() -> str:
    """Start the sandbox once with `true`: '' if it works, else bwrap's complaint."""
    machine = host()
    policy = SandboxPolicy(timeout_s=10)
    launch = Launch(65534, 65534, "/", (), (("PATH", "/usr/bin:/bin"),), ())
    code, _, err, _ = _run(sandbox_argv(["/bin/true"], policy, machine, launch), policy, [])
    return "" if code == 0 else (err.strip().splitlines() or [f"exit {code}"])[-1]


def ready() -> Host:
    """This machine's sandbox, checked to start, with today's data directory (read each
    time: CHORUS_DATA_DIR may change); raises SandboxUnavailable with why not."""
    why = _probe()
    if why:
        raise SandboxUnavailable(f"the sandbox (bwrap) cannot start here: {why}; {INSTALL_HINT}")
    data = Path(os.environ.get("CHORUS_DATA_DIR") or Path.home() / ".chorus").expanduser()
    return replace(host(), data_dir=os.path.realpath(data))


def _data_fd(text: str) -> int:
    """A pipe holding `text` (small: it fits the pipe's buffer), for bwrap's --ro-bind-data."""
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    return read


def _skipped(path: str, top: str, machine: Host) -> bool:
    return path == os.path.join(top, ".git") or _under(path, machine.data_dir)


def _lend(folders: Sequence[str], uid: int, gid: int, machine: Host) -> dict[str, tuple[int, int]]:
    """Make the writable folders the run's uid's for the run; returns who owned what."""
    owners: dict[str, tuple[int, int]] = {}
    for top, path in _walk(folders, machine):
        st = os.lstat(path)
        owners[path] = (st.st_uid, st.st_gid)
        os.lchown(path, uid, gid)
    return owners


def _give_back(folders: Sequence[str], owners: Mapping[str, tuple[int, int]], machine: Host) -> None:
    """Owners back as they were; what the run made goes to its folder's owner. Links are
    never followed (lchown), so a link the run planted changes nothing outside."""
    for top, path in _walk(folders, machine):
        uid, gid = owners.get(path) or owners.get(top) or (os.getuid(), os.getgid())
        try:
            os.lchown(path, uid, gid)
        except OSError:
            continue


def _walk(folders: Sequence[str], machine: Host) -> Iterable[tuple[str, str]]:
    for top in folders:
        yield top, top
        for parent, dirs, files in os.walk(top, followlinks=False):
            dirs[:] = [d for d in dirs if not _skipped(os.path.join(parent, d), top, machine)]
            for name in [*dirs, *files]:
                yield top, os.path.join(parent, name)


def describe_stop(result: SandboxResult, policy: SandboxPolicy) -> str:
    """One line on why the sandbox stopped a command (empty if it did not)."""
    reasons = {
        "timeout": f"timeout: still running after {policy.timeout_s:g} s wall time (process group killed)",
        "cpu": f"cpu: used its {policy.cpu_s} s of CPU time",
        "memory": f"memory: went past its {policy.memory_mb} MB address space",
        "file_size": f"file_size: wrote past its {policy.max_file_mb} MB file-size limit",
    }
    if result.killed_by is None:
        return ""
    return reasons.get(result.killed_by, f"{result.killed_by}: killed by signal {result.killed_by}")


def _why_stopped(code: int, timed_out: bool, stderr: str, duration: float, policy: SandboxPolicy) -> str | None:
    if timed_out:
        return "timeout"
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and duration >= policy.cpu_s):
        return "cpu"
    if code == -signal.SIGXFSZ or (code != 0 and any(m in stderr for m in FILE_SIZE_MARKERS)):
        return "file_size"
    if code != 0 and any(marker in stderr for marker in MEMORY_MARKERS):
        return "memory"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return None
