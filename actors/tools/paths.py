"""What both file tools share: their limits, and confinement to the root folder (`../`,
absolute paths and symlinks that lead outside are refused with `ToolInputError`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class ToolInputError(ValueError):
    """The model called a tool wrongly; the message is the observation to show it."""


# -- limits ---------------------------------------------------------------------------------

MAX_FILE_BYTES = 1_000_000  # bigger files are skipped by search (generated data, logs, dumps)
MAX_FILES_SCANNED = 20_000
READ_WINDOW = 50  # lines shown when no end_line is given (small models: keep prompts short)
READ_MAX_LINES = 120  # hard cap on one read
LINE_CHARS = 200  # longer lines are cut, in reads
HIT_CHARS = 120  # and in search hits

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".idea", ".vscode",
        ".eggs",
    }
)  # fmt: skip
BINARY_SUFFIXES = frozenset(
    {
        ".pyc", ".pyo", ".so", ".dll", ".dylib", ".o", ".a", ".exe", ".bin", ".gguf", ".pt",
        ".npy", ".npz", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".zip", ".gz", ".tgz",
        ".bz2", ".xz", ".whl", ".tar", ".sqlite", ".db", ".woff", ".woff2", ".ttf", ".jar",
    }
)  # fmt: skip


# -- root confinement ---------------------------------------------------------------------


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The tool root as a real path; `NotADirectoryError` if it is not a folder."""
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise NotADirectoryError(f"tool root {str(root)!r} is not a folder")
    return path


def is_inside(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or below it (both already resolved)."""
    return path == root or path.is_relative_to(root)


def rel_path(path: Path, root: Path) -> str:
    """`path` relative to `root`, with '/', as the tools print it ('.' for the root itself)."""
    return path.relative_to(root).as_posix() or "."


def resolve_in_root(root: str | os.PathLike[str], path: str, *, listed_by: str = "search_files") -> Path:
    """The real path of `path` (relative to root, or absolute inside it); refuses any escape.

    `..` segments, absolute paths elsewhere and symlinks whose target lies outside the root
    are all refused, whether or not the target exists. `listed_by` names the tool whose
    output shows paths the right way, for the refusal message.
    """
    base = resolve_root(root)
    text = clean_path(path)
    if not text:
        raise ToolInputError("read_file needs a path relative to the root folder, e.g. path='README.md'")
    candidate = base / text
    lexical = Path(os.path.normpath(candidate))
    if not is_inside(lexical, base):
        hint = ""
        if Path(text).is_absolute():
            stripped = text.lstrip("/\\")
            if stripped and is_inside(Path(os.path.normpath(base / stripped)), base) and (base / stripped).exists():
                hint = f" Did you mean path='{stripped}'?"
        raise ToolInputError(
            f"Refused: '{text}' is outside the root folder; paths are relative to the root, "
            f"as {listed_by} prints them (e.g. '{_example_file(base)}').{hint}"
        )
    real = candidate.resolve()
    if not is_inside(real, base):
        raise ToolInputError(
            f"Refused: '{text}' is a link that points outside the root folder; only files under the root can be read."
        )
    return real


def clean_path(path: Any) -> str:
    """A path as a model wrote it, tidied: quotes, spaces and leading './' removed."""
    text = str(path if path is not None else "").strip().strip("'\"`").strip()
    text = text.replace("\\", "/") if "\\" in text and "/" not in text else text
    while text.startswith("./"):
        text = text[2:]
    return text


def _example_file(root: Path) -> str:
    entries = list_folder(root)
    for entry in entries:
        if not entry.endswith("/") and not entry.startswith("_"):
            return entry
    for entry in entries:  # a folder of folders (seed 003's repositories): one level down
        inner = [e for e in list_folder(root / entry) if not e.endswith("/")] if entry.endswith("/") else []
        if inner:
            return entry + inner[0]
    return "README.md"


def list_folder(folder: Path, limit: int = 40) -> list[str]:
    """Names in `folder`, folders first with a trailing '/'; hidden, junk and links left out."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name in SKIP_DIRS or entry.name.startswith(".") or entry.name.endswith(".egg-info"):
            continue
        if entry.is_symlink():
            continue
        out.append(entry.name + "/" if entry.is_dir() else entry.name)
    return out[:limit]


def walk_files(root: Path) -> Iterator[Path]:
    """Text-file candidates under root in a stable order; symlinks are not followed."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix.lower() in BINARY_SUFFIXES:
                continue
            if path.is_symlink():  # outside: refused; inside: found where it really is
                continue
            count += 1
            if count > MAX_FILES_SCANNED:
                return
            yield path


def is_binary(sample: bytes) -> bool:
    """Whether the file whose first bytes these are is binary (a NUL in its first 8 KiB)."""
    return b"\0" in sample[:8192]
