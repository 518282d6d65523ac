"""The one check every `--out FILE` goes through before anything is opened or written:
the folder must already exist (it is never made) and FILE must not be a folder."""

from __future__ import annotations

from pathlib import Path

from actors.runtime.errors import UserError


class OutputPathError(UserError, ValueError):
    """FILE cannot be written there: one line, exit 2 (a ValueError too, as before)."""


def writable_file(path: Path) -> Path:
    """`path` if a file can be written there; else OutputPathError saying why in one line."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: it is a folder; name a file")
    for p in (folder, *folder.parents):
        if p.exists():
            if not p.is_dir():
                raise OutputPathError(f"cannot write {path}: {p} is a file, not a folder")
            break
    if not folder.is_dir():
        raise OutputPathError(f"cannot write {path}: folder {folder} does not exist")
    return path
