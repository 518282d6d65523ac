"""What the services a machine's `chorus` processes share (the local model server, the local
Ray head) keep in common: one folder per user for their notes and locks, a lock held while a
process looks for a service and starts one, and whether a process still runs."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def state_folder() -> Path:
    """`/tmp/chorus-<uid>`: one place per machine and user, whatever the data folder."""
    return Path(tempfile.gettempdir()) / f"chorus-{os.getuid()}"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created, with its folder private to the user)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not: its parent has not reaped it yet)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own child and has ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: the signal said it exists
