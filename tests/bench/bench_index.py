"""Indexing throughput of the RepositoryIndexer over the installed eventsourcing package,
against its baseline measured in the same run: embedding the same chunks with the same model
and nothing else (no scan, no chunking, no Qdrant). Also the re-index of an unchanged
repository (only hashing), and retrieval figures come from `python -m evals retrieval`.

    .venv/bin/python -m tests.bench.bench_index [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import eventsourcing

    from actors.index.chunking import window_chunks
    from actors.index.indexer import embedded_text, index_repository, text_to_embed
    from actors.index.repository import scan
    from actors.index.vectors import open_index
    from actors.runtime.registry import Registry
    from actors.runtime.settings import Settings

    repo = Path(eventsourcing.__file__).parent
    embedder = Registry.get_embedder("minilm")
    embedder.embed(["warm up"])
    files = scan(repo)
    from actors.index.tokens import count_tokens

    chunks = [c for p, t in files.texts.items() for c in window_chunks(p, t, length=count_tokens, prefix=embedded_text(p, "", ""))]
    rows = []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings.from_env(data_dir=Path(tmp), store_url="memory://")
            order = ("index", "embed") if r % 2 == 0 else ("embed", "index")
            t: dict[str, float] = {}
            for what in order:
                started = time.perf_counter()
                if what == "embed":
                    for i in range(0, len(chunks), 64):
                        embedder.embed([text_to_embed(c) for c in chunks[i : i + 64]])
                else:
                    with open_index(settings) as index:
                        report = index_repository(str(repo), index=index, embed=embedder.embed, dim=embedder.dim, data_dir=settings.data_dir)
                t[what] = time.perf_counter() - started
            started = time.perf_counter()
            with open_index(settings) as index:
                again = index_repository(str(repo), index=index, embed=embedder.embed, dim=embedder.dim, data_dir=settings.data_dir)
            t["reindex"] = time.perf_counter() - started
            assert again.files_unchanged == report.files and again.chunks_embedded == 0
            rows.append((t, report))
            print(f"round {r + 1}: index {t['index']:.1f}s, embed only {t['embed']:.1f}s, unchanged re-index {t['reindex']:.2f}s", flush=True)
    report = rows[0][1]
    ratio = statistics.median(t["embed"] / t["index"] for t, _ in rows)
    index_s = statistics.median(t["index"] for t, _ in rows)
    reindex_s = statistics.median(t["reindex"] for t, _ in rows)
    print()
    print("| repository | files | chunks | index time | files/s | chunks/s | speed vs embedding alone | unchanged re-index |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| eventsourcing {version('eventsourcing')} | {report.files} | {report.chunks} | {index_s:.1f}s | "
        f"{report.files / index_s:.2f} | {report.chunks / index_s:.1f} | {ratio:.2f} | {reindex_s:.2f}s |"
    )


if __name__ == "__main__":
    main()
