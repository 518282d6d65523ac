"""Retrieval evaluation: recall@1/5/10 and mean reciprocal rank of file rankers against gold
files (`python -m evals retrieval`).

A ranker is any `question -> ranked relative file paths`. The metrics are pure; the
rankers (keyword counting; the repository index searched dense, lexical (BM25) or hybrid,
over chunks embedded with or without their headers; hybrid with headers reranked by the LLM;
seed 003's HyDE search; hybrid with HyDE as its fallback, as `semantic_file_search` runs it)
are built by
`rankers()` for one repository and measured side by side in one run.
The question file is `{"questions": [{"q": ..., "gold": [path, ...]}, ...]}`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.codeqa.config import CodeQaConfig
from actors.codeqa.hyde import FALLBACK_RULE, Corpus, FallbackRule
from actors.codeqa.occurrences import load_texts
from actors.codeqa.retrieval import hyde_ranker, keyword_ranker
from actors.index.hybrid import HybridConfig, complete_manifest, lexical_view, search_index
from actors.index.indexer import INDEX_HEADERS, index_repository
from actors.index.rerank import RERANK_FILES, rerank
from actors.index.vectors import collection_for, open_index

Ranker = Callable[[str], list[str]]
KS = (1, 5, 10)
# method -> (ranking of the index, chunks embedded with headers, weight of the definitions ranking)
INDEX_METHODS: dict[str, tuple[str, bool, float]] = {
    "embedding": ("dense", False, 0.0),
    "lexical": ("lexical", False, 0.0),
    "hybrid": ("hybrid", False, 0.0),
    "hybrid-defs": ("hybrid", False, 1.0),
    "embedding-headers": ("dense", True, 0.0),
    "hybrid-headers": ("hybrid", True, 0.0),
}
LLM_METHODS = ("rerank-llm", "hyde", "hybrid-hyde")  # methods that call the LLM
METHODS = ("keyword", *INDEX_METHODS, *LLM_METHODS)


class EvalError(ValueError):
    pass


@dataclass(frozen=True)
class Question:
    q: str
    gold: tuple[str, ...]


@dataclass
class MethodScore:
    method: str
    recall: dict[int, float] = field(default_factory=dict)
    mrr: float = 0.0
    seconds_per_query: float = 0.0
    misses: list[str] = field(default_factory=list)  # questions with no gold file in the top 10
    note: str = ""  # what the ranker says about the run (hybrid-hyde: how often HyDE ran)


def load_questions(path: str | Path) -> list[Question]:
    p = Path(path)
    if not p.is_file():
        raise EvalError(f"question file {path} {'is a folder' if p.is_dir() else 'does not exist'}")
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise EvalError(f"question file {path} is not JSON: {e.msg} at line {e.lineno}") from None
    items = data.get("questions") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise EvalError(f"question file {path} holds no questions (expected {{\"questions\": [...]}})")
    out = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("q"), str) or not item["q"].strip():
            raise EvalError(f"question {i} of {path} needs a non-empty 'q' (text) and 'gold'")
        gold = item.get("gold")
        if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and g.strip() for g in gold):
            given = repr(gold) if len(repr(gold)) <= 60 else repr(gold)[:57] + "..."
            raise EvalError(f"question {i} of {path}: 'gold' must be a non-empty list of file paths, not {given}")
        out.append(Question(item["q"], tuple(gold)))
    return out


def reciprocal_rank(ranked: Sequence[str], gold: Sequence[str]) -> float:
    for i, path in enumerate(ranked, 1):
        if path in gold:
            return 1.0 / i
    return 0.0


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def dedupe(paths: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [p for p in paths if not (p in seen or seen.add(p))]


def score(method: str, ranker: Ranker, questions: Sequence[Question]) -> MethodScore:
    result = MethodScore(method)
    started = time.perf_counter()
    rr, recalls = [], {k: [] for k in KS}
    for q in questions:
        ranked = dedupe(ranker(q.q))
        rr.append(reciprocal_rank(ranked, q.gold))
        for k in KS:
            recalls[k].append(recall_at(ranked, q.gold, k))
        if recall_at(ranked, q.gold, max(KS)) == 0:
            result.misses.append(q.q)
    n = len(questions)
    result.recall = {k: sum(v) / n for k, v in recalls.items()}
    result.mrr = sum(rr) / n
    result.seconds_per_query = (time.perf_counter() - started) / n
    result.note = getattr(ranker, "note", lambda: "")()
    return result


def table(scores: Sequence[MethodScore], n: int) -> str:
    lines = [
        f"| method ({n} questions) | recall@1 | recall@5 | recall@10 | MRR | s/query |",
        "|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.method} | {s.recall[1]:.2f} | {s.recall[5]:.2f} | {s.recall[10]:.2f} | {s.mrr:.2f} | {s.seconds_per_query:.2f} |"
        )
    return "\n".join(lines)


# -- the rankers ---------------------------------------------------------------------------


def index_ranker(
    root: Path,
    settings: Any,
    embedder: Any,
    *,
    ranking: str = "dense",
    headers: bool = False,
    k: int = 50,
    config: HybridConfig | None = None,
    log: Callable[[str], None] | None = None,
) -> Ranker:
    """Search of the repository's Qdrant index (built or refreshed first; its lexical view
    built before the first question, so neither counts in the time per query)."""
    collection = _prepare(root, settings, embedder, headers=headers, lexical=ranking != "dense", log=log)

    def rank(question: str) -> list[str]:
        with open_index(settings) as index:
            hits = search_index(index, collection, question, embed=embedder.embed, ranking=ranking, limit=k, config=config)
        return [h.path for h in hits]

    return rank


def _prepare(
    root: Path, settings: Any, embedder: Any, *, headers: bool, lexical: bool, log: Callable[[str], None] | None
) -> str:
    """Build or refresh the repository's index (and its lexical view); its collection."""
    collection = collection_for(str(root), headers=headers)
    with open_index(settings) as index:
        report = index_repository(
            str(root), index=index, embed=embedder.embed, dim=embedder.dim, data_dir=settings.data_dir, headers=headers
        )
        if log:
            log(f"index (headers={headers}): {report.summary()}")
        if lexical:
            view = lexical_view(index, collection, complete_manifest(index, collection))
            if log:
                log(f"lexical view (headers={headers}): {len(view.chunks)} chunks in {view.seconds:.2f}s")
    return collection


