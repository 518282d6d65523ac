"""File cards as a third vote in hybrid retrieval, scored from the same rankings (issue 15).

For each question the dense and the lexical rankings (50 chunks each) are read once from the
repository index (as `bench_fusion` does), and a third ranking is made from file cards
(`actors.index.cards`: a file's path, module docstring and top-level definitions with their
docstrings' first lines), embedded with the same embedder, files ranked by cosine to the
question. Every variant sees exactly the same inputs:

- `hybrid`: what `ranking="hybrid"` does (chunk-level RRF of dense and lexical);
- `cards`: the card ranking alone;
- `hybrid+cards`: the hybrid file ranking and the card ranking fused by RRF (k=60), weights
  1:1 and 1:0.5;
- `dense+lexical+cards`: the three file rankings fused, 1:1:1.

Prints MRR per set and the mean over all sets but the first (the development set); the time
to build and embed each package's cards goes to stderr.

    CHORUS_RAY_ADDRESS=local .venv/bin/python -m tests.bench.bench_cards \\
        tests/bench/eval/codeqa_eventsourcing.json:.venv/lib/python3.11/site-packages/eventsourcing \\
        tests/bench/eval/retrieval_h11.json:.venv/lib/python3.11/site-packages/h11 ...
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from actors.index.cards import file_card
from actors.index.lexical import fuse
from actors.index.repository import scan
from actors.runtime.registry import Registry
from evals.retrieval import load_questions
from tests.bench.bench_fusion import Key, files, print_mrr, sides

Row = tuple[list[str], list[Key], list[Key], list[str]]  # gold, dense, lexical, cards


def hybrid(d: Sequence[Key], lex: Sequence[Key]) -> list[str]:
    return files([key for key, _ in fuse([d, lex], [1, 1])])  # type: ignore[misc]


def with_cards(ranking: Sequence[str], cards: Sequence[str], weight: float) -> list[str]:
    return [str(key) for key, _ in fuse([ranking, cards], [1, weight])]


VARIANTS: dict[str, Callable[[Sequence[Key], Sequence[Key], Sequence[str]], list[str]]] = {
    "dense": lambda d, lex, c: files(d),
    "lexical": lambda d, lex, c: files(lex),
    "hybrid": lambda d, lex, c: hybrid(d, lex),
    "cards": lambda d, lex, c: list(c),
    "hybrid+cards 1:1": lambda d, lex, c: with_cards(hybrid(d, lex), c, 1.0),
    "hybrid+cards 1:0.5": lambda d, lex, c: with_cards(hybrid(d, lex), c, 0.5),
    "dense+lexical+cards": lambda d, lex, c: [str(k) for k, _ in fuse([files(d), files(lex), list(c)], [1, 1, 1])],
}


def rows(pairs: Sequence[str]) -> dict[str, list[Row]]:
    """bench_fusion's two rankings per question, and the card ranking beside them."""
    embedder = Registry.get_embedder("minilm")
    out = {}
    for pair, (name, two_sides) in zip(pairs, sides(pairs).items(), strict=True):
        questions, root = pair.split(":", 1)
        started = time.perf_counter()
        texts = scan(Path(root).resolve()).texts
        paths = list(texts)
        vectors = np.asarray(embedder.embed([file_card(p, texts[p]) for p in paths]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        card_s = time.perf_counter() - started
        out_rows = []
        for q, (gold, d, lex) in zip(load_questions(questions), two_sides, strict=True):
            qv = np.asarray(embedder.embed([q.q])[0], dtype=np.float32)
            order = np.argsort(-(vectors @ (qv / (np.linalg.norm(qv) + 1e-12))), kind="stable")
            out_rows.append((gold, d, lex, [paths[i] for i in order]))
        out[name] = out_rows
        print(f"{name}: {len(paths)} cards built and embedded in {card_s:.1f}s", file=sys.stderr, flush=True)
    return out


def main(argv: Sequence[str]) -> None:
    print_mrr(rows(argv), VARIANTS)


if __name__ == "__main__":
    main(sys.argv[1:])
