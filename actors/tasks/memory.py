"""The MemorySystem (seed 001): a global file-metadata index and `get_relevant_context_for`.

It holds paths and descriptions only: no file contents, no file operations, no ranking of
its own. Relevance is scored by an associative matching task — an atomic task template
(`associative-match` by default; a user overrides it with a template of the same name) —
and the highest-scoring paths are returned. With the "disable context" flag the inherited
context is left out of what the matching task sees.

`index_workspace` builds an index from a folder (first meaningful line of each text file);
it is the indexer, run once before a workflow, and its result is recorded with the workflow.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from actors.tasks.result import TaskResult
from actors.tools.paths import ToolInputError, is_binary, read_head, resolve_root, walk_files
from events.errors import ErrorInfo

MATCHING_TASK = "associative-match"
MAX_CANDIDATES = 30  # what one matching call sees; a bigger index is narrowed by shared words first
_WORD = re.compile(r"[A-Za-z0-9_]+")


class ContextGenerationInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    inherited_context: str | None = None
    disable_context: bool = False
    max_results: int = 3


class AssociativeMatchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    context_summary: str = ""
    matches: list[tuple[str, float]] = []
    error: ErrorInfo | None = None

    @property
    def paths(self) -> list[str]:
        return [p for p, _ in self.matches]


Matcher = Callable[[str, str], TaskResult]  # (query, candidates text) -> the matching task's result


class MemorySystem:
    def __init__(self, index: dict[str, str] | None = None, *, matching_task: str = MATCHING_TASK) -> None:
        self._index: dict[str, str] = dict(index or {})
        self.matching_task = matching_task

    @property
    def global_index(self) -> dict[str, str]:
        return dict(self._index)

    def update_global_index(self, entries: dict[str, str]) -> None:
        self._index.update(entries)

    def get_relevant_context_for(self, request: ContextGenerationInput, match: Matcher) -> AssociativeMatchResult:
        if not self._index:
            return AssociativeMatchResult(context_summary="the memory index is empty")
        query = request.query
        if request.inherited_context and not request.disable_context:
            query = f"{query}\n\nContext so far:\n{request.inherited_context}"
        candidates = shortlist(self._index, query, MAX_CANDIDATES)
        listing = "\n".join(f"{path}: {self._index[path]}" for path in candidates)
        result = match(query, listing)
        if not result.ok:
            return AssociativeMatchResult(error=result.error or ErrorInfo(type="memory_error", reason="no_match", message=result.line()))
        matches = best(scores(result.content, candidates), request.max_results)
        summary = ", ".join(f"{p} ({s:.2f})" for p, s in matches) or "no relevant files"
        return AssociativeMatchResult(context_summary=summary, matches=matches)


def scores(content: Any, candidates: list[str]) -> list[tuple[str, float]]:
    """The (path, score) pairs a matching task returned, for known candidates only."""
    raw = content.get("matches") if isinstance(content, dict) else content
    out: dict[str, float] = {}
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        path, score = item.get("path"), item.get("score", 0)
        if isinstance(path, str) and path.strip() in candidates and isinstance(score, (int, float)) and not isinstance(score, bool):
            out[path.strip()] = max(out.get(path.strip(), 0.0), float(score))
    return [(p, out[p]) for p in candidates if p in out]


def best(pairs: list[tuple[str, float]], n: int) -> list[tuple[str, float]]:
    """The highest-scoring paths (ties in candidate order), positive scores only."""
    ranked = sorted((p for p in pairs if p[1] > 0), key=lambda p: -p[1])
    return ranked[: max(n, 0)]


def shortlist(index: dict[str, str], query: str, n: int) -> list[str]:
    """At most n candidates: all of them if few, else those sharing most words with the query."""
    paths = sorted(index)
    if len(paths) <= n:
        return paths
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 2}

    def overlap(path: str) -> int:
        text = {w.lower() for w in _WORD.findall(f"{path} {index[path]}")}
        return len(words & text)

    return sorted(sorted(paths, key=overlap, reverse=True)[:n])


def index_workspace(root: str | Path, limit: int = 200) -> dict[str, str]:
    """path -> description (the first meaningful line) for up to `limit` text files."""
    base = resolve_root(root)
    index: dict[str, str] = {}
    for path in walk_files(base):
        if len(index) >= limit:
            break
        try:
            head = read_head(base, path, 4096)  # regular files only, never outside the root
        except (ToolInputError, OSError):
            continue
        if is_binary(head):
            continue
        index[path.relative_to(base).as_posix()] = describe(head.decode("utf-8", errors="replace"))
    return index


def describe(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().strip("#/*;\"'-=").strip()
        if len(line) >= 8 and not line.startswith(("from ", "import ", "<?xml", "!")):
            return line[:120]
    return "(no description)"
