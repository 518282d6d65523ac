"""Seed 003's `semantic_file_search` pipeline, the tool's `ranking="hyde"` (its default is
now the repository index's hybrid search): HyDE → keywords → keyword candidates → few:
return them; many: chunk, embed, rank by cosine similarity → top files with line ranges.

1. HyDE: the model writes the code that would answer the question (a hypothetical answer).
2. Keywords: the model extracts `num_keywords` short technical keywords (3–8 characters) from
   it. A reply with fewer usable keywords is asked again, at most `max_keyword_retries` more
   times, for the missing ones only, saying what was wrong; every usable keyword is kept.
3. Candidates: files ranked by the keywords' occurrences (the `search_keyword` counting),
   the top `max_files_to_search`.
4. At most `top_k_results` candidates: they are the answer, by occurrences. More: each is
   cut into `chunk_size`-token chunks overlapping by `chunk_overlap` (the one shared chunker,
   MiniLM's tokenizer), the HyDE answer and the chunks are embedded, and files rank by their
   best chunk's cosine similarity; the top `max_results_with_lines` come back with that
   chunk's line range.

The model calls go through the tool's `ToolContext`, which records them in the tool's own
stream (rule 2). Building requests, checking keywords and ranking are pure functions below
the pipeline; only `semantic_search` and `Corpus` touch the model, the embedder or the disk.
At the end: the rule that runs HyDE only as a fallback of the index's hybrid search
(`FallbackRule`, `hyde_reason`, `fuse_files`; `semantic_file_search(ranking="hybrid-hyde")`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from actors.codeqa.config import SemanticSearchConfig
from actors.codeqa.occurrences import FileCount, rank_texts, relative_files
from actors.index.chunking import Chunk, chunk_text
from actors.runtime.llm.types import LlmRequest
from actors.tools.search import STOP_WORDS
from actors.index.tokens import count_tokens

# -- the pipeline (effects through the context) -----------------------------------------------


@dataclass
class SemanticResult:
    question: str
    hyde: str
    keywords: list[str]
    keyword_attempts: int
    matched_files: int  # files holding any keyword
    candidates: list[FileCount]  # the top `max_files_to_search` of them
    ranked: list[RankedFile] | None = None  # None: few candidates, returned as they are
    chunks: int = 0

    @property
    def paths(self) -> list[str]:
        if self.ranked is not None:
            return [r.path for r in self.ranked]
        return [c.path for c in self.candidates]


@dataclass
class Corpus:
    """File texts, and the chunks and vectors made from them, kept for repeated searches
    (the tool's life, or a whole evaluation)."""

    texts: dict[str, str]
    _chunks: dict[tuple[str, int, int], list[Chunk]] = field(default_factory=dict)
    _vectors: dict[str, list[float]] = field(default_factory=dict)

    def chunks(self, path: str, config: SemanticSearchConfig) -> list[Chunk]:
        key = (path, config.chunk_size, config.chunk_overlap)
        if key not in self._chunks:
            self._chunks[key] = chunk_text(
                path, self.texts[path], size=config.chunk_size, overlap=config.chunk_overlap, length=count_tokens
            )
        return self._chunks[key]

    def vectors(self, texts: Sequence[str], context: Any) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, context.embed(missing), strict=True))
        return [self._vectors[t] for t in texts]


def semantic_search(
    question: str, corpus: Corpus, context: Any, config: SemanticSearchConfig, *, under: str = ""
) -> SemanticResult:
    """The whole pipeline for one question over the corpus (or its folder `under`)."""
    model = getattr(getattr(context, "settings", None), "llm_model", "") or ""
    hyde = context.complete(hyde_request(question, config, model)).content.strip()

    keywords: list[str] = []
    problem = ""
    attempts = 0
    for attempts in range(1, config.max_keyword_retries + 2):
        result = context.complete(keyword_request(question, hyde, config, model, keywords, problem))
        check = check_keywords(result.parsed, result.content, config, have=keywords)
        keywords += check.valid
        if check.problem is None:
            break
        problem = check.problem
    keywords = keywords or fallback_keywords(f"{question}\n{hyde}", config)

    files = relative_files(corpus.texts, under)
    matching = rank_texts(files, keywords)
    candidates = matching[: config.max_files_to_search]
    out = SemanticResult(question, hyde, keywords, attempts, len(matching), candidates)
    if len(candidates) <= config.top_k_results:
        return out
    chunks = [c for f in candidates for c in corpus.chunks(f.path, config)]
    if not chunks:
        return out
    query, *vectors = corpus.vectors([hyde or question, *[c.text for c in chunks]], context)
    out.ranked = rank_files(query, chunks, vectors, config.max_results_with_lines)
    out.chunks = len(chunks)
    return out


