"""The search behind `semantic_file_search` (actors.codeqa.tools): the repository index's
rankings, and the fallback that fuses seed 003's HyDE search into the hybrid one when the
hybrid result looks weak (`hyde.FallbackRule`).

    index_search(base, prefix, question, context, ranking, top)      the index's best file chunks
    hybrid_hyde_search(base, prefix, question, context, corpus, ...)  hybrid, and HyDE when weak
    fallback_rank(dense, lexical, hyde, rule)                         the fusion policy (pure)

The first search of a repository builds its index (every text file chunked and embedded),
logged as it goes on the `chorus.codeqa` logger; later searches re-embed only changed files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.codeqa.config import SemanticSearchConfig
from actors.codeqa.hyde import (
    FALLBACK_RULE,
    Corpus,
    FallbackRule,
    SemanticResult,
    file_order,
    fuse_files,
    hyde_reason,
    semantic_search,
)
from actors.index.hybrid import HybridConfig, fuse_hits, search_index
from actors.index.indexer import INDEX_HEADERS, IndexReport, index_repository
from actors.index.vectors import Hit, collection_for, open_index
from actors.runtime.llm.types import LlmError

log = logging.getLogger("chorus.codeqa")


@dataclass
class FallbackResult:
    """`hybrid_hyde_search`'s answer: the best chunk of each file, best file first."""

    hits: list[Hit]
    reason: str | None  # why HyDE ran; None: hybrid was trusted and HyDE did not run
    hyde: SemanticResult | None = None
    error: str = ""  # HyDE was due but its model call failed: hybrid's order is kept

    @property
    def paths(self) -> list[str]:
        return [h.path for h in self.hits]


def hybrid_hyde_search(
    base: Path,
    prefix: str,
    question: str,
    context: Any,
    corpus: Corpus,
    config: SemanticSearchConfig,
    rule: FallbackRule = FALLBACK_RULE,
    top: int = 10,
    depth: int = 50,
    refresh: bool = True,
) -> FallbackResult:
    """Hybrid search of the repository index of `base/prefix` (refreshed first); when
    `hyde_reason` finds it weak, seed 003's HyDE search too, its files fused with the dense
    and lexical ones. Without a reason, the order is exactly `ranking="hybrid"`'s. Paths are
    relative to `base`. `refresh=False`: the index is known to be current."""
    folder = base / prefix if prefix else base
    data_dir = Path(getattr(context.settings, "data_dir", None) or Path.home() / ".chorus")
    lead = f"{prefix}/" if prefix else ""
    with open_index(context.settings) as index:
        if refresh:  # only changed files are embedded again
            index_repository(str(folder), index=index, embed=context.embed, dim=context.embedder.dim,
                             data_dir=data_dir, headers=INDEX_HEADERS, progress=_progress(folder))
        collection = collection_for(str(folder.resolve()), headers=INDEX_HEADERS)
        dense = search_index(index, collection, question, embed=context.embed, ranking="dense", limit=depth)
        lexical = search_index(index, collection, question, ranking="lexical", limit=depth)
    dense, lexical = ([_under(h, lead) for h in side] for side in (dense, lexical))
    return fallback_rank(
        dense, lexical, lambda: semantic_search(question, corpus, context, config, under=prefix), rule, top, depth
    )


def fallback_rank(
    dense: Sequence[Hit],
    lexical: Sequence[Hit],
    hyde: Any,
    rule: FallbackRule = FALLBACK_RULE,
    top: int = 10,
    depth: int = 50,
) -> FallbackResult:
    """The fallback policy over the two sides' chunk rankings: `hyde()` (a `SemanticResult`)
    is called only when `hyde_reason` finds the hybrid result weak. Without a reason (or when
    HyDE's model call fails) the files come in hybrid's fused order; with one, the dense,
    lexical and HyDE file rankings are fused (`fuse_files`)."""
    fused = fuse_hits(dense, lexical, HybridConfig(candidates=depth))  # what ranking="hybrid" returns
    best: dict[str, Hit] = {}
    for h in [*fused, *dense, *lexical]:
        best.setdefault(h.path, h)
    dense_files, lexical_files = file_order([h.path for h in dense]), file_order([h.path for h in lexical])
    reason = hyde_reason(dense_files, lexical_files, dense[0].score if dense else None, rule)
    order = file_order([h.path for h in fused])
    out = FallbackResult([], reason)
    if reason is not None:
        try:
            out.hyde = hyde()
        except LlmError as e:
            out.error = str(e) or type(e).__name__
        else:
            order = fuse_files(dense_files, lexical_files, out.hyde.paths, rule)
            for r in out.hyde.ranked or []:
                best.setdefault(r.path, Hit(r.path, r.start_line, r.end_line, "", "", r.score))
            for c in out.hyde.candidates:
                best.setdefault(c.path, Hit(c.path, c.line, c.line, c.text, "", 0.0))
    out.hits = [best[p] for p in order[:top] if p in best]
    return out


def _progress(folder: Path) -> Callable[[str], None]:
    def say(line: str) -> None:
        log.info("semantic_file_search: indexing %s: %s", folder, line)

    return say


def _under(h: Hit, lead: str) -> Hit:
    return Hit(lead + h.path, h.start_line, h.end_line, h.text, h.language, h.score) if lead else h


def index_search(
    base: Path,
    prefix: str,
    question: str,
    context: Any,
    ranking: str,
    top: int,
    on_report: Callable[[IndexReport], None] | None = None,
) -> list[Hit]:
    """The best chunk of each of the `top` best files for `question`, from the repository
    index of `base/prefix` (refreshed first: only changed files are embedded again, all of
    them the first time, with progress on the `chorus.codeqa` logger); paths relative to
    `base`. `on_report` gets the refresh's `IndexReport`."""
    folder = base / prefix if prefix else base
    embedder = context.embedder
    settings = context.settings
    data_dir = Path(getattr(settings, "data_dir", None) or Path.home() / ".chorus")
    with open_index(settings) as index:
        report = index_repository(str(folder), index=index, embed=context.embed, dim=embedder.dim, data_dir=data_dir,
                                  headers=INDEX_HEADERS, progress=_progress(folder))
        if on_report is not None:
            on_report(report)
        hits = search_index(index, collection_for(str(folder.resolve()), headers=INDEX_HEADERS), question,
                            embed=context.embed, ranking=ranking, limit=max(50, top * 5))
    best: dict[str, Hit] = {}
    for h in hits:
        best.setdefault(h.path, h)
    lead = f"{prefix}/" if prefix else ""
    return [Hit(lead + h.path, h.start_line, h.end_line, h.text, h.language, h.score) for h in list(best.values())[:top]]
