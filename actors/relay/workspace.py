"""The relay's workspace as a fold of the log: pure functions over `WorkspaceChanged`.

Every builder edit is recorded as whole file texts, so the files at any turn are rebuilt
from events alone: `chorus replay` needs no repository (and checks the fold it replays
against the log's), `chorus fork --at TURN` starts from the fold of the history it copies
(`workspace_at` that turn), and `chorus diff` compares two branches with `diff_text`. The
git repository a live run keeps (`actors.relay.git_workspace`) is a mirror of this fold,
never its source.

A workspace is a plain `dict[str, str]`: relative POSIX path -> text.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from events.base import Event
from actors.relay.events import WorkspaceChanged

Files = dict[str, str]
Change = dict[str, Any]  # {path, kind: "write" | "delete", content: str | None}


def write(path: str, content: str) -> Change:
    return {"path": path, "kind": "write", "content": content}


def delete(path: str) -> Change:
    return {"path": path, "kind": "delete", "content": None}


def apply_changes(files: Mapping[str, str], changes: Iterable[Change]) -> Files:
    """A new workspace: `files` with `changes` applied in order (a delete of a missing
    file is a no-op, so replaying a change twice gives the same files)."""
    out = dict(files)
    for change in changes:
        if change["kind"] == "write":
            out[change["path"]] = change["content"]
        else:
            out.pop(change["path"], None)
    return out


def fold_workspace(events: Iterable[Event], files: Mapping[str, str] | None = None) -> Files:
    """The workspace after `events` (other event types are skipped), starting from `files`."""
    out: Files = dict(files or {})
    for event in events:
        if isinstance(event, WorkspaceChanged):
            out = apply_changes(out, event.changes)
    return out


def workspace_at(events: Iterable[Event], turn_id: str) -> Files:
    """The workspace as turn `turn_id` left it: the fold of every WorkspaceChanged up to
    that turn's last event in the log. ValueError for a turn the log does not hold (a
    person's `--at TURN`)."""
    events = list(events)
    last = max(
        (i for i, e in enumerate(events) if getattr(e, "turn_id", None) == turn_id),
        default=None,
    )
    if last is None:
        raise ValueError(f"no turn {turn_id!r} in this relay's log")
    return fold_workspace(events[: last + 1])


def changes_between(before: Mapping[str, str], after: Mapping[str, str]) -> list[Change]:
    """The changes that turn `before` into `after`, by path: writes for new or different
    files, deletes for files gone. Empty when they are equal."""
    changes: list[Change] = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            changes.append(delete(path))
        elif before.get(path) != after[path]:
            changes.append(write(path, after[path]))
    return changes


def diff_text(
    before: Mapping[str, str], after: Mapping[str, str], *, before_label: str = "a", after_label: str = "b"
) -> str:
    """A unified diff of two workspaces, file by file in path order, git-style headers
    (`--- a/path`, `+++ b/path`, /dev/null for an added or deleted file). Empty when equal."""
    out: list[str] = []
    for change in changes_between(before, after):
        path = change["path"]
        old, new = before.get(path), after.get(path)
        lines = difflib.unified_diff(
            _lines(old),
            _lines(new),
            fromfile="/dev/null" if old is None else f"{before_label}/{path}",
            tofile="/dev/null" if new is None else f"{after_label}/{path}",
        )
        out.append(f"diff {before_label}/{path} {after_label}/{path}\n")
        out.extend(lines)
    return "".join(out)


def digest(files: Mapping[str, str]) -> str:
    """A content hash of a workspace (paths and texts), to name what a checkpoint held."""
    h = hashlib.sha256()
    for path in sorted(files):
        data = files[path].encode()
        h.update(f"{len(path)}:{path}:{len(data)}:".encode())
        h.update(data)
    return h.hexdigest()


def _lines(text: str | None) -> list[str]:
    if text is None:
        return []
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
