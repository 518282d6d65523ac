"""Where a repository's files come from: a local folder used in place, or a git URL cloned
(shallow) into the data directory; and which of its files are worth indexing.

Binary files (by suffix or a NUL byte), files over `MAX_FILE_BYTES` and empty files are
skipped and counted, so a report can say how many were left out and why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from actors.index.vectors import collection_name
from actors.tools.paths import BINARY_SUFFIXES, MAX_FILE_BYTES, SKIP_DIRS, is_binary, is_regular, read_small


class RepositoryError(ValueError):
    """The repository cannot be used: missing folder, failed clone, nothing to index."""


def is_url(source: str) -> bool:
    return "://" in source or source.startswith("git@") or (source.endswith(".git") and not Path(source).is_dir())


def resolve_source(source: str, data_dir: Path, timeout_s: float = 300.0) -> Path:
    """The folder holding `source`'s files; a URL is cloned (or refreshed) first."""
    if not source.strip():
        raise RepositoryError("no repository given")
    if not is_url(source):
        path = Path(source).expanduser().resolve()
        if not path.exists():
            raise RepositoryError(f"repository path {source} does not exist")
        if not path.is_dir():
            raise RepositoryError(f"repository path {source} is not a folder")
        return path
    target = Path(data_dir) / "repos" / collection_name(source)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", "clone", "--depth", "1", "--quiet", source, str(partial)],
            capture_output=True, text=True, timeout=timeout_s, env=env,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        raise RepositoryError(f"cloning {source} took over {timeout_s:g}s") from None
    except FileNotFoundError:
        raise RepositoryError("cloning needs git, which is not installed") from None
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        why = (done.stderr.strip().splitlines() or ["git clone failed"])[-1]
        raise RepositoryError(f"cannot clone {source}: {why}")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


@dataclass
class FileSet:
    texts: dict[str, str] = field(default_factory=dict)  # relative path -> content
    hashes: dict[str, str] = field(default_factory=dict)
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_empty: int = 0


def scan(root: Path, max_bytes: int = MAX_FILE_BYTES) -> FileSet:
    """The indexable text files under `root`, in a stable order; symlinks not followed, and
    FIFOs, sockets and devices skipped without being opened (an open could block forever)."""
    out = FileSet()
    root = Path(root).resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info") and not d.startswith(".")
        )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not is_regular(path):
                continue
            if path.suffix.lower() in BINARY_SUFFIXES:
                out.skipped_binary += 1
                continue
            try:
                size = path.lstat().st_size
            except OSError:
                continue
            if size > max_bytes:
                out.skipped_large += 1
                continue
            data = read_small(root, path, max_bytes)  # None: changed since the walk saw it
            if data is None:
                continue
            if is_binary(data):
                out.skipped_binary += 1
                continue
            text = data.decode("utf-8", errors="replace")
            if not text.strip():
                out.skipped_empty += 1
                continue
            rel = path.relative_to(root).as_posix()
            out.texts[rel] = text
            out.hashes[rel] = hashlib.sha256(data).hexdigest()
    return out