# -- requests (pure) ---------------------------------------------------------------------------


def hyde_request(question: str, config: SemanticSearchConfig, model: str = "") -> LlmRequest:
    system = (
        "You are an expert programmer. Write the code that would answer the question below, as "
        "it might appear in the repository: plausible module, class and function names, imports, "
        f"docstrings and comments. At most {config.hyde_words} words. Code only, no explanation."
    )
    return LlmRequest(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question.strip()}],
        params={"temperature": 0.0, "max_tokens": config.hyde_max_tokens},
    )


def keyword_schema(config: SemanticSearchConfig, count: int | None = None) -> dict[str, Any]:
    """`{"keywords": [8 strings of 3-8 characters]}`; plain enough for llama.cpp's grammar."""
    n = count or config.num_keywords
    word = {"type": "string", "minLength": config.keyword_min_chars, "maxLength": config.keyword_max_chars}
    return {
        "type": "object",
        "properties": {"keywords": {"type": "array", "items": word, "minItems": n, "maxItems": n}},
        "required": ["keywords"],
    }


def keyword_request(
    question: str,
    hyde: str,
    config: SemanticSearchConfig,
    model: str = "",
    have: Sequence[str] = (),
    problem: str = "",
) -> LlmRequest:
    """The keyword request. A retry (`have`: the usable keywords so far, `problem`: what was
    wrong with the last reply) asks only for the missing ones, none of those already had: a
    small model shown its own bad reply copies it word for word, even when sampling."""
    lo, hi = config.keyword_min_chars, config.keyword_max_chars
    wanted = max(config.num_keywords - len(have), 1)
    system = (
        f"Extract exactly {wanted} different short technical keywords from the code below: words "
        "that are likely to appear literally in the real source files, such as identifiers, parts "
        f"of identifiers, function or class names. Each keyword is one lower-case word of {lo} to "
        f"{hi} characters (letters, digits, underscore), and no keyword repeats another. Reply with "
        "JSON only: " + json.dumps({"keywords": [f"word{i}" for i in range(1, wanted + 1)]})
    )
    user = f"Question: {question.strip()}\n\nCode:\n{hyde.strip() or '(none)'}"
    if have or problem:
        user += f"\n\n{problem}".rstrip()
        if have:
            user += f"\nKeywords already found: {', '.join(have)}. Give {wanted} more, none of these."
    return LlmRequest(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        params={"temperature": 0.0, "max_tokens": 32 + 12 * wanted},
        response_schema=keyword_schema(config, wanted),
    )


# -- keywords (pure) ---------------------------------------------------------------------------

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class KeywordCheck:
    valid: list[str]  # lower case, distinct, in the reply's order
    rejected: list[tuple[str, str]]  # (word, why), repeats included
    problem: str | None  # None: enough keywords


def check_keywords(
    parsed: Mapping[str, Any] | None, content: str, config: SemanticSearchConfig, have: Sequence[str] = ()
) -> KeywordCheck:
    """The usable new keywords in a reply (`have`: those an earlier reply gave) and, when
    together they are fewer than `num_keywords`, a line saying what was wrong, for the retry."""
    words = _reply_words(parsed, content)
    wanted = max(config.num_keywords - len(have), 0)
    valid: list[str] = []
    rejected: list[tuple[str, str]] = []
    for raw in words:
        word = raw.strip().strip("`'\".,;:()[]{}").strip()
        repeat = word.lower() in valid or word.lower() in have
        why = _why_not(word, config) or ("repeats an earlier keyword" if repeat else "")
        if why:
            rejected.append((raw, why))
        else:
            valid.append(word.lower())
    if len(valid) >= wanted:
        return KeywordCheck(valid[:wanted], rejected, None)
    if not words:
        problem = f'Your reply held no keyword list; expected {{"keywords": [{wanted} words]}}.'
    else:
        shown = "; ".join(f"'{w[:30]}' {why}" for w, why in rejected[:6])
        problem = f"Only {len(valid)} of the {wanted} keywords were usable" + (f" ({shown})." if shown else ".")
    return KeywordCheck(valid, rejected, problem)


