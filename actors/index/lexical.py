"""The repository index's lexical side: BM25 (the `bm25s` library) over code-aware tokens of
the very chunks the dense side embeds, and reciprocal rank fusion of the two rankings.

Tokens (`code_tokens`): every identifier whole, lower-cased (dotted names too:
`store.append_events`), and its pieces split on dots, snake_case and camelCase
(`AESCipher` -> `aescipher`, `aes`, `cipher`); a path gives its folders, its file name, and
the file name's stem split the same way. Stop words and one-character pieces are dropped, on
the documents' side and the query's alike.

`LexicalIndex` is built from `(path, embedded text)` pairs — the chunk payloads read back
from the Qdrant collection (`actors.index.hybrid`) — so it holds nothing the collection does
not: it is a derived view, rebuilt whenever the collection's manifest changes, never a
second source of truth. `fuse` is plain reciprocal rank fusion (Cormack et al. 2009) with a
weight per ranking. Everything here is pure apart from `bm25s`' in-memory index.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.tools.search import STOP_WORDS

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
RRF_K = 60  # the constant of reciprocal rank fusion (the paper's value)


def identifier_pieces(identifier: str) -> list[str]:
    """`identifier` whole (lower case), then its pieces: dotted parts, snake_case parts and
    camelCase parts, each once, in order. `HTTPServer.send_json` -> httpserver.send_json,
    httpserver, send_json, http, server, send, json."""
    whole = identifier.strip("._").lower()
    if not whole:
        return []
    out = [whole]
    dotted = [p for p in identifier.split(".") if p.strip("_")]
    words: list[str] = []
    for part in dotted:
        if len(dotted) > 1:
            out.append(part.strip("_").lower())
        snakes = [s for s in part.split("_") if s]
        for snake in snakes:
            if len(snakes) > 1:
                out.append(snake.lower())
            words += [w.lower() for w in _CAMEL.findall(snake)]
    out += words
    seen: set[str] = set()
    return [t for t in out if t and not (t in seen or seen.add(t))]


def code_tokens(text: str) -> list[str]:
    """The BM25 tokens of a text (code, prose or a question): each identifier's pieces
    (`identifier_pieces`), without stop words and one-character pieces."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        out += [t for t in identifier_pieces(ident) if len(t) > 1 and t not in STOP_WORDS]
    return out


def path_tokens(path: str) -> list[str]:
    """A path's folders, file name and stem pieces (`eventsourcing/postgres.py` ->
    eventsourcing, postgres.py, postgres, py)."""
    out: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part:
            out += [t for t in identifier_pieces(part) if len(t) > 1]
    return out


def document_tokens(path: str, text: str) -> list[str]:
    """What one chunk contributes to BM25: its path's tokens and its text's."""
    return path_tokens(path) + code_tokens(text)


@dataclass(frozen=True)
class LexicalHit:
    row: int  # the document's position in the list the index was built from
    score: float


class LexicalIndex:
    """BM25 over documents given once, as `(path, text)`; searched with an optional mask."""

    def __init__(self, documents: Sequence[tuple[str, str]]) -> None:
        import bm25s  # lazily: only the lexical side needs it

        self.size = len(documents)
        self._bm25 = bm25s.BM25()
        tokens = [document_tokens(p, t) or ["\x00empty"] for p, t in documents]
        if tokens:
            self._bm25.index(tokens, show_progress=False)

    def search(self, query: str, *, limit: int = 10, allowed: Sequence[bool] | None = None) -> list[LexicalHit]:
        """The best `limit` documents for `query` with a positive score, best first (ties by
        position); `allowed[i]` False leaves document `i` out (a path or language filter)."""
        import numpy as np  # lazily: bm25s' scores are a numpy array

        terms = code_tokens(query)
        if not terms or not self.size:
            return []
        scores: Any = np.asarray(self._bm25.get_scores(terms), dtype=float)
        if allowed is not None:
            scores = np.where(np.asarray(allowed, dtype=bool), scores, 0.0)
        order = np.lexsort((np.arange(self.size), -scores))
        return [LexicalHit(int(i), float(scores[i])) for i in order[:limit] if scores[i] > 0]


def fuse(rankings: Sequence[Sequence[Hashable]], weights: Sequence[float], k: int = RRF_K) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion: each key scores `sum(weight / (k + rank))` over the rankings
    that hold it (rank from 1); best first, ties in order of first appearance."""
    if len(rankings) != len(weights):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    total: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, 1):
            total[key] = total.get(key, 0.0) + weight / (k + rank)
    first = {key: i for i, key in enumerate(total)}
    return sorted(total.items(), key=lambda kv: (-kv[1], first[kv[0]]))