def rerank_llm_ranker(
    root: Path,
    settings: Any,
    embedder: Any,
    context: Any,
    *,
    files: int = RERANK_FILES,
    k: int = 50,
    config: HybridConfig | None = None,
    log: Callable[[str], None] | None = None,
) -> Ranker:
    """`hybrid-headers`, its top `files` files reordered by the LLM from their chunk headers
    (`actors.index.rerank`): one call per question through `context` (a `ToolContext`, so
    each call is recorded). A failed call, or a reply that names no candidate, leaves the
    fused order; each call's outcome is said on `log`."""
    collection = _prepare(root, settings, embedder, headers=True, lexical=True, log=log)
    with open_index(settings) as index:
        chunks = lexical_view(index, collection, complete_manifest(index, collection)).chunks
    headers = {(c.path, c.start_line, c.end_line): c.header for c in chunks}
    model = getattr(settings, "llm_model", "") or ""

    def rank(question: str) -> list[str]:
        with open_index(settings) as index:
            hits = search_index(index, collection, question, embed=embedder.embed, ranking="hybrid", limit=k, config=config)
        keys = [(h.path, h.start_line, h.end_line) for h in hits]
        out = rerank(question, keys, headers, context.complete, files=files, model=model)
        if log and out.error:
            log(f"rerank-llm: call failed, fused order kept: {out.error}")
        elif log and out.reply is not None:
            kept = "unusable reply, fused order kept" if not out.order else f"order {[i + 1 for i in out.order]}"
            log(f"rerank-llm: {kept} ({out.reply.latency_s:.1f}s): {out.reply.content[:80]!r}")
        return out.paths

    return rank


