"""The relay's workspace folder on disk (seed 004): the Builder's edits applied to it, and its
files read back. Everything here touches the workspace and nothing else; the edits come
from actors.relay.edits (pure).

`apply_edits` confines every path to the workspace (no absolute paths, no `..`, no `.git`,
no symlinks) and applies everything or nothing; `workspace_snapshot` reads every text file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from actors.relay.edits import FileEdit
from actors.relay.patch import apply_unified_diff, diff_new_side

SNAPSHOT_SKIP_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis"}
)  # the repository's own history and what the verifier's tools leave behind
SNAPSHOT_MAX_BYTES = 1_000_000


def confine(root: Path, path: str) -> str:
    """`path` as a clean relative path under `root`, or ValueError: absolute paths, `..`,
    `.git` (the relay owns the workspace's history) and any symlink on the way are refused."""
    text = path.strip().strip("`'\"").replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    if not text or "\0" in text:
        raise ValueError(f"refused edit path {path!r}: it is empty or not a file name")
    if text.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", text):
        raise ValueError(f"refused edit path {path!r}: absolute; edits name files relative to the workspace")
    parts = [p for p in PurePosixPath(text).parts if p != "."]
    if ".." in parts:
        raise ValueError(f"refused edit path {path!r}: '..' leads outside the workspace")
    if ".git" in parts:
        raise ValueError(f"refused edit path {path!r}: the workspace's .git is not the builder's to edit")
    current = root
    for n, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break
        if stat.S_ISLNK(mode):
            raise ValueError(f"refused edit path {path!r}: {'/'.join(parts[: n + 1])} is a symlink")
        if n < len(parts) - 1 and not stat.S_ISDIR(mode):
            raise ValueError(f"refused edit path {path!r}: {'/'.join(parts[: n + 1])} is not a folder")
    if not (root / Path(*parts)).resolve().is_relative_to(root):
        raise ValueError(f"refused edit path {path!r}: it leads outside the workspace")
    return "/".join(parts)


def _current(root: Path, rel: str) -> str | None:
    target = root / rel
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{rel}: not a regular file, cannot edit it")
    try:
        return target.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{rel}: not a UTF-8 text file, cannot edit it") from None


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))


def apply_edits(root: Path | str, edits: Iterable[FileEdit]) -> list[str]:
    """Apply the edits to the workspace at `root`, all or nothing; the relative paths of the
    files whose content changed, in order. Every path is checked and every diff applied in
    memory first: a refused path or a hunk that does not apply raises ValueError and leaves
    the workspace untouched."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValueError(f"workspace {str(root)!r} is not a folder")
    planned: dict[str, str | None] = {}
    for edit in edits:
        rel = confine(base, edit.path)
        current = planned[rel] if rel in planned else _current(base, rel)
        if edit.kind == "write":
            planned[rel] = edit.content
        elif edit.kind == "delete":
            if current is None:
                raise ValueError(f"{rel}: cannot delete it, there is no such file")
            planned[rel] = None
        elif current is None:  # a small model's diff for a file it means to create
            planned[rel] = diff_new_side(edit.content, rel)
        else:
            planned[rel] = apply_unified_diff(current, edit.content, rel)
    changed: list[str] = []
    for rel, text in planned.items():
        if text == _current(base, rel):
            continue
        if text is None:
            (base / rel).unlink()
        else:
            _write(base, rel, text)
        changed.append(rel)
    return changed


def workspace_snapshot(root: Path | str) -> dict[str, str]:
    """Every text file under `root` (relative posix path -> text), for rebuilding and
    comparing workspaces. Skips .git and tool caches, symlinks, binary and non-UTF-8 files
    and files over SNAPSHOT_MAX_BYTES."""
    base = Path(root)
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SNAPSHOT_SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > SNAPSHOT_MAX_BYTES:
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue
            try:
                out[path.relative_to(base).as_posix()] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
    return dict(sorted(out.items()))

