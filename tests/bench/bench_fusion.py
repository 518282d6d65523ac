"""Fusion variants of hybrid retrieval, scored from the two sides' own rankings (issue 15).

For each question the dense and the lexical rankings (50 chunks each) are read once from the
repository index; each variant then fuses them without touching the index again, so all
variants see exactly the same inputs. `chunk-rrf` is what `ranking="hybrid"` does (it
reproduces `chorus eval retrieval`'s hybrid figures); `file-rrf` fuses the two sides' file
rankings instead of their chunks; `k=10` and `l1.5` change RRF's constant and the lexical
weight. Prints MRR per set and the mean over all sets but the first (the development set).

    CHORUS_RAY_ADDRESS=local .venv/bin/python -m tests.bench.bench_fusion \\
        ../shared/eval/codeqa_eventsourcing.json:.venv/lib/python3.11/site-packages/eventsourcing \\
        tests/bench/eval/retrieval_h11.json:.venv/lib/python3.11/site-packages/h11 ...
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from actors.codeqa.evaluation import EvalError, _prepare, load_questions, reciprocal_rank
from actors.index.hybrid import search_index
from actors.index.lexical import fuse
from actors.index.vectors import open_index
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings

Key = tuple[str, int, int]


def files(keys: Sequence[Key]) -> list[str]:
    return list(dict.fromkeys(k[0] for k in keys))


def chunk_rrf(d: Sequence[Key], lex: Sequence[Key], wd: float = 1, wl: float = 1, k: int = 60) -> list[str]:
    return files([key for key, _ in fuse([d, lex], [wd, wl], k)])  # type: ignore[misc]


def file_rrf(d: Sequence[Key], lex: Sequence[Key], wd: float = 1, wl: float = 1, k: int = 60) -> list[str]:
    return [str(key) for key, _ in fuse([files(d), files(lex)], [wd, wl], k)]


VARIANTS: dict[str, Callable[[Sequence[Key], Sequence[Key]], list[str]]] = {
    "dense": lambda d, lex: files(d),
    "lexical": lambda d, lex: files(lex),
    "chunk-rrf (hybrid)": chunk_rrf,
    "chunk-rrf k=10": lambda d, lex: chunk_rrf(d, lex, k=10),
    "chunk-rrf l1.5": lambda d, lex: chunk_rrf(d, lex, 1, 1.5),
    "file-rrf": file_rrf,
    "file-rrf k=10": lambda d, lex: file_rrf(d, lex, k=10),
    "file-rrf l1.5": lambda d, lex: file_rrf(d, lex, 1, 1.5),
}


def sides(pairs: Sequence[str]) -> dict[str, list[tuple[list[str], list[Key], list[Key]]]]:
    settings = Settings.from_env()
    embedder = Registry.get_embedder("minilm")
    out = {}
    sets = []
    for pair in pairs:  # every set and folder checked before anything is indexed
        questions, _, root = pair.partition(":")
        if not Path(root).is_dir():
            raise SystemExit(f"{pair}: expected QUESTIONS.json:FOLDER, and {root or '(none)'} is not a folder")
        try:
            sets.append((questions, root, load_questions(questions)))
        except EvalError as e:
            raise SystemExit(f"{pair}: {e}") from None
    for questions, root, asked in sets:
        collection = _prepare(Path(root).resolve(), settings, embedder, headers=False, lexical=True, log=None)
        rows = []
        for q in asked:
            with open_index(settings) as index:
                d = search_index(index, collection, q.q, embed=embedder.embed, ranking="dense", limit=50)
                lex = search_index(index, collection, q.q, ranking="lexical", limit=50)
            rows.append((list(q.gold), [(h.path, h.start_line, h.end_line) for h in d],
                         [(h.path, h.start_line, h.end_line) for h in lex]))
        out[Path(questions).stem.removeprefix("retrieval_")] = rows
        print(f"{Path(questions).stem}: {len(rows)} questions", file=sys.stderr)
    return out


def print_mrr(data: dict[str, list[tuple]], variants: dict[str, Callable[..., list[str]]]) -> None:
    """A markdown table of each variant's MRR per set, each row of `data` being (gold, *rankings)
    and each variant ranking files from the rankings; the last column is the mean over all
    sets but the first (the development set)."""
    names = list(data)
    print("| variant | " + " | ".join(names) + " | mean (all but the first) |")
    print("|---" * (len(names) + 2) + "|")
    for variant, rank in variants.items():
        mrr = [sum(reciprocal_rank(rank(*row[1:]), row[0]) for row in data[n]) / len(data[n]) for n in names]
        rest = mrr[1:] or mrr
        print(f"| {variant} | " + " | ".join(f"{v:.2f}" for v in mrr) + f" | {sum(rest) / len(rest):.3f} |")


def main(argv: Sequence[str]) -> None:
    print_mrr(sides(argv), VARIANTS)


if __name__ == "__main__":
    main(sys.argv[1:])