def _reply_words(parsed: Mapping[str, Any] | None, content: str) -> list[str]:
    if isinstance(parsed, Mapping):
        value = parsed.get("keywords")
        if value is None:
            value = next((v for v in parsed.values() if isinstance(v, list)), None)
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, str):
            return re.split(r"[,\s]+", value.strip())
    text = (content or "").strip()
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            value = None
        if isinstance(value, list):
            return [str(v) for v in value]
    if not text or "{" in text:
        return []
    items = (re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", w).strip() for w in re.split(r"[,\n]+", text))
    return [w for w in items if w]


def _why_not(word: str, config: SemanticSearchConfig) -> str:
    if not word:
        return "is empty"
    if not _IDENT.match(word):
        return "is not one word of letters, digits and underscores"
    if len(word) < config.keyword_min_chars:
        return f"is shorter than {config.keyword_min_chars} characters"
    if len(word) > config.keyword_max_chars:
        return f"has {len(word)} characters, more than {config.keyword_max_chars}"
    if word.lower() in STOP_WORDS:
        return "is a common English word"
    return ""


def fallback_keywords(text: str, config: SemanticSearchConfig) -> list[str]:
    """Keywords taken from the text itself when the model gave none: the most frequent words
    and identifier pieces of the right length (ties in order of appearance)."""
    pieces = []
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
        for part in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", word) + [word]:
            if not _why_not(part, config):
                pieces.append(part.lower())
    counts = Counter(pieces)
    order = {w: i for i, w in reversed(list(enumerate(pieces)))}
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[: config.num_keywords]


# -- ranking (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RankedFile:
    path: str
    start_line: int  # of the file's best chunk
    end_line: int
    score: float  # cosine similarity of that chunk to the HyDE answer


def rank_files(
    query: Sequence[float], chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]], top: int
) -> list[RankedFile]:
    """Files by the cosine similarity of their best chunk to `query`, best first (ties by
    path), at most `top`, each with its best chunk's line range."""
    import numpy as np  # lazily: only the cosine ranking needs it

    if not chunks:
        return []
    q = np.asarray(query, dtype=float)
    m = np.asarray(vectors, dtype=float)
    if m.shape != (len(chunks), q.shape[0]):
        raise ValueError(f"{len(chunks)} chunks but vectors of shape {m.shape} for a query of {q.shape[0]}")
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    sims = (m @ q) / np.where(norms == 0, 1.0, norms)
    best: dict[str, RankedFile] = {}
    for chunk, sim in zip(chunks, sims.tolist(), strict=True):
        held = best.get(chunk.path)
        if held is None or sim > held.score:
            best[chunk.path] = RankedFile(chunk.path, chunk.start_line, chunk.end_line, float(sim))
    return sorted(best.values(), key=lambda r: (-r.score, r.path))[:top]


# -- HyDE as a fallback of the hybrid ranking (pure) -------------------------------------------
#
# `semantic_file_search(ranking="hybrid-hyde")`: the repository index's hybrid search first
# (vectors and BM25, fused); HyDE, which costs two model calls, only when the hybrid result
# looks weak by `hyde_reason`. Then HyDE's files are a third ranking fused with the dense
# and lexical ones (reciprocal rank fusion over files), so HyDE settles what the two sides
# disagree on rather than replacing them.


@dataclass(frozen=True)
class FallbackRule:
    """When the hybrid result is weak enough to pay for HyDE. Two general signals, neither
    about any question: the dense and lexical sides put different files first, or the dense
    side's best chunk is a poor match (cosine below `min_dense_score`; 0 turns that off)."""

    on_disagreement: bool = True
    min_dense_score: float = 0.0
    hyde_weight: float = 1.0  # HyDE's ranking against the dense and lexical ones (1 each)
    rrf_k: int = 60


FALLBACK_RULE = FallbackRule()


def hyde_reason(
    dense_files: Sequence[str], lexical_files: Sequence[str], dense_top: float | None, rule: FallbackRule
) -> str | None:
    """Why HyDE should run for this query (a short phrase), or None: hybrid is trusted."""
    if not dense_files:
        return "the dense side found nothing"
    if rule.min_dense_score > 0 and (dense_top is None or dense_top < rule.min_dense_score):
        return f"the best dense match is weak (cosine {dense_top or 0.0:.2f} < {rule.min_dense_score:.2f})"
    if rule.on_disagreement and lexical_files and dense_files[0] != lexical_files[0]:
        return f"dense and lexical disagree on the first file ({dense_files[0]} / {lexical_files[0]})"
    return None


def fuse_files(
    dense_files: Sequence[str], lexical_files: Sequence[str], hyde_files: Sequence[str], rule: FallbackRule
) -> list[str]:
    """The three file rankings fused by reciprocal rank fusion (dense and lexical weigh 1,
    HyDE `rule.hyde_weight`); ties keep the order of first appearance, dense first."""
    from actors.index.lexical import fuse

    fused = fuse([list(dense_files), list(lexical_files), list(hyde_files)], [1.0, 1.0, rule.hyde_weight], rule.rrf_k)
    return [str(path) for path, _ in fused]


def file_order(paths: Sequence[str]) -> list[str]:
    """Paths in order of first appearance (a chunk ranking read as a file ranking)."""
    return list(dict.fromkeys(paths))
