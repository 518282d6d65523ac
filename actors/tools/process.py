"""Running a child process boundedly: output read as it comes (the first characters kept,
the rest counted), the process group killed at a deadline, and pipes an escaped process
still holds given up on after a short grace. Used by the sandbox (actors.tools.sandbox), which
runs the task workflows' scripts and the relay's checks alike, so a command can never hang
its caller nor flood it."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

READ_CHUNK = 65_536
DRAIN_AFTER_KILL_S = 2.0  # reading goes on this long after a kill (or after the command exits)


class Capped:
    """One output stream: the first `limit_chars` characters' worth of bytes kept (UTF-8: at
    most 4 bytes each), the rest counted, so memory stays bounded and the child never blocks
    on a full pipe."""

    def __init__(self, limit_chars: int) -> None:
        self.limit_chars = limit_chars
        self.limit = 4 * limit_chars
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    def text(self) -> str:
        text = bytes(self.kept).decode("utf-8", errors="replace")
        if len(text) <= self.limit_chars and self.total == len(self.kept):
            return text
        shown = text[: self.limit_chars]
        dropped = self.total - len(shown.encode("utf-8", errors="replace"))
        return shown + f"\n... ({dropped} more bytes cut, {self.total} in all)"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def drain(
    proc: subprocess.Popen[bytes], limit: float, chars: int, grace: float = DRAIN_AFTER_KILL_S
) -> tuple[Capped, Capped, bool]:
    """Read stdout and stderr until both close. At `limit` seconds kill the process group
    and read on for `grace`; if the command exits while something it started holds its
    pipes, read on for `grace` too, then give up on them. Returns (stdout, stderr, timed_out)."""
    out, err = Capped(chars), Capped(chars)
    sinks = {proc.stdout: out, proc.stderr: err}
    timed_out = exited = False
    deadline = time.monotonic() + limit
    with selectors.DefaultSelector() as sel:
        for pipe in sinks:
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
            sel.register(pipe, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if timed_out or exited:
                    break
                timed_out = True
                kill_group(proc)
                deadline = time.monotonic() + grace
                continue
            if not timed_out and not exited and proc.poll() is not None:
                exited = True
                deadline = min(deadline, time.monotonic() + grace)
            for key, _ in sel.select(timeout=min(left, 0.25)):
                try:
                    chunk = os.read(key.fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    sinks[key.fileobj].add(chunk)  # type: ignore[index]
                else:
                    sel.unregister(key.fileobj)
    if not timed_out:
        # Both pipes closed, yet the command may linger (it closed its output and sleeps on).
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
    return out, err, timed_out
