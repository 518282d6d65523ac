"""Files a view or an export writes: atomically, so a reader sees the old file or the new
one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], chunks: Iterable[str], *, durable: bool = True) -> int:
    """Write `chunks` to a temporary file beside `path` (fsync'd when `durable`), then rename
    it over `path`. Returns how many chunks were written."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {target}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            for chunk in chunks:
                f.write(chunk)
                count += 1
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for the temporary file only
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return count
