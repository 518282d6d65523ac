"""What an answer relied on: the files and line ranges, read from the run's recorded tool
results (pure: events in, sources out).

- Lines the orchestrator read with `read_code` (the `path, lines A-B of N:` header of each
  successful read), merged per file.
- Files a search listed that the answer names, by path or by file name, with the line range
  (`semantic_file_search`) or the line (`search_keyword`) the search showed.

`semantic_file_search` prints its files as `N. path lines A-B` whichever ranking made them:
`(similarity S)` after it for seed 003's HyDE, `(score S)` for the repository index's rankings
(hybrid, the default; dense; lexical), nothing for the hybrid-HyDE fallback when HyDE ran.
HyDE with five candidates or fewer lists them by occurrences (`N. path (K occurrences; line
L: ...)`), read like `search_keyword`'s lines. Recorded runs keep whichever form they had.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

_READ = re.compile(r"^(?P<path>.+?), lines (?P<a>\d+)-(?P<b>\d+) of \d+:", re.MULTILINE)
_RANKED = re.compile(
    r"^\d+\. (?P<path>\S+) lines (?P<a>\d+)-(?P<b>\d+)(?: \((?:similarity|score) [^)\n]*\))?[ \t]*$", re.MULTILINE
)
_LISTED = re.compile(r"^(?:\d+\. )?(?P<path>[^\s:]+)(?::| \()\s*\d+ .*?\bline (?P<line>\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Source:
    path: str
    ranges: tuple[tuple[int, int], ...] = ()  # merged, in line order

    def line(self) -> str:
        if not self.ranges:
            return self.path
        spans = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in self.ranges)
        single = len(self.ranges) == 1 and self.ranges[0][0] == self.ranges[0][1]
        return f"{self.path} {'line' if single else 'lines'} {spans}"


def relied_on(events: Iterable[Any], answer: str) -> list[Source]:
    """Sources of the answer, in the order the run first met them."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for e in events:
        if getattr(e, "type_name", "") != "ToolReturned" or not e.ok:
            continue
        if e.tool == "read_code":
            m = _READ.search(e.output)
            if m:
                spans.setdefault(m["path"], []).append((int(m["a"]), int(m["b"])))
        elif e.tool == "semantic_file_search":
            ranked = list(_RANKED.finditer(e.output))
            for m in ranked:
                if _named(m["path"], answer):
                    spans.setdefault(m["path"], []).append((int(m["a"]), int(m["b"])))
            if not ranked:
                _listed(e.output, answer, spans)
        elif e.tool == "search_keyword":
            _listed(e.output, answer, spans)
    return [Source(path, _merge(r)) for path, r in spans.items()]


def _listed(output: str, answer: str, spans: dict[str, list[tuple[int, int]]]) -> None:
    for m in _LISTED.finditer(output):
        if _named(m["path"], answer):
            spans.setdefault(m["path"], []).append((int(m["line"]), int(m["line"])))


def _named(path: str, answer: str) -> bool:
    """Whether the answer names the file: its path, its path inside the repository, or its
    file name (as a word, so 'app.py' is not found in 'webapp.py')."""
    text = answer.lower()
    p = PurePosixPath(path.lower())
    inner = "/".join(p.parts[1:])
    if path.lower() in text or (inner and "/" in inner and inner in text):
        return True
    return re.search(rf"(?<![\w./-]){re.escape(p.name)}(?![\w-])", text) is not None


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)
