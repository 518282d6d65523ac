"""What the first code question about a repository costs with semantic_file_search's default
ranking, hybrid (issue 15): the first search builds the repository index (every text file
chunked and embedded by MiniLM on the CPU), later ones embed only changed files.

In-process over a fresh data directory and a repositories folder holding a copy of an
installed package (default: starlette, ~36 files). Times, in order: loading MiniLM; the first
search with `repo` (the repository's index is built); a second search with `repo` (nothing to
embed); a search without `repo` (the whole folder is another index, built once too). No model.

    .venv/bin/python -m tests.bench.bench_codeqa_first_search [--package starlette]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from actors.codeqa.config import CodeQaConfig
from actors.codeqa.tools import SemanticFileSearch
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings
from actors.runtime.tool_context import ToolContext

QUESTIONS = ("How are signed session cookies kept?", "Which class serves static files?", "Where are routes matched?")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="starlette", help="an installed package to copy as the repository")
    args = parser.parse_args()
    module = __import__(args.package)
    source = Path(module.__file__).parent
    with tempfile.TemporaryDirectory() as tmp:
        repos = Path(tmp) / "repos"
        shutil.copytree(source, repos / args.package, ignore=shutil.ignore_patterns("__pycache__"))
        files = sum(1 for p in (repos / args.package).rglob("*") if p.is_file())
        started = time.perf_counter()
        embedder = Registry.get_embedder("minilm")
        embedder.embed(["load the model"])
        print(f"{args.package}: {files} files; MiniLM loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        settings = Settings.from_env(data_dir=Path(tmp) / "data", store_url="memory://", vectors="local", qdrant_url=None)
        context = ToolContext(run_id="bench", tool="semantic_file_search", settings=settings, embedder=embedder)
        rows = []
        for what, repo, question in (
            ("first search, repo given (index built)", args.package, QUESTIONS[0]),
            ("second search, repo given", args.package, QUESTIONS[1]),
            ("search without repo (the folder's own index)", "", QUESTIONS[2]),
        ):
            tool = SemanticFileSearch(root=str(repos), context=context, codeqa=CodeQaConfig())
            started = time.perf_counter()
            out = tool.execute(query=question, repo=repo).splitlines()
            seconds = time.perf_counter() - started
            note = out[-1] if out[-1].startswith("(The repository index") else "nothing embedded"
            rows.append(f"| {what} | {seconds:.1f} s | {note} |")
        print("| search | time | index |\n|---|---|---|\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