class FallbackRanker:
    """`semantic_file_search(ranking="hybrid-hyde")` as a ranker: hybrid over the repository
    index (built first, as for `hybrid`), seed 003's HyDE search only when `rule` finds the
    hybrid result weak (`actors.codeqa.fusion.hybrid_hyde_search`); counts how often it ran."""

    def __init__(
        self, root: Path, settings: Any, embedder: Any, context: Any, *, rule: FallbackRule = FALLBACK_RULE,
        log: Callable[[str], None] | None = None,
    ) -> None:
        from actors.codeqa.fusion import hybrid_hyde_search  # the tool's own function

        _prepare(root, settings, embedder, headers=INDEX_HEADERS, lexical=True, log=log)
        self.search = hybrid_hyde_search
        self.root, self.context, self.rule, self.log = root, context, rule, log
        self.config = CodeQaConfig.coerce(None).semantic_search
        self.corpus = Corpus(load_texts(root))
        self.asked = 0
        self.reasons: list[str] = []
        self.failed = 0

    def __call__(self, question: str) -> list[str]:
        self.asked += 1
        found = self.search(self.root, "", question, self.context, self.corpus, self.config, self.rule, top=50,
                            refresh=False)
        if found.reason is not None:
            self.reasons.append(found.reason.split(" (")[0])
            self.failed += bool(found.error)
        if self.log:
            why = f"HyDE ran: {found.reason}" if found.reason else "hybrid trusted"
            self.log(f"hybrid-hyde {question[:60]!r}: {why}{'; HyDE failed: ' + found.error if found.error else ''}: "
                     f"{json.dumps(found.paths[:10])}")
        return found.paths

    def note(self) -> str:
        counts = ", ".join(f"{n} {why}" for why, n in Counter(self.reasons).most_common())
        failed = f"; {self.failed} HyDE calls failed" if self.failed else ""
        return f"HyDE ran for {len(self.reasons)} of {self.asked} questions ({counts or 'never'}){failed}"


def embedding_ranker(root: Path, settings: Any, embedder: Any, k: int = 50) -> Ranker:
    """Plain vector search over the repository's Qdrant index (built or refreshed first)."""
    return index_ranker(root, settings, embedder, ranking="dense", k=k)


def _logged(name: str, ranker: Ranker, log: Callable[[str], None] | None, top: int = 10) -> Ranker:
    """`ranker`, each question's top `top` files said on `log` (for a diagnostic pass)."""
    if log is None:
        return ranker

    def rank(question: str) -> list[str]:
        started = time.perf_counter()
        ranked = ranker(question)
        log(f"{name} ({time.perf_counter() - started:.1f}s) {question[:60]!r}: {json.dumps(dedupe(ranked)[:top])}")
        return ranked

    return rank


def rankers(
    methods: Sequence[str],
    root: Path,
    settings: Any,
    embedder: Any,
    context: Any = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Ranker]:
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise EvalError(f"unknown retrieval method {unknown[0]!r} (known: {', '.join(METHODS)})")
    out: dict[str, Ranker] = {}
    for m in methods:
        if m == "keyword":
            out[m] = keyword_ranker(root)
        elif m in INDEX_METHODS:
            ranking, headers, weight = INDEX_METHODS[m]
            config = HybridConfig(definition_weight=weight) if weight else None
            out[m] = index_ranker(root, settings, embedder, ranking=ranking, headers=headers, config=config, log=log)
        elif m == "rerank-llm":
            out[m] = rerank_llm_ranker(root, settings, embedder, context, log=log)
        elif m == "hybrid-hyde":
            out[m] = FallbackRanker(root, settings, embedder, context, log=log)
        elif m == "hyde":
            out[m] = _logged("hyde", hyde_ranker(root, context), log)
    return out
