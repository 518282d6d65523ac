"""What both file tools share: their limits, and confinement to the root folder (`../`,
absolute paths and symlinks that lead outside are refused with `ToolInputError`).

Every file a tool reads is opened with `open_in_root`: component by component from a
descriptor of the root, each with `O_NOFOLLOW`, so a folder swapped for a symlink between
the path check and the open cannot lead outside; and only regular files are opened (FIFOs,
sockets and devices are refused before opening, and `O_NONBLOCK` keeps even a race from
blocking). `read_lines` streams a file by lines with a byte cap, keeping only the lines asked.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload


class ToolInputError(ValueError):
    """The model called a tool wrongly; the message is the observation to show it."""


# -- limits ---------------------------------------------------------------------------------

MAX_FILE_BYTES = 1_000_000  # bigger files are skipped by search (generated data, logs, dumps)
MAX_FILES_SCANNED = 20_000
READ_SCAN_BYTES = 8_000_000  # one read stops here: lines past it are neither shown nor counted
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
    check_path_text(text)
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
    try:
        real = candidate.resolve()
    except (RuntimeError, OSError) as e:  # Python 3.11: RuntimeError('Symlink loop ...'); later: ELOOP
        if isinstance(e, RuntimeError) or e.errno == errno.ELOOP:
            raise ToolInputError(
                f"Refused: '{text}' is a symlink loop (links that point at each other); it names no file."
            ) from None
        raise ToolInputError(f"Cannot read '{text}': it changed while it was looked up ({e.strerror or e}).") from None
    if not is_inside(real, base):
        raise ToolInputError(
            f"Refused: '{text}' is a link that points outside the root folder; only files under the root can be read."
        )
    return real


def check_path_text(text: str) -> None:
    """Refuses a path no file can have (a NUL byte) with a `ToolInputError`, not `ValueError`."""
    if "\0" in text:
        raise ToolInputError(
            f"Refused: the path {text!r} contains a NUL byte (\\x00); no file name can. Use a path as the tools print it."
        )


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
    """Names in `folder`, folders first with a trailing '/'; hidden, junk, links and anything
    but folders and regular files (FIFOs, sockets, devices) left out."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name in SKIP_DIRS or entry.name.startswith(".") or entry.name.endswith(".egg-info"):
            continue
        try:
            mode = entry.lstat().st_mode
        except OSError:
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # links, FIFOs, sockets, devices
            continue
        out.append(entry.name + "/" if stat.S_ISDIR(mode) else entry.name)
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
            # symlinks (outside: refused; inside: found where they really are), FIFOs,
            # sockets and devices are skipped: only regular files are ever opened
            if not is_regular(path):
                continue
            count += 1
            if count > MAX_FILES_SCANNED:
                return
            yield path


def is_binary(sample: bytes) -> bool:
    """Whether the file whose first bytes these are is binary (a NUL in its first 8 KiB)."""
    return b"\0" in sample[:8192]


