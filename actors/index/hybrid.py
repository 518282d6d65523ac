"""Searching a repository's index three ways: `dense` (the vectors), `lexical` (BM25 over
the same chunks) and `hybrid` (both, fused by reciprocal rank fusion).

The lexical index is a view of the collection, not a store of its own: it is built from the
chunk payloads the collection holds (`VectorIndex.chunks`: path, header and text, exactly
what was embedded) and cached per collection under a fingerprint of its *complete* manifest
(the files' hashes, the schema, the chunk count). Re-indexing writes a new manifest, so the
next search rebuilds the lexical side from the new chunks: the two sides cannot drift apart,
and a lexical index is never read for an index that is not complete.

    hits = search_index(index, collection, "class that encrypts events", embed=embedder.embed,
                        ranking="hybrid", limit=10)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from actors.index.lexical import RRF_K, LexicalIndex, fuse
from actors.index.names import DefinitionIndex
from actors.index.vectors import Hit, IndexMissing, Manifest, StoredChunk, VectorIndex

RANKINGS = ("dense", "lexical", "hybrid")
_CACHED = 8  # lexical indexes kept in memory (collections), least recently used dropped


@dataclass(frozen=True)
class HybridConfig:
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    rrf_k: int = RRF_K
    candidates: int = 50  # chunks taken from each side before fusing
    definition_weight: float = 0.0  # the third ranking: chunks defining a name the question gives


@dataclass
class _Lexical:
    fingerprint: str
    chunks: list[StoredChunk]
    index: LexicalIndex
    definitions: DefinitionIndex
    seconds: float  # to read the chunks and build the index


# By collection: a collection's name comes from the repository's path, and the fingerprint
# from what its chunks were made of, so one key in two Qdrant folders means the same chunks.
_cache: OrderedDict[str, _Lexical] = OrderedDict()


def fingerprint(manifest: Manifest) -> str:
    body = json.dumps([manifest.files, manifest.schema, manifest.chunks, manifest.dim], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def complete_manifest(index: VectorIndex, collection: str, what: str = "") -> Manifest:
    manifest = index.manifest(collection)
    if manifest is None or not manifest.complete:
        raise IndexMissing(f"{what or collection} has no completed index; index it first")
    return manifest


def lexical_view(index: VectorIndex, collection: str, manifest: Manifest) -> _Lexical:
    """The BM25 view of `collection` as its complete `manifest` describes it (cached)."""
    key = collection
    stamp = fingerprint(manifest)
    held = _cache.get(key)
    if held is not None and held.fingerprint == stamp:
        _cache.move_to_end(key)
        return held
    started = time.perf_counter()
    chunks = index.chunks(collection)
    lexical = LexicalIndex([(c.path, f"{c.header}\n{c.text}" if c.header else c.text) for c in chunks])
    definitions = DefinitionIndex([(c.text, c.language) for c in chunks])
    view = _Lexical(stamp, chunks, lexical, definitions, time.perf_counter() - started)
    _cache[key] = view
    _cache.move_to_end(key)
    while len(_cache) > _CACHED:
        _cache.popitem(last=False)
    return view


def lexical_search(
    index: VectorIndex,
    collection: str,
    query: str,
    *,
    limit: int = 10,
    path_prefix: str | None = None,
    language: str | None = None,
    manifest: Manifest | None = None,
) -> list[Hit]:
    """BM25 over the collection's chunks; the score is BM25's."""
    view = lexical_view(index, collection, manifest or complete_manifest(index, collection))
    allowed = _allowed(view, path_prefix, language)
    return [_hit(view.chunks[h.row], h.score) for h in view.index.search(query, limit=limit, allowed=allowed)]


def definition_search(
    index: VectorIndex,
    collection: str,
    query: str,
    *,
    limit: int = 10,
    path_prefix: str | None = None,
    language: str | None = None,
    manifest: Manifest | None = None,
) -> list[Hit]:
    """The chunks that define a code name `query` gives (`actors.index.names`), most names
    first; the score is the number of names defined."""
    view = lexical_view(index, collection, manifest or complete_manifest(index, collection))
    rows = view.definitions.rank(query, limit=limit, allowed=_allowed(view, path_prefix, language))
    return [_hit(view.chunks[r], float(len(rows) - i)) for i, r in enumerate(rows)]


def _allowed(view: _Lexical, path_prefix: str | None, language: str | None) -> list[bool] | None:
    if not (path_prefix or language):
        return None
    return [_passes(c, path_prefix, language) for c in view.chunks]


def search_index(
    index: VectorIndex,
    collection: str,
    query: str,
    *,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
    ranking: str = "hybrid",
    limit: int = 10,
    path_prefix: str | None = None,
    language: str | None = None,
    config: HybridConfig | None = None,
    what: str = "",
) -> list[Hit]:
    """The best `limit` chunks for `query` by `ranking` (one of `RANKINGS`). A hybrid hit's
    score is its fused score; a dense one's the cosine similarity; a lexical one's BM25."""
    if ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {ranking!r} (known: {', '.join(RANKINGS)})")
    cfg = config or HybridConfig()
    manifest = complete_manifest(index, collection, what)
    if ranking == "lexical":
        return lexical_search(index, collection, query, limit=limit, path_prefix=path_prefix, language=language, manifest=manifest)
    if embed is None:
        raise ValueError(f"the {ranking} ranking needs an embedder")
    vector = embed([query])[0]
    depth = limit if ranking == "dense" else max(limit, cfg.candidates)
    dense = index.search(collection, vector, limit=depth, path_prefix=path_prefix, language=language)
    if ranking == "dense":
        return dense
    lexical = lexical_search(
        index, collection, query, limit=depth, path_prefix=path_prefix, language=language, manifest=manifest
    )
    defined: list[Hit] = []
    if cfg.definition_weight:
        defined = definition_search(
            index, collection, query, limit=depth, path_prefix=path_prefix, language=language, manifest=manifest
        )
    return fuse_hits(dense, lexical, cfg, defined)[:limit]


def fuse_hits(
    dense: Sequence[Hit], lexical: Sequence[Hit], config: HybridConfig, defined: Sequence[Hit] = ()
) -> list[Hit]:
    """The rankings of chunks fused (RRF): dense, lexical and, with a definition weight, the
    chunks defining the question's names; a chunk is known by path and line range."""
    by_key: dict[tuple[str, int, int], Hit] = {}
    for h in [*dense, *lexical, *defined]:
        by_key.setdefault((h.path, h.start_line, h.end_line), h)
    rankings = [[(h.path, h.start_line, h.end_line) for h in hits] for hits in (dense, lexical, defined)]
    fused = fuse(
        rankings,
        [config.dense_weight, config.lexical_weight, config.definition_weight],
        config.rrf_k,
    )
    out = []
    for key, value in fused:
        h = by_key[key]  # type: ignore[index]
        out.append(Hit(h.path, h.start_line, h.end_line, h.text, h.language, value))
    return out


def _passes(c: StoredChunk, path_prefix: str | None, language: str | None) -> bool:
    """The dense side's filters (`VectorIndex.search`): a folder or one file, a language."""
    if language and c.language != language:
        return False
    if path_prefix:
        prefix = path_prefix.strip("/")
        return c.path == prefix or c.path.startswith(prefix + "/")
    return True


def _hit(c: StoredChunk, score: float) -> Hit:
    return Hit(c.path, c.start_line, c.end_line, c.text, c.language, score)
