"""`python -m evals retrieval QUESTIONS.json --root PATH`: recall@1/5/10 and MRR of the
retrieval methods side by side, measured in one run (evals/retrieval.py).

    keyword            occurrences of the question's terms per file (seed 003's search_keyword)
    embedding          plain vector search over the repository's Qdrant index (built if needed)
    lexical            BM25 over the same chunks, code-aware tokens (actors/index/lexical.py)
    hybrid             embedding and lexical fused by reciprocal rank fusion (actors/index/hybrid.py)
    hybrid-defs        as hybrid, with a third ranking fused in: the chunks that define a code name
                       the question gives (actors/index/names.py)
    embedding-headers  as embedding, chunks embedded with their class/function header
    hybrid-headers     as hybrid, over the chunks embedded with headers (a second collection)
    rerank-llm         hybrid-headers, its top 5 files reordered by the LLM from their chunk headers
                       (actors/index/rerank.py), one call per question
    hyde               seed 003's semantic_file_search: HyDE answer → keywords → chunks → cosine;
                       it calls the configured LLM (the local model unless CHORUS_LLM_BASE_URL is set)
    hybrid-hyde        semantic_file_search(ranking="hybrid-hyde"): hybrid, and HyDE (fused in) only for
                       questions where hybrid looks weak (actors/codeqa/hyde.py FallbackRule); the run
                       says how often HyDE ran

Indexing and building the lexical view are timed apart from the questions (stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from evals.retrieval import (
    LLM_METHODS,
    METHODS,
    load_questions,
    rankers,
    score,
    table,
)
from actors.runtime.cli_dialect import add_root
from actors.runtime.embeddings import embedder_from_settings
from actors.runtime.errors import UserError
from actors.runtime.llm.providers import provider_and_server
from actors.runtime.settings import Settings
from actors.runtime.tool_context import ToolContext


def add_parser(sub: Any) -> None:
    """`retrieval` under `python -m evals`."""
    r = sub.add_parser("retrieval", help="recall@1/5/10 and MRR of each retrieval method")
    r.add_argument("questions", type=Path, metavar="FILE", help='JSON: {"questions": [{"q": ..., "gold": [path, ...]}]}')
    add_root(r, "the repository the gold paths are relative to", old="--repo", dest="repo", type=Path)
    r.add_argument(
        "--methods", default="keyword,embedding,hybrid,hyde",
        help=f"comma-separated, of: {', '.join(METHODS)} (default: keyword,embedding,hybrid,hyde)",
    )
    r.add_argument("--misses", action="store_true", help="list the questions each method missed")
    r.set_defaults(func=cmd_eval_retrieval)


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    if getattr(args, "repo", None) is None:
        raise UserError("give --root DIR: the repository the gold paths are relative to")
    questions = load_questions(args.questions)
    repo = args.repo.expanduser().resolve()
    if not repo.is_dir():
        raise UserError(f"repository {args.repo} does not exist or is not a folder")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    settings = Settings.from_env()
    embedder = embedder_from_settings(settings)
    context, server = None, None
    if any(m in LLM_METHODS for m in methods):
        context, server = _llm_context(settings, embedder)
    try:
        scores = []
        def log(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

        for name, ranker in rankers(methods, repo, settings, embedder, context, log=log).items():
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            scores.append(score(name, ranker, questions))
    finally:
        if server is not None:
            server.stop()
    print(table(scores, len(questions)))
    for s in scores:
        if s.note:
            print(f"  {s.method}: {s.note}")
    if args.misses:
        for s in scores:
            for q in s.misses:
                print(f"  {s.method} missed: {q}")
    return 0


def _llm_context(settings: Any, embedder: Any) -> tuple[Any, Any]:
    """A ToolContext on the configured endpoint (the embedded server started if needed)."""
    provider, server = provider_and_server(settings)
    return ToolContext(run_id="eval", tool="semantic_file_search", settings=settings, provider=provider, embedder=embedder), server
