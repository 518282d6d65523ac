"""The Builder's reply read as file edits (seed 004): pure, no file is touched here.

A small model writes code the ways people do in chat: fenced blocks labelled with a path
(a `File: x.py` line or a `### x.py` heading before the fence, or ```` ```python x.py ````),
unified diffs in ```` ```diff ```` blocks or bare in the prose, with line numbers that are
often wrong. `parse_edits` reads all of them in the order written; `target_file` names the
one file a reply whose code names no path is about; `snapshot_diff` diffs two workspaces.

Applying the edits to the workspace folder (every path confined to it, everything or
nothing) is actors.relay.workspace_files; a diff is applied to a text by actors.relay.patch.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from actors.relay.patch import HUNK_HEAD

EditKind = Literal["write", "diff", "delete"]


class FileEdit(BaseModel):
    """One change to one file: its whole new text, a unified diff of it, or its removal."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: EditKind
    content: str = ""


# -- reading a reply -------------------------------------------------------------------------------

_LIST_MARK = r"(?:(?:\d{1,2}[.)]|[-*+])\s+)?"  # "2. ```python": a small model numbers its steps
_FENCE = re.compile(r"^\s{0,3}" + _LIST_MARK + r"(`{3,}|~{3,})\s*(.*?)\s*$")
_KNOWN_NAMES = {"Makefile", "Dockerfile", "LICENSE", "Procfile", "Gemfile", "Justfile"}
_PATHLIKE = re.compile(r"^(?:[\w.\-]+/)*[\w\-][\w.\-]*\.[A-Za-z0-9]{1,10}$")
_DIFF_LANGS = {"diff", "patch", "udiff"}
_ALIASES = {"py": {"py", "python", "python3"}, "js": {"js", "javascript"}, "ts": {"ts", "typescript"}, "sh": {"sh", "bash"}}
_EXPLICIT = re.compile(
    r"^" + _LIST_MARK + r"(?:#{1,6}\s*)?(?:[*_]{1,2})?(?:files?(?:name)?|path)(?:[*_]{1,2})?\s*[:=]\s*(?:[*_]{1,2})?\s*(.+?)\s*$",
    re.I,
)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$")
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_FIRST_LINE = re.compile(r"^\s*(?:#|//|--|/\*|<!--)\s*(?:file(?:name)?\s*:\s*)?(\S+?)\s*(?:\*/|-->)?\s*$", re.I)
_DELETE = re.compile(r"^\s*(?:[-*]\s*)?(?:delete|remove)(?:\s+the)?\s+file\s*:?\s*`?([^`\s]+?)`?\s*\.?\s*$", re.I)


def _tidy(token: str) -> str:
    token = token.strip().strip("`'\"*_").strip()
    token = token.rstrip(":").strip("`'\"*_")
    while token.startswith("./"):
        token = token[2:]
    return token


def _pathlike(token: str, *, explicit: bool = False) -> str | None:
    """The token as a path if it looks like one (anything without spaces, when a `File:`
    label says it is one)."""
    token = _tidy(token)
    if not token or " " in token:
        return None
    if explicit or _PATHLIKE.match(token) or token in _KNOWN_NAMES or PurePosixPath(token).name in _KNOWN_NAMES:
        return token
    return None


def _path_from_info(info: str) -> tuple[str, str | None]:
    """(language, path) from a fence's info string: ```` ```python src/x.py ````,
    ```` ```python:src/x.py ````, ```` ```src/x.py ````, ```` ```py title="x.py" ````."""
    tokens = info.split()
    lang = ""
    path = None
    for n, token in enumerate(tokens):
        if "=" in token:
            key, _, value = token.partition("=")
            if key.lower() in ("title", "file", "filename", "path"):
                path = path or _pathlike(value, explicit=True)
            continue
        if ":" in token and n == 0 and not token.endswith(":"):
            head, _, tail = token.partition(":")
            lang = head
            path = path or _pathlike(tail)
            continue
        found = _pathlike(token)
        if found and path is None:
            path = found
        elif n == 0:
            lang = token
    return lang.lower(), path