# -- opening and reading safely -------------------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def is_regular(path: Path) -> bool:
    """Whether `path` itself (not a link's target) is a regular file: no symlink, FIFO,
    socket or device."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_in_root(root: Path, target: Path) -> int:
    """A read-only descriptor of the regular file `target` (a real path under `root`, both
    resolved), opened component by component from a descriptor of `root` with `O_NOFOLLOW`.

    A component that became a symlink since `target` was resolved fails the open instead of
    being followed, so the file opened is always under the root. A FIFO, socket or device is
    refused (checked before opening; opened `O_NONBLOCK`, so a swap cannot block either).
    Refusals raise `ToolInputError`; the caller closes the descriptor."""
    shown = rel_path(target, root) if is_inside(target, root) else str(target)
    if not is_inside(target, root) or target == root:
        raise ToolInputError(f"Refused: '{shown}' is not a file under the root folder.")
    parts = target.relative_to(root).parts
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                raise _changed(shown, e) from None
            os.close(fd)
            fd = inner
        name = parts[-1]
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except OSError as e:
            raise _changed(shown, e) from None
        if not stat.S_ISREG(mode):
            raise _not_regular(shown, mode)
        try:
            file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except OSError as e:
            raise _changed(shown, e) from None
    finally:
        os.close(fd)
    mode = os.fstat(file_fd).st_mode
    if not stat.S_ISREG(mode):  # swapped between the check and the open
        os.close(file_fd)
        raise _not_regular(shown, mode)
    return file_fd


def _not_regular(shown: str, mode: int) -> ToolInputError:
    return ToolInputError(f"'{shown}' is {_kind(mode)}, not a regular file; the file tools read regular files only.")


def _changed(shown: str, error: OSError) -> ToolInputError:
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return ToolInputError(
            f"Refused: '{shown}' changed while it was opened (a folder in its path was replaced, by a link or a file); "
            "only files under the root can be read."
        )
    if error.errno == errno.ENOENT:
        return ToolInputError(f"No file '{shown}' under the root (it was removed while it was opened).")
    return ToolInputError(f"Cannot read '{shown}': {error.strerror or error}.")


def read_head(root: Path, target: Path, limit: int) -> bytes:
    """At most `limit` bytes from the start of the regular file `target` under `root`
    (`open_in_root`'s refusals apply)."""
    fd = open_in_root(root, target)
    try:
        return _read_upto(fd, limit)
    finally:
        os.close(fd)


def read_small(root: Path, target: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes | None:
    """The whole of a regular file under root of at most `max_bytes`, else None (too big,
    gone, unreadable, not a regular file, or no longer under the root). For the walkers."""
    try:
        fd = open_in_root(root, target)
    except (ToolInputError, OSError, ValueError):
        return None
    try:
        if os.fstat(fd).st_size > max_bytes:
            return None
        data = _read_upto(fd, max_bytes + 1)
        return None if len(data) > max_bytes else data
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_upto(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass
class LineWindow(Sequence[str]):
    """Lines `first..first+len(kept)-1` of a file, and how many lines were counted.

    As a sequence it has `total` items, but only the kept ones can be indexed (the
    formatters only index the lines they show). `cut` is set when the byte cap stopped the
    read before the end of the file: then `total` counts the lines read so far."""

    first: int
    kept: list[str] = field(default_factory=list)
    total: int = 0
    size: int = 0  # the file's size in bytes
    cut: bool = False
    cap: int = READ_SCAN_BYTES

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            raise TypeError("a LineWindow holds only the lines it kept; index them one by one")
        i = index - (self.first - 1)
        if index < 0 or not 0 <= i < len(self.kept):
            raise IndexError(f"line {index + 1} was not kept (lines {self.first}-{self.first + len(self.kept) - 1})")
        return self.kept[i]


def read_lines(fd: int, first: int, last: int, *, cap: int | None = None, chunk: int = 1 << 16) -> LineWindow:
    """Lines `first..last` (1-based, inclusive) of the open file, decoded as UTF-8 with
    replacement and split as `str.splitlines` splits them, streaming: only those lines are
    kept; the others are counted, up to `cap` bytes read in all (default `READ_SCAN_BYTES`),
    so the lines shown and the total are those of reading the whole file, for any file
    under the cap."""
    cap = READ_SCAN_BYTES if cap is None else cap
    size = os.fstat(fd).st_size
    window = LineWindow(first=first, size=size, cap=cap)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""  # the last, maybe incomplete, line
    read = 0
    number = 0

    def take(pieces: list[str]) -> None:
        nonlocal number
        for piece in pieces:
            number += 1
            if first <= number <= last:
                window.kept.append(piece.splitlines()[0])

    while True:
        data = os.read(fd, min(chunk, cap - read)) if read < cap else b""
        read += len(data)
        if not data:
            window.cut = read >= cap and bool(os.read(fd, 1))
            pending += decoder.decode(b"", final=True)
            take(pending.splitlines(True))
            break
        pending += decoder.decode(data)
        pieces = pending.splitlines(True)
        pending = pieces.pop() if pieces else ""
        take(pieces)
    window.total = number
    return window
