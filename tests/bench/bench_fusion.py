"""Fusion variants of hybrid retrieval, scored from the two sides' own rankings (issue 15).

For each question the dense and the lexical rankings (50 chunks each) are read once from the
repository index; each variant then fuses them without touching the index again, so all
variants see exactly the same inputs. `chunk-rrf` is what `ranking="hybrid"` does (it
reproduces `python -m evals retrieval`'s hybrid figures); `file-rrf` fuses the two sides' file
rankings instead of their chunks; `k=10` and `l1.5` change RRF's constant and the lexical
weight. The `convex` variants fuse the two sides' *scores* instead of their ranks (Bruch et
al., "An Analysis of Fusion Functions for Hybrid Retrieval"): each side's scores over its 50
chunks are normalised (min-max, or `tm2c2`: from the score's theoretical minimum, -1 for a
cosine and 0 for BM25, to the list's maximum; or `z`: standard scores), a chunk scores
0.5 * dense + 0.5 * lexical (a side that did not return it gives its minimum), and a file
its best chunk. Prints MRR per set and the mean over all sets but the first (the development
set).

    CHORUS_RAY_ADDRESS=local .venv/bin/python -m tests.bench.bench_fusion \\
        tests/bench/eval/codeqa_eventsourcing.json:.venv/lib/python3.11/site-packages/eventsourcing \\
        tests/bench/eval/retrieval_h11.json:.venv/lib/python3.11/site-packages/h11 ...

`--save FILE` keeps what was read from the indexes (gold, and both sides' chunks and scores)
as JSON, and `--load FILE` scores the variants from such a file without indexing anything.
A question set may also be one of the grounded agent's sets (`agent_*_heldout.json`): a
question's gold file is then the file of its `where`.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from actors.index.hybrid import search_index
from actors.index.lexical import fuse
from actors.index.vectors import open_index
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings
from evals.retrieval import EvalError, Question, _prepare, load_questions, reciprocal_rank

Key = tuple[str, int, int]
Scored = Sequence[tuple[Key, float]]


def files(keys: Sequence[Key]) -> list[str]:
    return list(dict.fromkeys(k[0] for k in keys))


def chunk_rrf(d: Sequence[Key], lex: Sequence[Key], wd: float = 1, wl: float = 1, k: int = 60) -> list[str]:
    return files([key for key, _ in fuse([d, lex], [wd, wl], k)])  # type: ignore[misc]


def file_rrf(d: Sequence[Key], lex: Sequence[Key], wd: float = 1, wl: float = 1, k: int = 60) -> list[str]:
    return [str(key) for key, _ in fuse([files(d), files(lex)], [wd, wl], k)]


def _normalised(scored: Scored, how: str, floor: float) -> dict[Key, float]:
    values = [s for _, s in scored]
    if not values:
        return {}
    if how == "z":
        mean, spread = statistics.fmean(values), statistics.pstdev(values) or 1.0
        return {k: (s - mean) / spread for k, s in scored}
    low = floor if how == "tm2c2" else min(values)
    span = (max(values) - low) or 1.0
    return {k: (s - low) / span for k, s in scored}


def convex(d: Scored, lex: Scored, how: str, alpha: float = 0.5) -> list[str]:
    """Chunks scored alpha * dense + (1 - alpha) * lexical, each side normalised `how`; a file
    ranked by its best chunk."""
    nd, nl = _normalised(d, how, -1.0), _normalised(lex, how, 0.0)
    dmin, lmin = min(nd.values(), default=0.0), min(nl.values(), default=0.0)
    total = {k: alpha * nd.get(k, dmin) + (1 - alpha) * nl.get(k, lmin) for k in {**nd, **nl}}
    return files(sorted(total, key=lambda k: -total[k]))


def _keys(scored: Scored) -> list[Key]:
    return [k for k, _ in scored]


RANKED: dict[str, Callable[[Sequence[Key], Sequence[Key]], list[str]]] = {
    "dense": lambda d, lex: files(d),
    "lexical": lambda d, lex: files(lex),
    "chunk-rrf (hybrid)": chunk_rrf,
    "chunk-rrf k=10": lambda d, lex: chunk_rrf(d, lex, k=10),
    "chunk-rrf l1.5": lambda d, lex: chunk_rrf(d, lex, 1, 1.5),
    "file-rrf": file_rrf,
    "file-rrf k=10": lambda d, lex: file_rrf(d, lex, k=10),
    "file-rrf l1.5": lambda d, lex: file_rrf(d, lex, 1, 1.5),
}
VARIANTS: dict[str, Callable[[Scored, Scored], list[str]]] = {
    **{name: (lambda f: lambda d, lex: f(_keys(d), _keys(lex)))(f) for name, f in RANKED.items()},
    "convex min-max": lambda d, lex: convex(d, lex, "min-max"),
    "convex tm2c2": lambda d, lex: convex(d, lex, "tm2c2"),
    "convex z": lambda d, lex: convex(d, lex, "z"),
}


def questions_of(path: str) -> list[Question]:
    """A retrieval set, or a grounded agent's set whose `where` gives each gold file."""
    data = json.loads(Path(path).read_text()) if Path(path).is_file() else None
    items = data.get("questions") if isinstance(data, dict) else None
    if items and all(isinstance(i, dict) and "gold" not in i and i.get("where") for i in items):
        return [Question(i["q"], (i["where"].rpartition(":")[0] or i["where"],)) for i in items]
    return load_questions(path)