def _path_before(lines: list[str], index: int, floor: int) -> str | None:
    """The path a label line just before the fence at `index` names: `File: x.py`,
    `### x.py`, `**x.py**`, or a sentence ending with a backticked path and a colon."""
    for k in range(index - 1, max(floor, index - 3) - 1, -1):
        line = lines[k].strip()
        if not line:
            continue
        if _FENCE.match(line):
            return None
        explicit = _EXPLICIT.match(line)
        if explicit:
            return _pathlike(explicit.group(1).split()[0], explicit=True)
        heading = _HEADING.match(line)
        if heading:
            return _pathlike(heading.group(1))
        whole = _pathlike(line)
        if whole:
            return whole
        if line.endswith(":"):
            found = [p for t in _BACKTICKED.findall(line) if (p := _pathlike(t))]
            if found:
                return found[-1]
        return None
    return None


@dataclass
class _Block:
    start: int  # the opening fence's line
    end: int  # the line after the closing fence
    lang: str
    path: str | None
    body: list[str] = field(default_factory=list)


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    i, floor = 0, 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening.group(1)
        j = i + 1
        while j < len(lines):
            closing = lines[j].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            j += 1
        lang, path = _path_from_info(opening.group(2))
        block = _Block(start=i, end=j + 1, lang=lang, path=path or _path_before(lines, i, floor), body=lines[i + 1 : j])
        blocks.append(block)
        i = floor = j + 1  # an unclosed fence (the reply was cut off) runs to the end
    return blocks


def _header_path(line: str) -> str | None:
    """The path of a `--- a/x` or `+++ b/x` line; None for /dev/null."""
    raw = line[4:].split("\t")[0].strip()
    raw = re.sub(r"\s+\d{4}-\d\d-\d\d[ T][\d:.]+(?:\s*[+-]\d{4})?$", "", raw)  # a timestamp
    raw = _tidy(raw)
    if raw == "/dev/null" or not raw:
        return None
    if raw.startswith(("a/", "b/")):
        raw = raw[2:]
    return raw


def _is_diff_start(lines: list[str], k: int) -> bool:
    return lines[k].startswith("--- ") and k + 1 < len(lines) and lines[k + 1].startswith("+++ ")


def _read_diff(lines: list[str], k: int, *, fenced: bool, label: str | None) -> tuple[list[FileEdit], int]:
    """The file diffs starting at line k, and the line after them. In a fence every line up
    to the fence belongs to the diff (a blank line is blank context, a line without its
    leading space is context); bare in prose, a hunk ends where its counts say, or at the
    first line that is not diff."""
    edits: list[FileEdit] = []
    old: str | None = label
    new: str | None = label
    body: list[str] = []
    started = False

    def flush() -> None:
        while body and not body[-1].strip():  # blank lines before the fence are not context
            body.pop()
        if not body:
            return
        if new is None and old is not None:
            edits.append(FileEdit(path=old, kind="delete"))
        elif old is None and new is not None and started_new_file:
            added = [b[1:] for b in body if b.startswith("+")]
            no_eol = any(b.startswith("\\") for b in body)
            text = "\n".join(added) + ("" if no_eol or not added else "\n")
            edits.append(FileEdit(path=new, kind="write", content=text))
        elif new is not None:
            text = f"--- a/{old or new}\n+++ b/{new}\n" + "\n".join(body) + "\n"
            edits.append(FileEdit(path=new, kind="diff", content=text))
        body.clear()

    started_new_file = False
    left_old = left_new = 0  # lines a bare hunk still has, by its counts
    counted = False
    n = len(lines)
    while k < n:
        line = lines[k]
        if _is_diff_start(lines, k):
            flush()
            old, new = _header_path(line), _header_path(lines[k + 1])
            started_new_file = line[4:].strip().split("\t")[0] == "/dev/null"
            started, k = True, k + 2
            continue
        if line.startswith(("diff --git", "index ", "new file mode", "deleted file mode", "similarity", "rename ")):
            k += 1
            continue
        head = HUNK_HEAD.match(line)
        if head:
            if not started and label is None:
                break
            started = True
            body.append(line)
            counted = head.group(1) is not None
            left_old = int(head.group(2) or 1) if counted else 0
            left_new = int(head.group(4) or 1) if counted else 0
            k += 1
            continue
        if not body:
            if fenced:
                k += 1
                continue
            break
        if fenced:
            if line.startswith(("+", "-", " ", "\\")):
                body.append(line)
            else:
                body.append(" " + line)  # blank context, or context that lost its space
            k += 1
            continue
        # bare: the hunk's counts, when it has them, say where it ends
        if counted and left_old <= 0 and left_new <= 0 and not line.startswith("\\"):
            break
        if line.startswith("\\"):
            body.append(line)
        elif line.startswith("+"):
            left_new -= 1
            body.append(line)
        elif line.startswith("-"):
            left_old -= 1
            body.append(line)
        elif line.startswith(" ") or (line == "" and counted):
            left_old -= 1
            left_new -= 1
            body.append(line if line else " ")
        else:
            break
        k += 1
    flush()
    return edits, k


