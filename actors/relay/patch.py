"""A unified diff applied to a text, the way a model writes one (seed 004's Builder).

Diffs are applied here rather than by a library: `whatthepatch` trusts a hunk's line numbers
(a model's are often off) and `patch-ng` patches files on disk by paths it reads from the
diff. Ours finds each hunk by its context, nearest to the line it names, and refuses a hunk
whose context is not in the file. A diff against a file that does not exist yet can only
mean its new side (`diff_new_side`). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HUNK_HEAD = re.compile(r"^@@\s*(?:-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?)?\s*@@")


@dataclass
class _Hunk:
    header: str
    old_start: int | None
    old_count: int | None
    lines: list[tuple[str, str]] = field(default_factory=list)
    old_no_eol: bool = False
    new_no_eol: bool = False


def _hunks(diff: str) -> list[_Hunk]:
    hunks: list[_Hunk] = []
    for line in diff.splitlines():
        head = HUNK_HEAD.match(line)
        if head:
            start = int(head.group(1)) if head.group(1) is not None else None
            count = int(head.group(2)) if head.group(2) is not None else (1 if start is not None else None)
            hunks.append(_Hunk(header=line.strip(), old_start=start, old_count=count))
            continue
        if not hunks or line.startswith(("--- ", "+++ ")) and not hunks[-1].lines:
            continue
        hunk = hunks[-1]
        if line.startswith("\\"):
            last = hunk.lines[-1][0] if hunk.lines else " "
            if last in " -":
                hunk.old_no_eol = True
            if last in " +":
                hunk.new_no_eol = True
            continue
        tag, text = (line[0], line[1:]) if line[:1] in ("+", "-", " ") else (" ", line)
        hunk.lines.append((tag, text))
    return hunks


def _find(lines: list[str], block: list[str], hint: int, cursor: int) -> int | None:
    """Where `block` occurs in `lines`: after the previous hunk if it can, nearest to the
    line the hunk names; exact first, then ignoring trailing whitespace."""
    size = len(block)
    for same in (lambda a, b: a == b, lambda a, b: a.rstrip() == b.rstrip()):
        for lo in (cursor, 0):
            spots = [
                p
                for p in range(lo, len(lines) - size + 1)
                if all(same(lines[p + i], block[i]) for i in range(size))
            ]
            if spots:
                return min(spots, key=lambda p: (abs(p - hint), p))
    return None


def apply_unified_diff(original: str, diff: str, path: str = "file") -> str:
    """`original` with the hunks of `diff` applied. Line numbers are hints: each hunk goes
    where its context and removed lines are, nearest to the line it names. A hunk whose
    lines are not in the text raises ValueError naming the file and the hunk."""
    hunks = _hunks(diff)
    if not hunks:
        raise ValueError(f"{path}: the diff has no hunks (no @@ lines)")
    eol = original.endswith("\n") or original == ""
    lines = (original[:-1] if original.endswith("\n") else original).split("\n") if original else []
    offset, cursor = 0, 0
    for number, hunk in enumerate(hunks, 1):
        old = [text for tag, text in hunk.lines if tag in " -"]
        if not old:  # a pure insertion: after line old_start (`-k,0`), or at the end
            if hunk.old_start is None:
                pos = len(lines)
            else:
                after = hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1
                pos = min(max(after + offset, 0), len(lines))
        else:
            hint = hunk.old_start - 1 + offset if hunk.old_start is not None else cursor
            found = _find(lines, old, hint, cursor)
            if found is None:
                first = next((t for tag, t in hunk.lines if tag in " -"), "")
                raise ValueError(
                    f"{path}: hunk {number} ({hunk.header}) does not apply: its lines are not in the file "
                    f"(first: {first.strip()[:60]!r})"
                )
            pos = found
        out: list[str] = []
        i = pos
        for tag, text in hunk.lines:
            if tag == " ":
                out.append(lines[i])  # the file's own line (it may differ in trailing space)
                i += 1
            elif tag == "-":
                i += 1
            else:
                out.append(text)
        lines[pos : pos + len(old)] = out
        offset += len(out) - len(old)
        cursor = pos + len(out)
    if any(h.new_no_eol for h in hunks):
        eol = False
    elif any(h.old_no_eol for h in hunks):
        eol = True
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if eol else "")


def diff_new_side(diff: str, path: str = "file") -> str:
    """The text a diff's hunks describe after the change (context and added lines): what a
    diff against a file that does not exist can only mean. ValueError without hunks, or
    when the diff removes lines (it was written against some text that is not there)."""
    hunks = _hunks(diff)
    if not hunks:
        raise ValueError(f"{path}: the diff has no hunks (no @@ lines)")
    if any(tag == "-" for h in hunks for tag, _ in h.lines):
        raise ValueError(f"{path}: a diff that removes lines from a file that does not exist")
    lines = [text for h in hunks for tag, text in h.lines if tag in " +"]
    if not lines:
        return ""
    return "\n".join(lines) + ("" if any(h.new_no_eol for h in hunks) else "\n")