def sides(pairs: Sequence[str]) -> dict[str, list[tuple[list[str], list, list]]]:
    settings = Settings.from_env()
    embedder = Registry.get_embedder("minilm")
    out = {}
    sets = []
    for pair in pairs:  # every set and folder checked before anything is indexed
        questions, _, root = pair.partition(":")
        if not Path(root).is_dir():
            raise SystemExit(f"{pair}: expected QUESTIONS.json:FOLDER, and {root or '(none)'} is not a folder")
        try:
            sets.append((questions, root, questions_of(questions)))
        except EvalError as e:
            raise SystemExit(f"{pair}: {e}") from None
    for questions, root, asked in sets:
        collection = _prepare(Path(root).resolve(), settings, embedder, headers=False, lexical=True, log=None)
        rows = []
        for q in asked:
            with open_index(settings) as index:
                d = search_index(index, collection, q.q, embed=embedder.embed, ranking="dense", limit=50)
                lex = search_index(index, collection, q.q, ranking="lexical", limit=50)
            rows.append((list(q.gold), [((h.path, h.start_line, h.end_line), h.score) for h in d],
                         [((h.path, h.start_line, h.end_line), h.score) for h in lex]))
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


def load(path: str) -> dict[str, list[tuple]]:
    """What `--save` wrote: each set's rows of (gold, dense, lexical) with their scores."""
    def side(pairs: list) -> list[tuple[Key, float]]:
        return [(tuple(k), s) for k, s in pairs]  # type: ignore[misc]
    try:
        saved = json.loads(Path(path).read_text())
        return {n: [(g, side(d), side(lex)) for g, d, lex in rows] for n, rows in saved.items()}
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise SystemExit(f"--load {path}: not a file --save wrote ({type(e).__name__}: {e})") from None


def main(argv: Sequence[str]) -> None:
    args = list(argv)
    save = load_from = None
    if "--save" in args:
        i = args.index("--save")
        save, args = args[i + 1], args[:i] + args[i + 2:]
    if "--load" in args:
        i = args.index("--load")
        load_from, args = args[i + 1], args[:i] + args[i + 2:]
    data = load(load_from) if load_from else sides(args)
    if save:
        Path(save).write_text(json.dumps(data))
    print_mrr(data, VARIANTS)


if __name__ == "__main__":
    main(sys.argv[1:])
