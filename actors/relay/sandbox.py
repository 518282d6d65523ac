"""The Verifier's sandbox (seed 004): the commands it runs on a builder's code — ruff, pytest,
probes — are the builder's code running, so they run fenced in.

- **Time.** A wall-clock timeout; the command starts in its own session (process group), and
  at the timeout the whole group is killed, children too.
- **Secrets.** The environment is an allow-list (`SandboxPolicy.env_allow`), so API keys in
  the Verifier's environment are not inherited. HOME (and TMPDIR, if allowed) point at a fresh
  temporary folder, removed afterwards.
- **Network.** Where the kernel allows unprivileged user namespaces, the command runs under
  `unshare` in its own user and network namespace (only a down loopback: every connection
  fails), and where possible in its own PID namespace with a private /proc too, so it sees no
  other process (no ancestor's /proc/PID/environ) and everything it started dies with it.
  Where `unshare` does not work the command runs without isolation and `note` says so: a
  weaker sandbox is stated, never silent.
- **Resources.** RLIMIT_CPU (SIGXCPU at the limit, SIGKILL a second later), RLIMIT_AS (an
  allocation past it fails: Python raises MemoryError) and no core dumps.

Whatever happens, the caller gets a `SandboxResult`; a command that cannot start is exit 127.
This module does I/O and reads the clock: it is the live side of the Verifier. What it
returns is recorded (as the check's outcome) before anything decides on it.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from actors.tools.process import drain, kill_group

MAX_OUTPUT_CHARS = 20_000  # per stream: enough for a failing test's traceback, bounded for the log
DRAIN_AFTER_KILL_S = 2.0  # reading goes on this long after a kill; pipes an escapee holds are then dropped
PROBE_TIMEOUT_S = 10.0

# Full isolation: user + network namespaces, and a PID namespace with its own /proc.
# Inside, `/bin/sh` is PID 1 and runs the command as its child, because PID 1 ignores signals
# it has no handler for (RLIMIT_CPU's SIGXCPU among them) and because `unshare --fork` turns a
# child's death by signal into an unhelpful status; the shell reports it as 128+N instead.
FULL_LAUNCHER = ("unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc")
SHELL_WRAPPER = ("/bin/sh", "-c", '"$@"; exit $?', "chorus-sandbox")
NET_LAUNCHER = ("unshare", "-rn")  # user + network namespace only; the command is exec'd directly

MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "memory allocation of")


@dataclass(frozen=True)
class SandboxPolicy:
    """The fence. Defaults suit a test suite of a small project on a small machine."""

    timeout_s: float = 60.0
    cpu_s: int = 60
    memory_mb: int = 1024
    env_allow: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR")
    network: bool = False  # True: the command may use the network (no namespaces at all)
    max_output_chars: int = MAX_OUTPUT_CHARS

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"sandbox timeout_s must be positive, not {self.timeout_s!r}")
        if not (isinstance(self.cpu_s, int) and self.cpu_s > 0):
            raise ValueError(f"sandbox cpu_s must be a positive whole number of seconds, not {self.cpu_s!r}")
        if not (isinstance(self.memory_mb, int) and self.memory_mb > 0):
            raise ValueError(f"sandbox memory_mb must be a positive whole number, not {self.memory_mb!r}")
        if self.max_output_chars < 100:
            raise ValueError(f"sandbox max_output_chars must be at least 100, not {self.max_output_chars!r}")


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed command did. `returncode` is negative -N when signal N ended it
    (in a PID namespace an exit status 129-192 is read as a signal: the wrapping shell's
    128+N). `killed_by` names why the sandbox stopped it: "timeout", "cpu", "memory", or a
    signal name; None for a command that ended on its own."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    killed_by: str | None
    network_isolated: bool
    note: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed_by is None


@dataclass(frozen=True)
class Isolation:
    """How commands are fenced off on this machine, found once per process."""

    launcher: tuple[str, ...]  # prepended to the argv; empty: none
    network_isolated: bool
    pid_namespace: bool
    note: str  # empty when fully isolated; else what is missing and why


@lru_cache(maxsize=1)
def isolation() -> Isolation:
    """Try `unshare` once (full isolation, then `unshare -rn true`) and remember the answer:
    some kernels and containers forbid unprivileged user namespaces."""
    ok, why = _try([*FULL_LAUNCHER, *SHELL_WRAPPER, "true"])
    if ok:
        return Isolation(FULL_LAUNCHER + SHELL_WRAPPER, True, True, "")
    ok, why_net = _try([*NET_LAUNCHER, "true"])
    if ok:
        return Isolation(NET_LAUNCHER, True, False, f"no PID namespace ({why}): other processes stay visible")
    return Isolation(
        (), False, False, f"network not isolated: unshare -rn unavailable ({why_net}); other processes stay visible"
    )


def _try(argv: list[str]) -> tuple[bool, str]:
    try:
        done = subprocess.run(
            argv,
            env={"PATH": os.environ.get("PATH", os.defpath)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return True, ""
    message = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return False, message[-1] if message else f"exit {done.returncode}"


def sandbox_env(policy: SandboxPolicy, scratch: Path) -> dict[str, str]:
    """The command's whole environment: the allowed variables the Verifier has, HOME (and
    TMPDIR, if allowed) in the scratch folder, and a PATH in any case."""
    env = {name: os.environ[name] for name in policy.env_allow if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = str(scratch / "home")
    if "TMPDIR" in policy.env_allow:
        env["TMPDIR"] = str(scratch / "tmp")
    return env


def run_sandboxed(
    argv: Sequence[str], cwd: Path, policy: SandboxPolicy | None = None, *, extra_env: Mapping[str, str] | None = None
) -> SandboxResult:
    """Run `argv` in `cwd` inside the sandbox and wait for it, at most `policy.timeout_s`
    (plus a short grace to collect output). Never raises for what the command does.
    `extra_env` is set by the caller on purpose (e.g. a tool's switch), never inherited."""
    policy = policy or SandboxPolicy()
    argv = tuple(str(a) for a in argv)
    if not argv:
        raise ValueError("run_sandboxed needs a command")
    fence = Isolation((), False, False, "network allowed by the policy") if policy.network else isolation()
    scratch = Path(tempfile.mkdtemp(prefix="chorus-sandbox-"))
    started = time.monotonic()
    try:
        (scratch / "home").mkdir()
        (scratch / "tmp").mkdir()
        env = {**sandbox_env(policy, scratch), **(extra_env or {})}
        program = shutil.which(argv[0], path=env["PATH"]) if "/" not in argv[0] else argv[0]
        if program is None or not Path(cwd).is_dir():
            missing = f"command not found: {argv[0]}" if program is None else f"no such folder: {cwd}"
            return SandboxResult(argv, 127, "", missing, 0.0, False, None, fence.network_isolated, fence.note)
        try:
            proc = subprocess.Popen(
                [*fence.launcher, program, *argv[1:]],
                cwd=str(cwd),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: the timeout kills all it started
                preexec_fn=_limits(policy),
            )
        except OSError as exc:
            return SandboxResult(
                argv, 127, "", f"could not start: {exc}", 0.0, False, None, fence.network_isolated, fence.note
            )
        try:
            out, err, timed_out = drain(proc, policy.timeout_s, policy.max_output_chars, DRAIN_AFTER_KILL_S)
        finally:
            kill_group(proc)  # leftovers a finished command left in the background
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            try:
                proc.wait(timeout=DRAIN_AFTER_KILL_S)
            except subprocess.TimeoutExpired:
                proc.kill()
        duration = time.monotonic() - started
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        if fence.pid_namespace and 128 < code <= 128 + 64:
            code = -(code - 128)  # the wrapping shell's report of a signal
        stderr = err.text()
        killed_by = _why_stopped(code, timed_out, stderr, duration, policy)
        return SandboxResult(
            argv=argv,
            returncode=code,
            stdout=out.text(),
            stderr=stderr,
            duration_s=round(duration, 3),
            timed_out=timed_out,
            killed_by=killed_by,
            network_isolated=fence.network_isolated,
            note=fence.note,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def describe_stop(result: SandboxResult, policy: SandboxPolicy) -> str:
    """One line on why the sandbox stopped a command (empty if it did not)."""
    reasons = {
        "timeout": f"timeout: still running after {policy.timeout_s:g} s wall time (process group killed)",
        "cpu": f"cpu: used its {policy.cpu_s} s of CPU time",
        "memory": f"memory: went past its {policy.memory_mb} MB address space",
    }
    if result.killed_by is None:
        return ""
    return reasons.get(result.killed_by, f"{result.killed_by}: killed by signal {result.killed_by}")


def _limits(policy: SandboxPolicy) -> Callable[[], None]:
    cpu = policy.cpu_s
    memory = policy.memory_mb * 1024 * 1024

    def apply() -> None:  # in the child, between fork and exec: only system calls here
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _why_stopped(code: int, timed_out: bool, stderr: str, duration: float, policy: SandboxPolicy) -> str | None:
    if timed_out:
        return "timeout"
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and duration >= policy.cpu_s):
        return "cpu"
    if code != 0 and any(marker in stderr for marker in MEMORY_MARKERS):
        return "memory"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return None