def parse_edits(reply: str, *, default_path: str | None = None) -> list[FileEdit]:
    """The file edits in a builder's reply, in the order written.

    Labelled fenced blocks are whole-file writes, diffs (fenced or bare) are diffs (a diff
    from /dev/null is a write, one to /dev/null a delete), and a `Delete file: x` line is a
    delete. Unlabelled code is not an edit, unless `default_path` is given and the reply has
    no other edit: then its longest unlabelled block in that file's language (else of any
    code) is written there (a one-file task).
    """
    lines = reply.splitlines()
    found: list[tuple[int, FileEdit]] = []
    unlabelled: list[_Block] = []
    blocks = _blocks(lines)
    for block in blocks:
        body = block.body
        looks_diff = any(_is_diff_start(body, k) for k in range(len(body))) or (
            block.lang in _DIFF_LANGS and any(HUNK_HEAD.match(b) for b in body)
        )
        if looks_diff:
            k = 0
            while k < len(body):
                if _is_diff_start(body, k) or (block.path and HUNK_HEAD.match(body[k])):
                    edits, k = _read_diff(body, k, fenced=True, label=block.path)
                    found.extend((block.start, e) for e in edits)
                else:
                    k += 1
            continue
        path = block.path
        if path is None and body:
            first = _FIRST_LINE.match(body[0])
            path = _pathlike(first.group(1)) if first else None
        if path is None:
            unlabelled.append(block)
            continue
        text = "\n".join(body) + ("\n" if body else "")
        found.append((block.start, FileEdit(path=path, kind="write", content=text)))
    # outside the fences: bare diffs and deletions
    inside: set[int] = set()
    for block in blocks:
        inside.update(range(block.start, block.end))
    k = 0
    while k < len(lines):
        if k in inside:
            k += 1
            continue
        if _is_diff_start(lines, k):
            edits, after = _read_diff(lines, k, fenced=False, label=None)
            found.extend((k, e) for e in edits)
            k = max(after, k + 1)
            continue
        gone = _DELETE.match(lines[k])
        if gone and _pathlike(gone.group(1)):
            found.append((k, FileEdit(path=_tidy(gone.group(1)), kind="delete")))
        k += 1
    found.sort(key=lambda pair: pair[0])
    edits = [e for _, e in found]
    if not edits and default_path and unlabelled:
        code = [b for b in unlabelled if b.lang not in _DIFF_LANGS | {"text", "console", "bash", "sh", "shell"}]
        suffix = PurePosixPath(default_path).suffix.lower()[1:]
        same_language = [b for b in code if b.lang in _ALIASES.get(suffix, {suffix})]
        code = same_language or code
        if code:
            longest = max(code, key=lambda b: len("\n".join(b.body)))
            edits = [FileEdit(path=default_path, kind="write", content="\n".join(longest.body) + "\n")]
    return edits


_NAMED_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9})(?![\w/-])")


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    return name.startswith("test_") or name.endswith("_test.py") or "tests" in parts[:-1] or name == "conftest.py"


def target_file(texts: Iterable[str], files: Iterable[str]) -> str | None:
    """The one non-test file a task is about, for a reply whose code names no path: the
    only such path the task's texts name, else the workspace's only such Python file, else
    None (no guess when there are two)."""
    named = {
        p
        for text in texts
        for token in _NAMED_PATH.findall(text)
        if (p := _pathlike(token)) and not is_test_path(p) and "." in PurePosixPath(p).name
        and not re.fullmatch(r"\d+(\.\d+)+", p)
    }
    if len(named) == 1:
        return next(iter(named))
    if named:
        return None
    python = [f for f in files if f.endswith(".py") and not is_test_path(f)]
    return python[0] if len(python) == 1 else None



def snapshot_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff between two snapshots (what the coherence check reads, what `chorus
    diff` shows). `apply_unified_diff` of a file's part turns before into after."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        old_name = f"a/{path}" if a is not None else "/dev/null"
        new_name = f"b/{path}" if b is not None else "/dev/null"
        for line in difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True), old_name, new_name
        ):
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)
