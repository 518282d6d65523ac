"""The BatonPacket a Builder hands on, and the bounded memory the next turn reads (seed 004).

The seed's memory strategy: each turn is summarised so the prompt stays the same size
however long the relay runs. A baton keeps the full reply (`response_text`, for the log and
the vector memory) and a `builder_summary` of at most SUMMARY_LIMIT characters: the first
lines of prose outside code, then the files changed. `baton_context` gives the next turn
the summaries, most recent first, cut to a character limit. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from actors.relay.edits import FileEdit
from actors.relay.events import BatonPacket

SUMMARY_LIMIT = 600
PROSE_LIMIT = 360  # the summary's prose; the rest is for the list of files
MAX_HINTS = 8
HINT_CHARS = 200
CONTEXT_LIMIT = 2400

_FENCE = re.compile(r"^\s{0,3}(?:(?:\d{1,2}[.)]|[-*+])\s+)?(`{3,}|~{3,})")  # also "2. ```python"
_HINTS_HEAD = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:[*_]{1,2})?(?:verification\s+hints?|hints?\s+for\s+(?:the\s+)?verifier|hints?)"
    r"(?:[*_]{1,2})?\s*(?::\s*(?:[*_]{1,2})?\s*(.*)|(?:[*_]{1,2})?\s*$)",
    re.I,
)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_DIFFISH = re.compile(r"^(?:--- |\+\+\+ |@@|[+-])")
_FILE_LABEL = re.compile(r"^\s*(?:#{1,6}\s*)?[*_]*(?:file(?:name)?|path)[*_]*\s*[:=]", re.I)


def _outside_code(reply: str) -> list[str]:
    """The reply's lines outside fenced blocks and bare diffs."""
    out: list[str] = []
    fence = ""
    in_diff = False
    for line in reply.splitlines():
        opening = _FENCE.match(line)
        if fence:
            if opening and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            continue
        if line.startswith("--- "):
            in_diff = True
        if in_diff:
            if line == "" or _DIFFISH.match(line) or line.startswith((" ", "\\")):
                if line == "":
                    in_diff = False
                continue
            in_diff = False
        out.append(line)
    return out


def parse_hints(reply: str) -> list[str]:
    """The items under a "Verification hints:" (or "Hints:") line outside code: its list,
    or the rest of its line; at most MAX_HINTS, each at most HINT_CHARS."""
    hints: list[str] = []
    lines = _outside_code(reply)
    for n, line in enumerate(lines):
        head = _HINTS_HEAD.match(line)
        if not head or _ITEM.match(line):
            continue
        rest = (head.group(1) or "").strip()
        if rest:
            hints.append(rest)
        for follow in lines[n + 1 :]:
            if not follow.strip():
                if hints:
                    break
                continue
            item = _ITEM.match(follow)
            if not item:
                break
            hints.append(item.group(1).strip())
        break
    return [_clip(" ".join(h.split()), HINT_CHARS) for h in hints if h.strip()][:MAX_HINTS]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)].rstrip() + "..."


def summarize(reply: str, files_changed: Sequence[str], limit: int = SUMMARY_LIMIT) -> str:
    """At most `limit` characters: the first prose outside code and hints, then the files."""
    prose: list[str] = []
    for line in _outside_code(reply):
        if _HINTS_HEAD.match(line) and not _ITEM.match(line):
            break  # the hints travel in their own field
        text = " ".join(line.strip().strip("#*").split())
        if text and not _FILE_LABEL.match(line):
            prose.append(text)
        if sum(len(p) + 1 for p in prose) > PROSE_LIMIT:
            break
    head = _clip(" ".join(prose), PROSE_LIMIT) if prose else "(no prose)"
    shown, files = list(files_changed), ""
    while True:
        more = len(files_changed) - len(shown)
        files = "Files: " + (", ".join(shown) if shown else ("none" if not more else "")) + (
            f"{' ' if shown else ''}(+{more} more)" if more else ""
        )
        if len(files) <= limit - len(head) - 1 or not shown:
            break
        shown.pop()
    return _clip(f"{head}\n{files}", limit)


def make_baton(
    reply: str,
    edits: Iterable[FileEdit],
    files_changed: Sequence[str],
    hints: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> BatonPacket:
    """The Builder's BatonPacket: the whole reply, its bounded summary, the files changed,
    the hints the reply gave (plus `hints` from elsewhere), and metadata with the count of
    edits by kind (the caller's metadata wins on a clash)."""
    kinds: dict[str, int] = {}
    for edit in edits:
        kinds[edit.kind] = kinds.get(edit.kind, 0) + 1
    merged: list[str] = []
    for hint in [*parse_hints(reply), *(hints or [])]:
        hint = _clip(" ".join(str(hint).split()), HINT_CHARS)
        if hint and hint not in merged:
            merged.append(hint)
    return BatonPacket(
        response_text=reply,
        builder_summary=summarize(reply, files_changed),
        files_changed=list(files_changed),
        verification_hints=merged[:MAX_HINTS],
        metadata={"edits": kinds, **(metadata or {})},
    )


def _label(baton: BatonPacket, back: int) -> str:
    meta = baton.metadata
    parts = [f"Turn {meta['turn_number']}" if "turn_number" in meta else f"{back} turn{'s' if back > 1 else ''} ago"]
    if "roadmap_index" in meta:
        parts.append(f"item {int(meta['roadmap_index']) + 1}")
    if "status" in meta:
        parts.append(str(meta["status"]))
    return ", ".join(parts)


def baton_context(batons: Sequence[BatonPacket], limit_chars: int = CONTEXT_LIMIT) -> str:
    """What the next turn sees of the past: the summaries, most recent first, as many as fit
    in `limit_chars` (the newest is cut to fit if it alone does not), then how many older
    turns were left out when that line fits too. The batons come oldest first."""
    if limit_chars <= 0 or not batons:
        return ""
    entries: list[str] = []
    used = 0
    for back, baton in enumerate(reversed(batons), 1):
        entry = f"[{_label(baton, back)}] {' '.join(baton.builder_summary.split())}"  # one line each
        cost = len(entry) + (1 if entries else 0)
        if used + cost > limit_chars:
            if not entries:
                entries.append(_clip(entry, limit_chars))
                used = len(entries[0])
            break
        entries.append(entry)
        used += cost
    left_out = len(batons) - len(entries)
    if left_out:
        note = f"({left_out} earlier turn{'s' if left_out > 1 else ''} not shown)"
        if used + len(note) + 1 <= limit_chars:
            entries.append(note)
    return "\n".join(entries)
